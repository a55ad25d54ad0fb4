/* SPDX-License-Identifier: GPL-2.0 */
/* guest/init/init inside lkvm itself: what lkvm sandbox boots into. */
	.section .rodata
	.balign 16
	.globl sandbox_init_start, sandbox_init_end
sandbox_init_start:
	.incbin "guest/init/init"
sandbox_init_end:
	.section .note.GNU-stack, "", @progbits
