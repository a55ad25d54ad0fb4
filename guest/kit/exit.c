/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exit.elf: the smallest end-to-end guest. It proves the PVH entry, the
 * console and the debug-exit device: prints a greeting and ends the VM
 * with the status given as status=N on the command line (default 0).
 */
#include "kit.h"

KIT_TEST(exit)
{
	uint64_t status = kit_cmdline_u64("status", 0);

	kit_printf("hello from the guest kit\n");
	kit_printf("cmdline: \"%s\"\n", kit_cmdline());
	kit_printf("exiting with status %lu\n", status & 0xff);
	kit_exit(status & 0xff);
}
