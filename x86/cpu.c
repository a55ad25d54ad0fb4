// SPDX-License-Identifier: GPL-2.0
/*
 * Per-vCPU x86 state: CPUID (KVM's supported set with our topology: one
 * socket, one thread per core, APIC ID = vCPU index), the MSRs a kernel
 * expects firmware to have set (MTRRs), the LAPIC's virtual-wire LINT
 * setup, the FPU, and the entry state the boot mode asks for.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lkvm/arch.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/cpu.h"
#include "lkvm/x86/layout.h"

#define CPUID_1_EDX_HTT		(1u << 28)
#define CPUID_1_ECX_HYPERVISOR	(1u << 31)
#define CPUID_80000001_ECX_CMP_LEGACY	(1u << 1)
#define CPUID_80000001_ECX_TOPOEXT	(1u << 22)
#define TOPO_LEVEL_SMT		1
#define TOPO_LEVEL_CORE		2

#define MSR_IA32_MISC_ENABLE	0x1a0
#define MSR_MTRR_PHYS_BASE0	0x200
#define MSR_MTRR_PHYS_MASK0	0x201
#define MSR_MTRR_DEF_TYPE	0x2ff
#define MTRR_ENABLE		(1u << 11)
#define MTRR_TYPE_UC		0
#define MTRR_TYPE_WB		6
#define MISC_ENABLE_FAST_STRING	1

#define APIC_LVT_LINT0		0x350
#define APIC_LVT_LINT1		0x360
#define APIC_MODE_NMI		0x400
#define APIC_MODE_EXTINT	0x700
#define APIC_DELIVERY_MASK	0x700

#define X86_CR0_PE		(1u << 0)
#define X86_CR0_MP		(1u << 1)
#define X86_CR0_ET		(1u << 4)
#define X86_CR0_NE		(1u << 5)
#define X86_CR0_WP		(1u << 16)
#define X86_CR0_PG		(1u << 31)
#define X86_CR4_PAE		(1u << 5)
#define EFER_LME		(1u << 8)
#define EFER_LMA		(1u << 10)
#define X86_EFLAGS_IF		(1u << 9)

/* GDT the VMM builds for the boot CPU; selectors are index * 8. */
#define GDT_CODE64		2
#define GDT_DATA		3
#define GDT_CODE32		4
#define GDT_ENTRIES		5

struct kvm_cpuid2 *x86_get_supported_cpuid(int kvm_fd)
{
	unsigned int nent = 128;

	for (;;) {
		struct kvm_cpuid2 *cpuid;

		cpuid = calloc(1, sizeof(*cpuid) +
				  nent * sizeof(cpuid->entries[0]));
		if (!cpuid) {
			pr_err("out of memory");
			return NULL;
		}
		cpuid->nent = nent;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid) == 0)
			return cpuid;
		free(cpuid);
		if (errno != E2BIG || nent >= 4096) {
			pr_err("KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
			return NULL;
		}
		nent *= 2;
	}
}

static struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c,
					    uint32_t fn, uint32_t index)
{
	uint32_t i;

	for (i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn &&
		    (!(c->entries[i].flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) ||
		     c->entries[i].index == index))
			return &c->entries[i];
	return NULL;
}

static unsigned int order_base_2(unsigned int n)
{
	unsigned int bits = 0;

	while ((1u << bits) < n)
		bits++;
	return bits;
}

static void cpuid_remove(struct kvm_cpuid2 *c, uint32_t fn)
{
	uint32_t i, out = 0;

	for (i = 0; i < c->nent; i++)
		if (c->entries[i].function != fn)
			c->entries[out++] = c->entries[i];
	c->nent = out;
}

/* Leaf 0xb (and 0x1f) topology: SMT level of 1 thread, then N cores. */
static void cpuid_add_topology(struct kvm_cpuid2 *c, uint32_t fn,
			       unsigned int apic_id, unsigned int nr_cpus)
{
	unsigned int core_shift = order_base_2(nr_cpus);
	uint32_t sub;

	cpuid_remove(c, fn);
	for (sub = 0; sub < 3; sub++) {
		struct kvm_cpuid_entry2 *e = &c->entries[c->nent++];

		memset(e, 0, sizeof(*e));
		e->function = fn;
		e->index = sub;
		e->flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
		e->edx = apic_id;
		e->ecx = sub;
		if (sub == 0) {
			e->ebx = 1;
			e->ecx |= TOPO_LEVEL_SMT << 8;
		} else if (sub == 1) {
			e->eax = core_shift;
			e->ebx = nr_cpus;
			e->ecx |= TOPO_LEVEL_CORE << 8;
		}
	}
}

static void cpuid_set_leaf1(struct kvm_cpuid2 *c, unsigned int apic_id,
			    unsigned int nr_cpus)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(c, 1, 0);

	if (!e)
		return;
	e->ebx = (e->ebx & 0x0000ffff) | (apic_id << 24) |
		 (MIN(nr_cpus, 255u) << 16);
	e->ecx |= CPUID_1_ECX_HYPERVISOR;
	if (nr_cpus > 1)
		e->edx |= CPUID_1_EDX_HTT;
	else
		e->edx &= ~CPUID_1_EDX_HTT;
}

/* Intel's cache leaf says how many cores share each cache. */
static void cpuid_set_cache_sharing(struct kvm_cpuid2 *c, unsigned int nr_cpus)
{
	uint32_t i;

	for (i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		unsigned int level = (e->eax >> 5) & 7;
		uint32_t sharing = level >= 3 ? nr_cpus - 1 : 0;

		if (e->function != 4 || !(e->eax & 0x1f))
			continue;
		e->eax &= 0x00003fff;
		e->eax |= (MIN(nr_cpus - 1, 63u) << 26) |
			  (MIN(sharing, 4095u) << 14);
	}
}

/* AMD's view of the same topology: core count and extended APIC IDs. */
static void cpuid_set_amd_topology(struct kvm_cpuid2 *c, unsigned int apic_id,
				   unsigned int nr_cpus)
{
	struct kvm_cpuid_entry2 *e;

	e = cpuid_find(c, 0x80000001, 0);
	if (e) {
		if (nr_cpus > 1)
			e->ecx |= CPUID_80000001_ECX_CMP_LEGACY;
		else
			e->ecx &= ~CPUID_80000001_ECX_CMP_LEGACY;
	}
	e = cpuid_find(c, 0x80000008, 0);
	if (e)
		e->ecx = (e->ecx & ~0xf0ffu) |
			 (order_base_2(nr_cpus) << 12) | (nr_cpus - 1);
	e = cpuid_find(c, 0x8000001e, 0);
	if (e) {
		e->eax = apic_id;
		e->ebx = apic_id & 0xff;	/* core ID; one thread per core */
		e->ecx = 0;			/* node 0, one node */
		e->edx = 0;
	}
}

/*
 * The hypervisor timing leaf (0x40000010, as VMware defined it; KVM
 * guests read it too): the TSC's and the APIC timer's frequencies in kHz,
 * so that a guest neither calibrates its TSC against the PIT nor its
 * APIC timer against the TSC. Linux with kvmclock takes the TSC rate from
 * there; this leaf is for guests without it (and newer kernels read it).
 */
#define CPUID_HV_BASE		0x40000000
#define CPUID_HV_TIMING		0x40000010
#define KVM_APIC_BUS_KHZ	1000000		/* KVM's APIC timer: 1 GHz */

static void cpuid_add_timing(struct kvm_cpuid2 *c, int vcpu_fd)
{
	struct kvm_cpuid_entry2 *e;
	int khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);

	if (khz <= 0 || !cpuid_find(c, CPUID_HV_BASE, 0))
		return;
	cpuid_remove(c, CPUID_HV_TIMING);
	e = &c->entries[c->nent++];
	memset(e, 0, sizeof(*e));
	e->function = CPUID_HV_TIMING;
	e->eax = khz;
	e->ebx = KVM_APIC_BUS_KHZ;
	e = cpuid_find(c, CPUID_HV_BASE, 0);
	e->eax = MAX(e->eax, (uint32_t)CPUID_HV_TIMING);
}

static int vcpu_set_cpuid(struct vcpu *vcpu)
{
	const struct kvm_cpuid2 *base = vcpu->vm->arch->cpuid;
	unsigned int nr = vcpu->vm->nr_vcpus;
	struct kvm_cpuid_entry2 *leaf0;
	struct kvm_cpuid2 *c;
	int ret;

	/* Room for the topology (6) and timing (1) leaves we append. */
	c = calloc(1, sizeof(*c) + (base->nent + 8) * sizeof(c->entries[0]));
	if (!c) {
		pr_err("out of memory");
		return -1;
	}
	memcpy(c, base, sizeof(*c) + base->nent * sizeof(c->entries[0]));
	cpuid_set_leaf1(c, vcpu->id, nr);
	cpuid_set_cache_sharing(c, nr);
	leaf0 = cpuid_find(c, 0, 0);
	if (leaf0 && leaf0->eax >= 0xb)
		cpuid_add_topology(c, 0xb, vcpu->id, nr);
	leaf0 = cpuid_find(c, 0, 0);
	if (leaf0 && leaf0->eax >= 0x1f)
		cpuid_add_topology(c, 0x1f, vcpu->id, nr);
	cpuid_set_amd_topology(c, vcpu->id, nr);
	cpuid_add_timing(c, vcpu->fd);
	ret = ioctl(vcpu->fd, KVM_SET_CPUID2, c);
	free(c);
	if (ret < 0) {
		pr_err("KVM_SET_CPUID2 on vCPU %u: %s", vcpu->id,
		       strerror(errno));
		return -1;
	}
	return 0;
}

unsigned int x86_phys_addr_bits(const struct kvm_cpuid2 *cpuid)
{
	struct kvm_cpuid_entry2 *e;

	e = cpuid_find((struct kvm_cpuid2 *)cpuid, 0x80000008, 0);
	return e && (e->eax & 0xff) >= 32 ? e->eax & 0xff : 36;
}

/*
 * Firmware would leave the MTRRs enabled with RAM write-back and the 32-bit
 * hole uncached; every vCPU gets the same values, or Linux complains that
 * the CPUs disagree.
 */
static int vcpu_set_msrs(struct vcpu *vcpu)
{
	uint64_t phys_mask = (1ULL << x86_phys_addr_bits(vcpu->vm->arch->cpuid)) - 1;
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entries[4];
	} msrs = {
		.hdr.nmsrs = 4,
		.entries = {
			{ .index = MSR_IA32_MISC_ENABLE, .data = MISC_ENABLE_FAST_STRING },
			{ .index = MSR_MTRR_PHYS_BASE0,
			  .data = X86_MMIO_HOLE_START | MTRR_TYPE_UC },
			{ .index = MSR_MTRR_PHYS_MASK0,
			  .data = (~(X86_4G - X86_MMIO_HOLE_START - 1) & phys_mask) |
				  MTRR_ENABLE },
			{ .index = MSR_MTRR_DEF_TYPE,
			  .data = MTRR_ENABLE | MTRR_TYPE_WB },
		},
	};
	int ret = ioctl(vcpu->fd, KVM_SET_MSRS, &msrs);

	if (ret < 0) {
		pr_err("KVM_SET_MSRS on vCPU %u: %s", vcpu->id, strerror(errno));
		return -1;
	}
	if (ret != 4)
		pr_debug("vCPU %u: KVM took %d of 4 boot MSRs", vcpu->id, ret);
	return 0;
}

/* Virtual-wire mode: the PIC's output on LINT0, NMIs on LINT1. */
static int vcpu_set_lapic(struct vcpu *vcpu)
{
	struct kvm_lapic_state lapic;
	uint32_t *lint0 = (uint32_t *)&lapic.regs[APIC_LVT_LINT0];
	uint32_t *lint1 = (uint32_t *)&lapic.regs[APIC_LVT_LINT1];

	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0) {
		pr_err("KVM_GET_LAPIC on vCPU %u: %s", vcpu->id, strerror(errno));
		return -1;
	}
	*lint0 = (*lint0 & ~APIC_DELIVERY_MASK) | APIC_MODE_EXTINT;
	*lint1 = (*lint1 & ~APIC_DELIVERY_MASK) | APIC_MODE_NMI;
	if (ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic) < 0) {
		pr_err("KVM_SET_LAPIC on vCPU %u: %s", vcpu->id, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Start with XCR0 holding every state component KVM supports. KVM
 * recomputes CPUID.(EAX=0xd,ECX=0).EBX (the XSAVE area size for the
 * enabled components) when XCR0 changes, but not for every change the
 * guest makes: seen under nested SVM, Linux's xsetbv from x87-only to its
 * full mask left EBX at the x87/SSE size, and Linux warned "XSAVE
 * consistency problem". With the full mask set here, EBX is right from
 * the start and stays right when the guest writes the same mask.
 */
static int vcpu_set_xcr0(struct vcpu *vcpu)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(vcpu->vm->arch->cpuid, 0xd, 0);
	struct kvm_xcrs xcrs = { .nr_xcrs = 1 };

	if (!e || ioctl(vcpu->vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XCRS) <= 0)
		return 0;
	xcrs.xcrs[0].xcr = 0;
	xcrs.xcrs[0].value = (uint64_t)e->edx << 32 | e->eax;
	if (ioctl(vcpu->fd, KVM_SET_XCRS, &xcrs) < 0) {
		pr_err("KVM_SET_XCRS on vCPU %u: %s", vcpu->id, strerror(errno));
		return -1;
	}
	return 0;
}

static int vcpu_set_fpu(struct vcpu *vcpu)
{
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };

	if (ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0) {
		pr_err("KVM_SET_FPU on vCPU %u: %s", vcpu->id, strerror(errno));
		return -1;
	}
	return 0;
}

static uint64_t gdt_entry(uint16_t flags, uint32_t base, uint32_t limit)
{
	return ((uint64_t)(base & 0xff000000) << 32) |
	       ((uint64_t)(flags & 0xf0ff) << 40) |
	       ((uint64_t)(limit & 0x000f0000) << 32) |
	       ((uint64_t)(base & 0x00ffffff) << 16) |
	       (limit & 0x0000ffff);
}

static struct kvm_segment segment_from_gdt(uint64_t e, unsigned int index)
{
	return (struct kvm_segment) {
		.base = ((e >> 16) & 0xffffff) | (((e >> 56) & 0xff) << 24),
		.limit = (((e >> 48) & 0xf) << 16 | (e & 0xffff)),
		.selector = index * 8,
		.type = (e >> 40) & 0xf,
		.s = (e >> 44) & 1,
		.dpl = (e >> 45) & 3,
		.present = (e >> 47) & 1,
		.avl = (e >> 52) & 1,
		.l = (e >> 53) & 1,
		.db = (e >> 54) & 1,
		.g = (e >> 55) & 1,
	};
}

static void fix_granular_limit(struct kvm_segment *s)
{
	if (s->g)
		s->limit = (s->limit << 12) | 0xfff;
}

/* Write the boot GDT to guest memory and describe it in sregs. */
static int setup_gdt(struct vm *vm, struct kvm_sregs *sregs,
		     unsigned int code_index)
{
	uint64_t gdt[GDT_ENTRIES] = {
		[GDT_CODE64] = gdt_entry(0xa09b, 0, 0xfffff),
		[GDT_DATA] = gdt_entry(0xc093, 0, 0xfffff),
		[GDT_CODE32] = gdt_entry(0xc09b, 0, 0xfffff),
	};
	struct kvm_segment code, data;

	if (!guest_mem_write(&vm->mem, X86_GDT_ADDR, gdt, sizeof(gdt))) {
		pr_err("guest RAM too small for the boot GDT");
		return -1;
	}
	sregs->gdt.base = X86_GDT_ADDR;
	sregs->gdt.limit = sizeof(gdt) - 1;
	code = segment_from_gdt(gdt[code_index], code_index);
	data = segment_from_gdt(gdt[GDT_DATA], GDT_DATA);
	fix_granular_limit(&code);
	fix_granular_limit(&data);
	sregs->cs = code;
	sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss = data;
	return 0;
}

/* Identity map of the low 4 GiB with 2 MiB pages, for the 64-bit entry. */
static int setup_page_tables(struct vm *vm)
{
	uint64_t *pml4 = guest_mem_ptr(&vm->mem, X86_PML4_ADDR, 4096);
	uint64_t *pdpt = guest_mem_ptr(&vm->mem, X86_PDPT_ADDR, 4096);
	uint64_t *pd = guest_mem_ptr(&vm->mem, X86_PD_ADDR, 4 * 4096);
	unsigned int i;

	if (!pml4 || !pdpt || !pd) {
		pr_err("guest RAM too small for the boot page tables");
		return -1;
	}
	memset(pml4, 0, 4096);
	memset(pdpt, 0, 4096);
	pml4[0] = X86_PDPT_ADDR | 0x3;			/* present, writable */
	for (i = 0; i < 4; i++)
		pdpt[i] = (X86_PD_ADDR + i * 4096) | 0x3;
	for (i = 0; i < 4 * 512; i++)
		pd[i] = ((uint64_t)i << 21) | 0x83;	/* present, rw, 2M */
	return 0;
}

static int vcpu_set_entry_state(struct vcpu *vcpu)
{
	struct arch_vm *arch = vcpu->vm->arch;
	struct kvm_regs regs = { .rflags = 0x2, .rip = arch->entry,
				 .rsp = X86_BOOT_STACK };
	struct kvm_sregs sregs;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0) {
		pr_err("KVM_GET_SREGS: %s", strerror(errno));
		return -1;
	}
	if (arch->mode == X86_BOOT_LINUX64) {
		if (setup_gdt(vcpu->vm, &sregs, GDT_CODE64) ||
		    setup_page_tables(vcpu->vm))
			return -1;
		sregs.cr3 = X86_PML4_ADDR;
		sregs.cr4 = X86_CR4_PAE;
		sregs.cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE |
			    X86_CR0_WP | X86_CR0_PG;
		sregs.efer = EFER_LME | EFER_LMA;
		regs.rsi = arch->boot_info;
	} else {
		if (setup_gdt(vcpu->vm, &sregs, GDT_CODE32))
			return -1;
		sregs.cr0 = X86_CR0_PE | X86_CR0_ET;
		sregs.cr4 = 0;
		sregs.efer = 0;
		regs.rbx = arch->boot_info;
	}
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0) {
		pr_err("cannot set the boot vCPU's registers: %s",
		       strerror(errno));
		return -1;
	}
	return 0;
}

int arch_vcpu_init(struct vcpu *vcpu)
{
	if (vcpu_set_cpuid(vcpu) || vcpu_set_msrs(vcpu) ||
	    vcpu_set_lapic(vcpu) || vcpu_set_fpu(vcpu) || vcpu_set_xcr0(vcpu))
		return -1;
	return 0;
}

/*
 * Application processors wait in the kernel for INIT/SIPI; the boot vCPU
 * under firmware starts from the reset state KVM gave it.
 */
int arch_vcpu_boot(struct vcpu *vcpu)
{
	if (vcpu->id != 0 || vcpu->vm->arch->mode == X86_BOOT_FIRMWARE)
		return 0;
	return vcpu_set_entry_state(vcpu);
}

static const char *x86_cpu_mode(const struct kvm_sregs *sregs)
{
	if (!(sregs->cr0 & X86_CR0_PE))
		return "real mode";
	if (sregs->efer & EFER_LMA)
		return sregs->cs.l ? "64-bit" : "compatibility mode";
	return "32-bit";
}

void arch_vcpu_where(struct vcpu *vcpu, char *buf, size_t size)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0) {
		snprintf(buf, size, "registers unreadable: %s", strerror(errno));
		return;
	}
	snprintf(buf, size, "rip 0x%llx (%s, cs 0x%x), rsp 0x%llx, interrupts %s",
		 (unsigned long long)regs.rip, x86_cpu_mode(&sregs),
		 sregs.cs.selector, (unsigned long long)regs.rsp,
		 regs.rflags & X86_EFLAGS_IF ? "on" : "off");
}

static void dump_segment(FILE *f, const char *name, const struct kvm_segment *s)
{
	fprintf(f, "  %-3s %04x base %016llx limit %08x type %x%s%s\n", name,
		s->selector, (unsigned long long)s->base, s->limit, s->type,
		s->l ? " 64-bit" : "", s->present ? "" : " not-present");
}

void arch_vcpu_dump(struct vcpu *vcpu, FILE *f)
{
	struct kvm_sregs sregs;
	struct kvm_regs r;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &r) < 0 ||
	    ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0) {
		fprintf(f, "  registers unreadable: %s\n", strerror(errno));
		return;
	}
	fprintf(f, "  rip %016llx rflags %08llx (%s)\n"
		"  rax %016llx rbx %016llx rcx %016llx rdx %016llx\n"
		"  rsi %016llx rdi %016llx rbp %016llx rsp %016llx\n"
		"  r8  %016llx r9  %016llx r10 %016llx r11 %016llx\n"
		"  r12 %016llx r13 %016llx r14 %016llx r15 %016llx\n"
		"  cr0 %016llx cr2 %016llx cr3 %016llx cr4 %016llx\n"
		"  efer %016llx apic_base %016llx\n",
		(unsigned long long)r.rip, (unsigned long long)r.rflags,
		x86_cpu_mode(&sregs),
		(unsigned long long)r.rax, (unsigned long long)r.rbx,
		(unsigned long long)r.rcx, (unsigned long long)r.rdx,
		(unsigned long long)r.rsi, (unsigned long long)r.rdi,
		(unsigned long long)r.rbp, (unsigned long long)r.rsp,
		(unsigned long long)r.r8, (unsigned long long)r.r9,
		(unsigned long long)r.r10, (unsigned long long)r.r11,
		(unsigned long long)r.r12, (unsigned long long)r.r13,
		(unsigned long long)r.r14, (unsigned long long)r.r15,
		(unsigned long long)sregs.cr0, (unsigned long long)sregs.cr2,
		(unsigned long long)sregs.cr3, (unsigned long long)sregs.cr4,
		(unsigned long long)sregs.efer,
		(unsigned long long)sregs.apic_base);
	dump_segment(f, "cs", &sregs.cs);
	dump_segment(f, "ds", &sregs.ds);
	dump_segment(f, "ss", &sregs.ss);
	dump_segment(f, "tr", &sregs.tr);
	fprintf(f, "  gdt %016llx/%x idt %016llx/%x\n",
		(unsigned long long)sregs.gdt.base, sregs.gdt.limit,
		(unsigned long long)sregs.idt.base, sregs.idt.limit);
}

/*
 * A guest on kvmclock that finds minutes gone at the next tick would
 * report a soft lockup; this flag tells it the host paused it. EINVAL
 * means the guest does not use kvmclock: nothing to tell.
 */
void arch_vcpu_paused(struct vcpu *vcpu)
{
	ioctl(vcpu->fd, KVM_KVMCLOCK_CTRL, 0);
}
