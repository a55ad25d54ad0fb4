/* SPDX-License-Identifier: GPL-2.0 */
/*
 * guest/init/init inside lkvm itself: what lkvm sandbox boots into. The
 * Makefile names this arch's build of it in GUEST_INIT.
 */
	.section .rodata
	.balign 16
	.globl sandbox_init_start, sandbox_init_end
sandbox_init_start:
	.incbin GUEST_INIT
sandbox_init_end:
	.section .note.GNU-stack, "", @progbits
