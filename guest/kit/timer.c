/* SPDX-License-Identifier: GPL-2.0 */
/*
 * timer.elf: the PIT's interrupt reaches the IOAPIC pin the MADT says it
 * does. The MADT overrides ISA IRQ 0 to GSI 2; Linux programs pin 2 for
 * its timer and only falls back to other wirings when that stays silent.
 *
 * With interrupts disabled, a fired interrupt waits in the LAPIC's IRR, so
 * no IDT is needed: program pin 2 and pin 0 with distinct vectors, start
 * the PIT one-shot, and look at which vector becomes pending.
 */
#include "kit.h"

#define IOAPIC_BASE		0xfec00000UL
#define IOAPIC_REGSEL		0x00
#define IOAPIC_WINDOW		0x10
#define IOAPIC_REDIR(pin)	(0x10 + 2 * (pin))
#define REDIR_MASKED		(1u << 16)

#define LAPIC_IRR		0x200
#define LAPIC_SVR_ENABLE	(1u << 8)

#define PIT_CH0			0x40
#define PIT_CMD			0x43
#define PIT_CH0_ONESHOT		0x30	/* channel 0, lo/hi byte, mode 0 */
#define PIT_HZ			1193182

#define PIC1_DATA		0x21
#define PIC2_DATA		0xa1

#define VEC_PIN2		0x32
#define VEC_PIN0		0x30

static void ioapic_write(unsigned int reg, uint32_t v)
{
	mmio_write32(IOAPIC_BASE + IOAPIC_REGSEL, reg);
	mmio_write32(IOAPIC_BASE + IOAPIC_WINDOW, v);
}

static void ioapic_route(unsigned int pin, uint32_t vector)
{
	ioapic_write(IOAPIC_REDIR(pin) + 1, 0);	/* to APIC ID 0 */
	ioapic_write(IOAPIC_REDIR(pin), vector);	/* fixed, edge, unmasked */
}

static bool irr_pending(unsigned int vector)
{
	return lapic_read(LAPIC_IRR + 0x10 * (vector / 32)) &
	       (1u << (vector % 32));
}

static void pit_oneshot_us(unsigned int us)
{
	unsigned int count = (uint64_t)PIT_HZ * us / 1000000;

	outb(PIT_CMD, PIT_CH0_ONESHOT);
	outb(PIT_CH0, count & 0xff);
	outb(PIT_CH0, count >> 8);
}

KIT_TEST(timer)
{
	uint64_t start;
	bool fired = false;

	/* Only the IOAPIC may deliver: the PICs would use LINT0 instead. */
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
	lapic_write(LAPIC_SVR, LAPIC_SVR_ENABLE | 0xff);
	ioapic_route(2, VEC_PIN2);
	ioapic_route(0, VEC_PIN0);

	pit_oneshot_us(1000);
	start = kit_now_us();
	while (kit_now_us() - start < 200000) {
		if (irr_pending(VEC_PIN2) || irr_pending(VEC_PIN0)) {
			fired = true;
			break;
		}
		cpu_relax();
	}
	kit_check(fired, "the PIT interrupt reached no IOAPIC pin in 200 ms");
	kit_check(!fired || irr_pending(VEC_PIN2),
		  "the PIT interrupt is not on IOAPIC pin 2 (MADT: IRQ0 -> GSI2)");
	kit_check(!irr_pending(VEC_PIN0),
		  "the PIT interrupt also arrived on IOAPIC pin 0");
	kit_printf("PIT -> IOAPIC pin %s\n", irr_pending(VEC_PIN2) ? "2" :
		   irr_pending(VEC_PIN0) ? "0" : "none");
	ioapic_write(IOAPIC_REDIR(2), REDIR_MASKED);
	ioapic_write(IOAPIC_REDIR(0), REDIR_MASKED);
	kit_finish();
}
