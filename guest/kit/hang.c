/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hang.elf: a guest that never ends on its own, so that the VMM's
 * --timeout is what stops it. It halts with interrupts off, costing no
 * guest instructions while it waits.
 */
#include "kit.h"

KIT_TEST(hang)
{
	kit_printf("hanging\n");
	kit_halt_forever();
}
