/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spew.elf: floods the console, as a chatty kernel does, for the tests of
 * a host reader that stops (tests/kit/test_console.py). Prints lines=N
 * numbered lines of 64 bytes through its own polite transmitter loop: it
 * waits for THRE (up to patience_ms, default 5000) before each byte and
 * counts the bytes that found the transmitter busy, and those it sent
 * anyway after giving up, then says both and exits with status 0.
 */
#include "cpu.h"
#include "kit.h"

#define COM1_THR	(KIT_PORT_COM1 + 0)
#define COM1_LSR	(KIT_PORT_COM1 + 5)
#define LSR_THRE	0x20
#define LINE_LEN	64

static uint64_t busy, overruns;

static void spew_putc(char c, uint64_t patience_us)
{
	uint64_t start;

	if (!(inb(COM1_LSR) & LSR_THRE)) {
		busy++;
		start = kit_now_us();
		while (!(inb(COM1_LSR) & LSR_THRE)) {
			if (kit_now_us() - start > patience_us) {
				overruns++;
				break;
			}
			cpu_relax();
		}
	}
	outb(COM1_THR, (uint8_t)c);
}

KIT_TEST(spew)
{
	uint64_t lines = kit_cmdline_u64("lines", 1000);
	uint64_t patience_us = kit_cmdline_u64("patience_ms", 5000) * 1000;
	char line[LINE_LEN + 1];

	kit_printf("spew: %lu lines\n", lines);
	for (uint64_t i = 0; i < lines; i++) {
		int n = kit_snprintf(line, sizeof(line), "spew %08lu ", i);

		while (n < LINE_LEN - 1)
			line[n++] = '.';
		line[n++] = '\n';
		for (int j = 0; j < n; j++)
			spew_putc(line[j], patience_us);
	}
	kit_printf("spew done: busy=%lu overruns=%lu\n", busy, overruns);
	kit_exit(0);
}
