// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel interrupt controller, made with KVM_CREATE_DEVICE
 * (Documentation/virt/kvm/devices/arm-vgic-v3.rst, arm-vgic.rst,
 * arm-vgic-its.rst): a GICv3 with one redistributor per vCPU and an ITS
 * for MSIs, or a GICv2 for hosts and guests that want one.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lkvm/arm/arch.h"
#include "lkvm/arm/layout.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

static int gic_attr(int fd, uint32_t group, uint64_t attr, void *val,
		    const char *what)
{
	struct kvm_device_attr a = {
		.group = group, .attr = attr, .addr = (uint64_t)(uintptr_t)val,
	};

	if (ioctl(fd, KVM_SET_DEVICE_ATTR, &a) < 0) {
		pr_err("vGIC: cannot set %s: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

static int gic_device(struct vm *vm, uint32_t type, const char *what)
{
	struct kvm_create_device cd = { .type = type };

	if (ioctl(vm->vm_fd, KVM_CREATE_DEVICE, &cd) < 0) {
		pr_err("this KVM cannot make a %s: %s", what, strerror(errno));
		return -1;
	}
	return cd.fd;
}

static int gic_v3_create(struct vm *vm, struct arch_vm *arch)
{
	uint64_t dist = ARM_GIC_DIST_BASE, redist = ARM_GIC_REDIST_BASE;
	uint64_t its = ARM_GIC_ITS_BASE;

	arch->gic_fd = gic_device(vm, KVM_DEV_TYPE_ARM_VGIC_V3,
				  "GICv3 (try --irqchip gicv2)");
	if (arch->gic_fd < 0 ||
	    gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
		     KVM_VGIC_V3_ADDR_TYPE_DIST, &dist, "distributor") ||
	    gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
		     KVM_VGIC_V3_ADDR_TYPE_REDIST, &redist, "redistributors"))
		return -1;
	/* virtio-pci's MSI-X goes through the ITS; without one, INTx */
	arch->its_fd = gic_device(vm, KVM_DEV_TYPE_ARM_VGIC_ITS, "GICv3 ITS");
	if (arch->its_fd < 0)
		return -1;
	return gic_attr(arch->its_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			KVM_VGIC_ITS_ADDR_TYPE, &its, "ITS");
}

static int gic_v2_create(struct vm *vm, struct arch_vm *arch)
{
	uint64_t dist = ARM_GIC_DIST_BASE, cpu = ARM_GIC_CPU_BASE;

	arch->gic_fd = gic_device(vm, KVM_DEV_TYPE_ARM_VGIC_V2,
				  "GICv2 (a GICv3 host without GICv2 emulation: try --irqchip gicv3)");
	if (arch->gic_fd < 0 ||
	    gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
		     KVM_VGIC_V2_ADDR_TYPE_DIST, &dist, "distributor") ||
	    gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
		     KVM_VGIC_V2_ADDR_TYPE_CPU, &cpu, "CPU interface"))
		return -1;
	return 0;
}

int arm_gic_create(struct vm *vm)
{
	struct arch_vm *arch = vm->arch;
	uint32_t nr_irqs = 32 + ARM_NR_SPIS;
	unsigned int max = arch->gic_version == 3 ? ARM_MAX_VCPUS_GICV3
						  : ARM_MAX_VCPUS_GICV2;

	arch->gic_fd = arch->its_fd = -1;
	if (vm->nr_vcpus > max) {
		pr_err("-c %u: a GICv%u VM has at most %u vCPUs",
		       vm->nr_vcpus, arch->gic_version, max);
		return -1;
	}
	if (arch->gic_version == 3 ? gic_v3_create(vm, arch)
				   : gic_v2_create(vm, arch))
		return -1;
	return gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0,
			&nr_irqs, "its number of interrupts");
}

int arm_gic_finalize(struct vm *vm)
{
	struct arch_vm *arch = vm->arch;

	if (gic_attr(arch->gic_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
		     KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "it up"))
		return -1;
	if (arch->its_fd >= 0 &&
	    gic_attr(arch->its_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
		     KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "the ITS up"))
		return -1;
	return 0;
}

void arm_gic_close(struct arch_vm *arch)
{
	if (arch->its_fd >= 0)
		close(arch->its_fd);
	if (arch->gic_fd >= 0)
		close(arch->gic_fd);
	arch->its_fd = arch->gic_fd = -1;
}
