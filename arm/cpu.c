// SPDX-License-Identifier: GPL-2.0
/*
 * arm64 vCPUs: KVM_ARM_VCPU_INIT with the host's preferred target and
 * in-kernel PSCI 0.2+, so that secondaries start powered off and the
 * guest brings them up with CPU_ON, and SYSTEM_OFF/RESET reach lkvm as
 * system events. The boot vCPU enters the Image as booting.rst says: at
 * EL1 with interrupts masked, x0 the device tree's address, x1-x3 zero.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lkvm/arch.h"
#include "lkvm/arm/arch.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define CORE_REG(field)	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | \
			 KVM_REG_ARM_CORE | \
			 (offsetof(struct kvm_regs, field) / sizeof(uint32_t)))
#define SYS_REG(op0, op1, crn, crm, op2) \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM64_SYSREG | \
	 ((uint64_t)(op0) << KVM_REG_ARM64_SYSREG_OP0_SHIFT) | \
	 ((uint64_t)(op1) << KVM_REG_ARM64_SYSREG_OP1_SHIFT) | \
	 ((uint64_t)(crn) << KVM_REG_ARM64_SYSREG_CRN_SHIFT) | \
	 ((uint64_t)(crm) << KVM_REG_ARM64_SYSREG_CRM_SHIFT) | \
	 ((uint64_t)(op2) << KVM_REG_ARM64_SYSREG_OP2_SHIFT))
#define REG_MPIDR_EL1	SYS_REG(3, 0, 0, 0, 5)
#define REG_ESR_EL1	SYS_REG(3, 0, 5, 2, 0)
#define REG_FAR_EL1	SYS_REG(3, 0, 6, 0, 0)
#define REG_VBAR_EL1	SYS_REG(3, 0, 12, 0, 0)
#define REG_SCTLR_EL1	SYS_REG(3, 0, 1, 0, 0)
#define MPIDR_AFF_MASK	0xff00ffffffULL

/* EL1h, D, A, I and F masked: the state booting.rst asks for */
#define PSTATE_BOOT	(PSR_MODE_EL1h | PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | \
			 PSR_F_BIT)

static int set_reg(struct vcpu *vcpu, uint64_t id, uint64_t val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)&val };

	if (ioctl(vcpu->fd, KVM_SET_ONE_REG, &r) < 0) {
		pr_err("vCPU %u: KVM_SET_ONE_REG %#llx: %s", vcpu->id,
		       (unsigned long long)id, strerror(errno));
		return -1;
	}
	return 0;
}

static int get_reg(struct vcpu *vcpu, uint64_t id, uint64_t *val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)val };

	return ioctl(vcpu->fd, KVM_GET_ONE_REG, &r);
}

static int vcpu_kvm_init(struct vcpu *vcpu)
{
	struct kvm_vcpu_init init;

	if (ioctl(vcpu->vm->vm_fd, KVM_ARM_PREFERRED_TARGET, &init) < 0) {
		pr_err("KVM_ARM_PREFERRED_TARGET: %s", strerror(errno));
		return -1;
	}
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (vcpu->id)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF;
	if (ioctl(vcpu->fd, KVM_ARM_VCPU_INIT, &init) < 0) {
		pr_err("vCPU %u: KVM_ARM_VCPU_INIT: %s", vcpu->id,
		       strerror(errno));
		return -1;
	}
	return 0;
}

static int vcpu_boot_regs(struct vcpu *vcpu)
{
	const struct arch_vm *arch = vcpu->vm->arch;

	if (set_reg(vcpu, CORE_REG(regs.pstate), PSTATE_BOOT) ||
	    set_reg(vcpu, CORE_REG(regs.regs[0]), arch->boot.dtb) ||
	    set_reg(vcpu, CORE_REG(regs.regs[1]), 0) ||
	    set_reg(vcpu, CORE_REG(regs.regs[2]), 0) ||
	    set_reg(vcpu, CORE_REG(regs.regs[3]), 0) ||
	    set_reg(vcpu, CORE_REG(regs.pc), arch->boot.kernel))
		return -1;
	return 0;
}

/*
 * The last vCPU made completes the vGIC, which can be initialised only
 * once it knows every vCPU; the devices' irqfds come after that. The
 * device tree names the MPIDRs read here (arch_load_guest).
 */
int arch_vcpu_init(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;
	struct arch_vm *arch = vm->arch;

	if (vcpu_kvm_init(vcpu))
		return -1;
	if (get_reg(vcpu, REG_MPIDR_EL1, &arch->mpidr[vcpu->id]) < 0) {
		pr_err("vCPU %u: cannot read its MPIDR: %s", vcpu->id,
		       strerror(errno));
		return -1;
	}
	arch->mpidr[vcpu->id] &= MPIDR_AFF_MASK;
	if (vcpu->id + 1 < vm->nr_vcpus)
		return 0;
	return arm_gic_finalize(vm);
}

/* Secondaries stay off until the guest's PSCI CPU_ON. */
int arch_vcpu_boot(struct vcpu *vcpu)
{
	return vcpu->id ? 0 : vcpu_boot_regs(vcpu);
}

static const char *el_name(uint64_t pstate)
{
	switch (pstate & PSR_MODE_MASK) {
	case PSR_MODE_EL0t: return "EL0";
	case PSR_MODE_EL1t: return "EL1t";
	case PSR_MODE_EL1h: return "EL1h";
	case PSR_MODE_EL2t: return "EL2t";
	case PSR_MODE_EL2h: return "EL2h";
	default: return "?";
	}
}

void arch_vcpu_where(struct vcpu *vcpu, char *buf, size_t size)
{
	struct kvm_mp_state mp = { 0 };
	uint64_t pc = 0, pstate = 0;

	if (get_reg(vcpu, CORE_REG(regs.pc), &pc) < 0 ||
	    get_reg(vcpu, CORE_REG(regs.pstate), &pstate) < 0) {
		snprintf(buf, size, "registers unreadable: %s", strerror(errno));
		return;
	}
	ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp);
	snprintf(buf, size, "pc %#llx (%s), interrupts %s, %s",
		 (unsigned long long)pc, el_name(pstate),
		 pstate & PSR_I_BIT ? "masked" : "on",
		 mp.mp_state == KVM_MP_STATE_STOPPED ? "powered off" : "running");
}

void arch_vcpu_dump(struct vcpu *vcpu, FILE *f)
{
	static const struct { const char *name; uint64_t id; } sys[] = {
		{ "sp_el1", CORE_REG(sp_el1) },
		{ "elr_el1", CORE_REG(elr_el1) },
		{ "sctlr_el1", REG_SCTLR_EL1 },
		{ "vbar_el1", REG_VBAR_EL1 },
		{ "esr_el1", REG_ESR_EL1 },
		{ "far_el1", REG_FAR_EL1 },
		{ "mpidr_el1", REG_MPIDR_EL1 },
	};
	uint64_t v;
	unsigned int i;

	for (i = 0; i < 31; i++) {
		if (get_reg(vcpu, CORE_REG(regs.regs[i]), &v) < 0)
			break;
		fprintf(f, "x%-2u %016llx%s", i, (unsigned long long)v,
			i % 4 == 3 || i == 30 ? "\n" : "  ");
	}
	if (!get_reg(vcpu, CORE_REG(regs.sp), &v))
		fprintf(f, "sp  %016llx  ", (unsigned long long)v);
	if (!get_reg(vcpu, CORE_REG(regs.pc), &v))
		fprintf(f, "pc  %016llx  ", (unsigned long long)v);
	if (!get_reg(vcpu, CORE_REG(regs.pstate), &v))
		fprintf(f, "pstate %08llx (%s)\n", (unsigned long long)v,
			el_name(v));
	for (i = 0; i < ARRAY_SIZE(sys); i++)
		if (!get_reg(vcpu, sys[i].id, &v))
			fprintf(f, "%s %016llx\n", sys[i].name,
				(unsigned long long)v);
}

/*
 * x86 tells its guest's kvmclock that it was paused, so that the guest's
 * watchdogs forgive the gap; an arm64 guest keeps time with the
 * architected counter and has no such paravirtual clock to tell.
 */
void arch_vcpu_paused(struct vcpu *vcpu)
{
	(void)vcpu;
}
