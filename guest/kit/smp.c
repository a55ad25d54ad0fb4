/* SPDX-License-Identifier: GPL-2.0 */
/*
 * smp.elf: brings up every processor the MADT lists with INIT-SIPI-SIPI and
 * has each one describe itself: initial APIC ID (CPUID 1), x2APIC ID (CPUID
 * 0xB), the LAPIC ID register, IA32_APIC_BASE and the topology leaves. The
 * BSP then checks the count against cpus=N, that the IDs are unique, agree
 * with each other and with the MADT, and that the topology leaves are
 * consistent across CPUs and with the IDs actually in use.
 */
#include "kit.h"

#define MSR_APIC_BASE		0x1b
#define APIC_BASE_BSP		(1u << 8)
#define APIC_BASE_X2APIC	(1u << 10)
#define APIC_BASE_ENABLE	(1u << 11)

#define AP_TIMEOUT_US		2000000

struct cpu_info {
	volatile uint32_t done;
	uint32_t madt_id;
	uint32_t init_id;		/* CPUID.1:EBX[31:24] */
	uint32_t lapic_id;
	uint32_t x2apic_id;		/* CPUID.0xB:EDX, if the leaf exists */
	uint32_t leaf1_ebx, leaf1_edx;
	uint32_t leaf4_eax;
	bool has_leafb;
	uint32_t smt_shift, smt_count, core_shift, core_count;
	uint64_t apic_base;
};

static struct cpu_info cpus[KIT_MAX_CPUS];

static void describe_self(unsigned int idx, void *arg)
{
	struct cpu_info *c = &cpus[idx];
	uint32_t max_leaf = cpuid(0, 0).eax;
	struct cpuid_regs r = cpuid(1, 0);

	c->leaf1_ebx = r.ebx;
	c->leaf1_edx = r.edx;
	c->init_id = r.ebx >> 24;
	c->lapic_id = lapic_id();
	c->apic_base = rdmsr(MSR_APIC_BASE);
	if (max_leaf >= 4)
		c->leaf4_eax = cpuid(4, 0).eax;
	if (max_leaf >= 0xb && cpuid(0xb, 0).ebx) {
		c->has_leafb = true;
		for (uint32_t sub = 0; sub < 8; sub++) {
			struct cpuid_regs t = cpuid(0xb, sub);
			uint32_t type = (t.ecx >> 8) & 0xff;

			if (!type)
				break;
			if (sub == 0)
				c->x2apic_id = t.edx;
			if (type == 1) {
				c->smt_shift = t.eax & 0x1f;
				c->smt_count = t.ebx & 0xffff;
			} else if (type == 2) {
				c->core_shift = t.eax & 0x1f;
				c->core_count = t.ebx & 0xffff;
			}
		}
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

static unsigned int ceil_log2(unsigned int n)
{
	unsigned int s = 0;

	while ((1u << s) < n)
		s++;
	return s;
}

/* How many of the n CPUs share cpu i's ID once shifted right by shift. */
static unsigned int siblings(unsigned int n, unsigned int i, unsigned int shift)
{
	unsigned int k = 0;

	for (unsigned int j = 0; j < n; j++)
		if ((cpus[j].init_id >> shift) == (cpus[i].init_id >> shift))
			k++;
	return k;
}

static void check_topology(unsigned int n)
{
	const struct cpu_info *b = &cpus[0];
	bool htt = b->leaf1_edx & (1u << 28);
	unsigned int logical = (b->leaf1_ebx >> 16) & 0xff;

	kit_printf("topology: HTT %d, CPUID.1 logical %u, leaf 0xB %s",
		   htt, logical, b->has_leafb ? "yes" : "no");
	if (b->has_leafb)
		kit_printf(" (smt shift %u count %u, core shift %u count %u)",
			   b->smt_shift, b->smt_count, b->core_shift,
			   b->core_count);
	if (b->leaf4_eax & 0x1f)
		kit_printf(", CPUID.4 cores %u", (b->leaf4_eax >> 26) + 1);
	kit_printf("\n");

	for (unsigned int i = 1; i < n; i++) {
		const struct cpu_info *c = &cpus[i];

		kit_check(((c->leaf1_ebx ^ b->leaf1_ebx) & 0x00ff0000) == 0 &&
			  ((c->leaf1_edx ^ b->leaf1_edx) & (1u << 28)) == 0,
			  "cpu %u: CPUID.1 topology differs from the BSP's", i);
		kit_check(c->has_leafb == b->has_leafb &&
			  c->smt_shift == b->smt_shift &&
			  c->smt_count == b->smt_count &&
			  c->core_shift == b->core_shift &&
			  c->core_count == b->core_count,
			  "cpu %u: CPUID.0xB topology differs from the BSP's", i);
		kit_check((c->leaf4_eax >> 26) == (b->leaf4_eax >> 26),
			  "cpu %u: CPUID.4 core count differs from the BSP's", i);
	}

	if (htt) {
		/* Logical IDs of one package fit in 2^ceil(log2(count)). */
		unsigned int shift = ceil_log2(logical);

		kit_check(logical >= 1, "CPUID.1 HTT set with 0 logical CPUs");
		for (unsigned int i = 0; i < n; i++)
			kit_check(siblings(n, i, shift) <= logical,
				  "cpu %u: %u CPUs in its package but CPUID.1 "
				  "allows %u", i, siblings(n, i, shift),
				  logical);
		if (siblings(n, 0, shift) == n)
			kit_check(logical >= n, "CPUID.1 logical count %u < "
				  "%u cpus", logical, n);
	} else {
		for (unsigned int i = 0; i < n; i++)
			kit_check(siblings(n, i, 0) == 1,
				  "cpu %u: HTT clear but its APIC ID is shared",
				  i);
		if (b->has_leafb)
			kit_check(b->core_count <= 1, "HTT clear but CPUID.0xB "
				  "says %u logical CPUs per package",
				  b->core_count);
	}

	if (b->has_leafb && b->core_count) {
		kit_check(b->smt_shift <= b->core_shift &&
			  b->smt_count <= b->core_count,
			  "CPUID.0xB SMT level is wider than the core level");
		kit_check((1u << b->core_shift) >= b->core_count,
			  "CPUID.0xB core shift %u cannot hold %u CPUs",
			  b->core_shift, b->core_count);
		for (unsigned int i = 0; i < n; i++) {
			kit_check(siblings(n, i, b->core_shift) <= b->core_count,
				  "cpu %u: more CPUs share its package than "
				  "CPUID.0xB counts", i);
			kit_check(siblings(n, i, b->smt_shift) <=
				  (b->smt_count ? b->smt_count : 1),
				  "cpu %u: more CPUs share its core than "
				  "CPUID.0xB counts", i);
		}
		if (htt)
			kit_check(logical >= b->core_count,
				  "CPUID.1 logical %u < CPUID.0xB package count "
				  "%u", logical, b->core_count);
	}

	if ((b->leaf4_eax & 0x1f) && htt)
		kit_check((b->leaf4_eax >> 26) + 1 <= (logical ? logical : 1),
			  "CPUID.4 says %u cores but CPUID.1 only %u logical",
			  (b->leaf4_eax >> 26) + 1, logical);
}

KIT_TEST(smp)
{
	uint32_t ids[KIT_MAX_CPUS];
	unsigned int nr_madt, want, n = 0;
	uint32_t bsp_id = lapic_id();
	bool bsp_in_madt = false;

	nr_madt = kit_madt_apic_ids(ids, ARRAY_SIZE(ids));
	want = (unsigned int)kit_cmdline_u64("cpus", nr_madt);
	kit_printf("MADT lists %u cpus, cpus=%u expected, BSP APIC ID %u\n",
		   nr_madt, want, bsp_id);
	kit_check(nr_madt, "no MADT processors");
	kit_check(nr_madt == want, "MADT has %u processors, expected %u",
		  nr_madt, want);
	if (nr_madt > KIT_MAX_CPUS)
		nr_madt = KIT_MAX_CPUS;

	cpus[0].madt_id = bsp_id;
	describe_self(0, NULL);
	n = 1;
	for (unsigned int i = 0; i < nr_madt; i++) {
		if (ids[i] == bsp_id) {
			bsp_in_madt = true;
			continue;
		}
		if (n >= KIT_MAX_CPUS)
			break;
		cpus[n].madt_id = ids[i];
		if (!kit_check(!kit_ap_start(ids[i], describe_self, n, NULL,
					     AP_TIMEOUT_US),
			       "AP with APIC ID %u did not start", ids[i]))
			continue;
		{
			uint64_t deadline = kit_now_us() + AP_TIMEOUT_US;

			while (!__atomic_load_n(&cpus[n].done,
						__ATOMIC_ACQUIRE) &&
			       kit_now_us() < deadline)
				cpu_relax();
		}
		if (kit_check(cpus[n].done, "AP %u never finished", ids[i]))
			n++;
	}
	kit_check(bsp_in_madt, "BSP APIC ID %u is not in the MADT", bsp_id);

	for (unsigned int i = 0; i < n; i++) {
		const struct cpu_info *c = &cpus[i];

		kit_printf("cpu %u: madt %u, cpuid.1 %u, lapic %u", i,
			   c->madt_id, c->init_id, c->lapic_id);
		if (c->has_leafb)
			kit_printf(", x2apic %u", c->x2apic_id);
		kit_printf(", apic base %#lx%s\n", c->apic_base,
			   (c->apic_base & APIC_BASE_BSP) ? " (bsp)" : "");
		kit_check(c->init_id == c->lapic_id,
			  "cpu %u: CPUID.1 APIC ID %u != LAPIC ID %u", i,
			  c->init_id, c->lapic_id);
		kit_check(c->lapic_id == c->madt_id,
			  "cpu %u: LAPIC ID %u != MADT ID %u", i, c->lapic_id,
			  c->madt_id);
		if (c->has_leafb)
			kit_check(c->x2apic_id == c->init_id,
				  "cpu %u: x2APIC ID %u != initial APIC ID %u",
				  i, c->x2apic_id, c->init_id);
		kit_check(!!(c->apic_base & APIC_BASE_BSP) == (i == 0),
			  "cpu %u: IA32_APIC_BASE BSP flag wrong (%#lx)", i,
			  c->apic_base);
		kit_check((c->apic_base & APIC_BASE_ENABLE) &&
			  !(c->apic_base & APIC_BASE_X2APIC) &&
			  (c->apic_base & ~0xfffULL) == KIT_LAPIC_ADDR,
			  "cpu %u: APIC not enabled in xAPIC mode at %#lx "
			  "(%#lx)", i, KIT_LAPIC_ADDR, c->apic_base);
		for (unsigned int j = 0; j < i; j++)
			kit_check(cpus[j].lapic_id != c->lapic_id,
				  "cpus %u and %u share APIC ID %u", j, i,
				  c->lapic_id);
	}
	kit_printf("%u cpus up\n", n);
	kit_check(n == want, "%u cpus came up, expected %u", n, want);
	check_topology(n);
}
