/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fault.elf: ends the VM in one of the abnormal ways a VMM must report
 * distinctly, chosen by mode= on the command line:
 *   exception  a #UD caught by the kit's handler (exit KIT_EXIT_EXCEPTION)
 *   triple     a triple fault: no IDT, then #UD (lkvm: "guest crashed")
 *   reboot     the i8042 CPU-reset command (lkvm: "guest asked to reboot")
 *   panic      a pvpanic "panicked" event on port 0x505
 * Each one is followed by a debug-exit with 0x55 (85) so that a VMM that
 * ignores the event is caught: the test expects anything but 85.
 */
#include "kit.h"

#define FAULT_IGNORED	0x55
#define I8042_CMD	0x64
#define I8042_RESET	0xfe
#define PVPANIC_PORT	0x505
#define PVPANIC_PANICKED 1

static __noreturn void triple_fault(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __packed empty = { 0, 0 };

	asm volatile("lidt %0; ud2" : : "m"(empty));
	__builtin_unreachable();
}

KIT_TEST(fault)
{
	char mode[16] = "exception";

	kit_cmdline_get("mode", mode, sizeof(mode));
	kit_printf("fault mode %s\n", mode);
	if (!strcmp(mode, "exception")) {
		asm volatile("ud2");
	} else if (!strcmp(mode, "triple")) {
		triple_fault();
	} else if (!strcmp(mode, "reboot")) {
		outb(I8042_CMD, I8042_RESET);
	} else if (!strcmp(mode, "panic")) {
		outb(PVPANIC_PORT, PVPANIC_PANICKED);
	} else {
		kit_fail("unknown mode %s", mode);
		kit_finish();
	}
	kit_udelay(100000);
	kit_printf("FAIL: fault mode %s: still running\n", mode);
	kit_exit(FAULT_IGNORED);
}
