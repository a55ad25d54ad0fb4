/* SPDX-License-Identifier: GPL-2.0 */
/*
 * count.elf: the running VM that lkvm's management commands act on. It
 * prints "count N" every interval_us (default 20 ms), so that a pause shows
 * as a count that stops and a resume as one that goes on from where it
 * was; it watches COM1's receiver, saying "break" for a BREAK (LSR.BI with
 * its 0 byte) and "sysrq K" for the key that follows one, and ends with
 * status 0 on a 'q'. After count_limit counts (default 3000) it fails:
 * nobody came to stop it.
 */
#include "kit.h"

#define UART_RBR	0
#define UART_LSR	5
#define LSR_DR		0x01
#define LSR_BI		0x10

static bool after_break;

/* Returns true when the console asked the guest to quit. */
static bool read_console(void)
{
	uint8_t lsr = inb(KIT_PORT_COM1 + UART_LSR);
	uint8_t c;

	if (!(lsr & LSR_DR))
		return false;
	c = inb(KIT_PORT_COM1 + UART_RBR);
	if (lsr & LSR_BI) {
		kit_check(c == 0, "a BREAK's byte is 0, got 0x%x", c);
		kit_printf("break\n");
		after_break = true;
	} else if (after_break) {
		kit_printf("sysrq %c\n", c);
		after_break = false;
	} else if (c == 'q') {
		return true;
	}
	return false;
}

KIT_TEST(count)
{
	uint64_t limit = kit_cmdline_u64("count_limit", 3000);
	uint64_t interval = kit_cmdline_u64("interval_us", 20000);
	uint64_t n;

	for (n = 0; n < limit; n++) {
		uint64_t end = kit_now_us() + interval;

		kit_printf("count %llu\n", (unsigned long long)n);
		do {
			if (read_console()) {
				kit_printf("quit at %llu\n", (unsigned long long)n);
				kit_finish();
			}
		} while (kit_now_us() < end);
	}
	kit_fail("nobody stopped it within %llu counts", (unsigned long long)limit);
	kit_finish();
}
