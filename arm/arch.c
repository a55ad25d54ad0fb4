// SPDX-License-Identifier: GPL-2.0
/*
 * The arm64 board behind the arch interface: RAM from 1 GiB, the
 * in-kernel GIC, a 16550 on MMIO, virtio-mmio slots, and the Image boot
 * protocol (Documentation/arch/arm64/booting.rst) with a device tree in
 * place of the PC's firmware tables. The map is in lkvm/arm/layout.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libfdt.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/boot_profile.h"
#include "lkvm/arm/arch.h"
#include "lkvm/arm/fdt.h"
#include "lkvm/arm/image.h"
#include "lkvm/arm/layout.h"
#include "lkvm/file_map.h"
#include "lkvm/hw.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

/* booting.rst's ceiling for the tree, and all of its own 2 MiB block */
#define ARM_DTB_MAX	(2ULL << 20)

/* What the user gave, opened and checked before /dev/kvm is. */
struct arch_guest {
	struct mapped_file image, initrd;
	struct arm64_image hdr;
	int dtb_fd;		/* --dump-dtb's file, or -1 */
};

struct arch_guest *arch_guest_open(const struct vm_config *cfg)
{
	struct arch_guest *g = calloc(1, sizeof(*g));
	struct arm64_boot_layout l;

	if (!g) {
		pr_err("out of memory");
		return NULL;
	}
	g->dtb_fd = -1;
	if (cfg->firmware) {
		pr_err("-f: lkvm boots arm64 guests from an Image (-k), not firmware");
		goto fail;
	}
	if (cfg->transport == VIRTIO_TRANSPORT_PCI_LEGACY) {
		pr_err("--virtio-transport pci-legacy: legacy virtio-pci needs PCI I/O space, which the arm64 board lacks; use pci or mmio");
		goto fail;
	}
	if (map_file(cfg->kernel, "kernel", &g->image) ||
	    arm64_image_parse(g->image.data, g->image.size, cfg->kernel,
			      &g->hdr) ||
	    (cfg->initrd && map_file(cfg->initrd, "initrd", &g->initrd)))
		goto fail;
	/* too big for -m is the user's to know before anything starts */
	if (arm64_boot_layout(&g->hdr, g->image.size, ARM_RAM_BASE,
			      cfg->mem_mib * MiB, ARM_DTB_MAX,
			      g->initrd.size, &l))
		goto fail;
	/*
	 * Made before anything heavy, so a bad path fails the run here, but
	 * after the kernel's checks: a kernel that is refused leaves no file.
	 */
	if (cfg->dump_dtb) {
		g->dtb_fd = open(cfg->dump_dtb,
				 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (g->dtb_fd < 0) {
			pr_err("--dump-dtb '%s': %s", cfg->dump_dtb,
			       strerror(errno));
			goto fail;
		}
	}
	return g;
fail:
	arch_guest_close(g);
	return NULL;
}

void arch_guest_close(struct arch_guest *g)
{
	if (!g)
		return;
	unmap_file(&g->image);
	unmap_file(&g->initrd);
	if (g->dtb_fd >= 0)
		close(g->dtb_fd);
	free(g);
}

static int dump_dtb(int fd, const void *dtb, const char *path)
{
	size_t size = fdt_totalsize(dtb);

	if (write_all(fd, dtb, size) < 0) {
		pr_err("--dump-dtb '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Written with the guest, after the vCPUs told their MPIDRs and every
 * virtio-mmio device was made: it names them all.
 */
static int arm_write_fdt(struct vm *vm, int dump_fd)
{
	const struct vm_config *cfg = vm->cfg;
	struct arch_vm *arch = vm->arch;
	struct arm_fdt_mmio mmio[ARM_FDT_MAX_MMIO];
	struct arm_fdt_config c = {
		.ram_base = ARM_RAM_BASE,
		.ram_size = cfg->mem_mib * MiB,
		.nr_cpus = vm->nr_vcpus,
		.mpidr = arch->mpidr,
		.gic_version = arch->gic_version,
		.bootargs = cfg->params ? cfg->params : arch_default_params,
		.initrd_start = arch->boot.initrd,
		.initrd_size = arch->initrd_size,
		.nr_mmio = vm->nr_mmio_devs,
		.mmio = mmio,
	};
	void *dtb = guest_mem_ptr(&vm->mem, arch->boot.dtb, ARM_DTB_MAX);
	unsigned int i;

	for (i = 0; i < vm->nr_mmio_devs && i < ARM_FDT_MAX_MMIO; i++)
		mmio[i] = (struct arm_fdt_mmio) {
			.base = vm->mmio_devs[i].base,
			.size = vm->mmio_devs[i].size,
			.spi = vm->mmio_devs[i].gsi,
		};
	if (!dtb) {
		pr_err("guest RAM has no room for the device tree");
		return -1;
	}
	if (arm_fdt_build(dtb, ARM_DTB_MAX, &c))
		return -1;
	return dump_fd >= 0 ? dump_dtb(dump_fd, dtb, cfg->dump_dtb) : 0;
}

int arch_load_guest(struct vm *vm, const struct arch_guest *g)
{
	struct arch_vm *arch = vm->arch;

	if (arm64_boot_layout(&g->hdr, g->image.size, ARM_RAM_BASE,
			      vm->cfg->mem_mib * MiB, ARM_DTB_MAX,
			      g->initrd.size, &arch->boot))
		return -1;
	if (!guest_mem_load(&vm->mem, arch->boot.kernel, g->image.data,
			    g->image.size) ||
	    (g->initrd.size &&
	     !guest_mem_load(&vm->mem, arch->boot.initrd, g->initrd.data,
			     g->initrd.size))) {
		pr_err("the kernel and initrd do not fit in guest RAM");
		return -1;
	}
	arch->initrd_size = g->initrd.size;
	return arm_write_fdt(vm, g->dtb_fd);
}

int arch_vm_init(struct vm *vm)
{
	struct arch_vm *arch = vm_zalloc(vm, sizeof(*arch));

	if (!arch)
		return -1;
	vm->arch = arch;
	arch->gic_version = vm->cfg->irqchip == VM_IRQCHIP_GICV2 ? 2 : 3;
	arch->mpidr = vm_zalloc(vm, vm->nr_vcpus * sizeof(*arch->mpidr));
	if (!arch->mpidr)
		return -1;
	return arm_gic_create(vm);
}

void arch_vm_exit(struct vm *vm)
{
	if (vm->arch)
		arm_gic_close(vm->arch);
}

/*
 * The board's own devices: the UART, the debug-exit and boot-marker
 * bytes lkvm's guest init writes, and the PCI host bridge's ECAM. A guest
 * powers off and reboots through PSCI, which KVM turns into system events.
 */
int arch_devices_init(struct vm *vm)
{
	if (serial_init(vm, &vm->mmio, ARM_UART_BASE, ARM_SPI_UART) ||
	    debug_exit_init(vm, &vm->mmio, ARM_DEBUG_EXIT_BASE) ||
	    boot_marker_init(vm, &vm->mmio, ARM_BOOT_MARKER_BASE) ||
	    pci_ecam_init(vm, ARM_PCI_ECAM_BASE, ARM_PCI_ECAM_SIZE))
		return -1;
	return 0;
}

/* arm64 has no software KVM like kvm_pvm: a /dev/kvm here is hardware. */
int arch_kvm_is_software(int kvm_fd)
{
	(void)kvm_fd;
	return 0;
}
