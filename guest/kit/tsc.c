/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc.elf: the guest learns its TSC rate without calibrating. lkvm
 * passes KVM's hypervisor leaves on (signature, kvmclock) and adds the
 * timing leaf 0x40000010 (TSC and APIC-bus kHz); kvmclock's pvclock page
 * must agree with that leaf, and both with the TSC measured against the
 * ACPI PM timer (which lkvm runs off the host's clock).
 */
#include "kit.h"

#define HV_BASE			0x40000000
#define HV_FEATURES		0x40000001
#define HV_TIMING		0x40000010
#define KVM_FEATURE_CLOCKSOURCE2	(1u << 3)
#define MSR_KVM_SYSTEM_TIME_NEW	0x4b564d01
#define APIC_BUS_KHZ		1000000

/* The pvclock_vcpu_time_info KVM fills in (Documentation/virt/kvm/x86/msr.rst). */
struct pvclock {
	uint32_t version;
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
} __attribute__((packed));

static struct pvclock clock __attribute__((aligned(64)));

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" :: "c"(msr), "a"((uint32_t)v),
		     "d"((uint32_t)(v >> 32)));
}

/* kHz from kvmclock's scale: ns = ((ticks << shift) * mul) >> 32. */
static uint64_t pvclock_khz(const struct pvclock *c)
{
	uint64_t khz = (1000000ULL << 32) / c->tsc_to_system_mul;

	return c->tsc_shift >= 0 ? khz >> c->tsc_shift : khz << -c->tsc_shift;
}

static uint64_t measured_khz(void)
{
	uint64_t t0, tsc0, t1, tsc1;

	kit_now_us();			/* pick and start the clock */
	t0 = kit_now_us();
	tsc0 = rdtsc();
	do
		t1 = kit_now_us();
	while (t1 - t0 < 50000);
	tsc1 = rdtsc();
	return (tsc1 - tsc0) * 1000 / (t1 - t0);
}

static bool near(uint64_t a, uint64_t b, unsigned int percent)
{
	uint64_t d = a > b ? a - b : b - a;

	return d * 100 <= b * percent;
}

KIT_TEST(tsc)
{
	struct cpuid_regs base = cpuid(HV_BASE, 0), r;
	uint64_t leaf_khz, pv_khz, m_khz;
	char sig[13];

	memcpy(sig, &base.ebx, 4);
	memcpy(sig + 4, &base.ecx, 4);
	memcpy(sig + 8, &base.edx, 4);
	sig[12] = 0;
	kit_check(!strcmp(sig, "KVMKVMKVM"), "hypervisor signature '%s'", sig);
	kit_check(base.eax >= HV_TIMING, "hypervisor leaves end at %#x",
		  base.eax);
	kit_check(cpuid(HV_FEATURES, 0).eax & KVM_FEATURE_CLOCKSOURCE2,
		  "kvmclock not advertised");
	r = cpuid(HV_TIMING, 0);
	leaf_khz = r.eax;
	kit_check(leaf_khz > 0, "timing leaf: no TSC frequency");
	kit_check(r.ebx == APIC_BUS_KHZ, "timing leaf: APIC bus %u kHz",
		  r.ebx);

	wrmsr(MSR_KVM_SYSTEM_TIME_NEW, (uintptr_t)&clock | 1);
	/* KVM fills the page on the next entry: take one. */
	outb(0x80, 0);
	barrier();
	kit_check(clock.version && !(clock.version & 1) &&
		  clock.tsc_to_system_mul, "kvmclock page not filled (version %u)",
		  clock.version);
	pv_khz = clock.tsc_to_system_mul ? pvclock_khz(&clock) : 0;
	wrmsr(MSR_KVM_SYSTEM_TIME_NEW, 0);
	kit_check(near(pv_khz, leaf_khz, 1), "kvmclock says %lu kHz, the leaf %lu",
		  pv_khz, leaf_khz);
	m_khz = measured_khz();
	kit_check(near(m_khz, leaf_khz, 10),
		  "TSC measured at %lu kHz against the PM timer, the leaf says %lu",
		  m_khz, leaf_khz);
	kit_printf("tsc: leaf %lu kHz, kvmclock %lu kHz, measured %lu kHz\n",
		   leaf_khz, pv_khz, m_khz);
	kit_finish();
}
