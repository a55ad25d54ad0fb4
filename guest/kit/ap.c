/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest-kit AP start-up: copies the real-mode trampoline below 1 MiB, fills
 * its data block (page tables, stack, what to run) and wakes one AP at a
 * time with INIT-SIPI-SIPI through the local APIC's ICR.
 */
#include "kit.h"

#define AP_STACK_SIZE	16384

#define ICR_INIT	0x00000500
#define ICR_STARTUP	0x00000600
#define ICR_ASSERT	0x00004000
#define ICR_BUSY	0x00001000
#define SVR_ENABLE	0x00000100

/* trampoline.S computes its absolute addresses from this constant. */
_Static_assert(KIT_TRAMPOLINE_ADDR == 0x8000, "trampoline.S assumes 0x8000");

/* Mirrors the block at the end of trampoline.S. */
struct kit_tramp_data {
	uint64_t cr3;
	uint64_t stack;
	uint64_t entry;
	uint64_t fn;
	uint64_t arg;
	uint32_t idx;
	uint32_t ack;
};

extern char kit_trampoline_start[], kit_trampoline_end[];
extern char kit_trampoline_data[];

static volatile struct kit_tramp_data *tramp_data(void)
{
	return kit_phys(KIT_TRAMPOLINE_ADDR +
			(kit_trampoline_data - kit_trampoline_start));
}

void kit_ap_entry(unsigned int idx, kit_ap_fn fn, void *arg);
void kit_ap_entry(unsigned int idx, kit_ap_fn fn, void *arg)
{
	kit_load_idt();
	fn(idx, arg);
}

static bool icr_wait_idle(void)
{
	for (int i = 0; i < 100000; i++) {
		if (!(lapic_read(LAPIC_ICR_LO) & ICR_BUSY))
			return true;
		cpu_relax();
	}
	return false;
}

static void send_ipi(uint32_t apic_id, uint32_t lo)
{
	icr_wait_idle();
	lapic_write(LAPIC_ICR_HI, apic_id << 24);
	lapic_write(LAPIC_ICR_LO, lo);
	icr_wait_idle();
}

int kit_ap_start(uint32_t apic_id, kit_ap_fn fn, unsigned int idx, void *arg,
		 uint64_t timeout_us)
{
	static bool copied;
	volatile struct kit_tramp_data *d = tramp_data();
	uint8_t vector = KIT_TRAMPOLINE_ADDR >> 12;
	uint64_t cr3, deadline;
	char *stack;

	if (apic_id > 0xff)
		return -1;	/* xAPIC ICR cannot address it */
	if (!copied) {
		/* It must fit the page below lkvm's boot page tables. */
		if (kit_trampoline_end - kit_trampoline_start > 4096)
			return -1;
		memcpy(kit_phys(KIT_TRAMPOLINE_ADDR), kit_trampoline_start,
		       kit_trampoline_end - kit_trampoline_start);
		copied = true;
	}
	stack = kit_malloc(AP_STACK_SIZE);
	if (!stack)
		return -1;

	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	d->cr3 = cr3;
	d->stack = (uintptr_t)stack + AP_STACK_SIZE;
	d->entry = (uintptr_t)kit_ap_entry;
	d->fn = (uintptr_t)fn;
	d->arg = (uintptr_t)arg;
	d->idx = idx;
	d->ack = 0;
	barrier();

	if (!(lapic_read(LAPIC_SVR) & SVR_ENABLE))
		lapic_write(LAPIC_SVR, SVR_ENABLE | 0xff);

	/* The SDM's sequence: INIT, 10 ms, SIPI, 200 us, SIPI. */
	send_ipi(apic_id, ICR_INIT | ICR_ASSERT);
	kit_udelay(10000);
	send_ipi(apic_id, ICR_STARTUP | ICR_ASSERT | vector);
	kit_udelay(200);
	if (!d->ack)
		send_ipi(apic_id, ICR_STARTUP | ICR_ASSERT | vector);

	deadline = kit_now_us() + timeout_us;
	while (!d->ack) {
		if (kit_now_us() > deadline)
			return -1;
		cpu_relax();
	}
	return 0;
}
