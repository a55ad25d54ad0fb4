/* SPDX-License-Identifier: GPL-2.0 */
/*
 * quick.elf: a guest that ends the VM with status 0 as its very first
 * action, without the kit runtime. It is what the boot benchmark launches:
 * with almost no guest instructions to emulate, what it measures is the
 * VMM's own cost to start, run and tear down a VM.
 */
#define PORT_DEBUG_EXIT		0x501
#define XEN_ELFNOTE_PHYS32_ENTRY	18

	.section .note.Xen, "a"
	.balign 4
	.long 4				/* name size */
	.long 4				/* descriptor size */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.long quick_start

	.section .text.start, "ax"
	.code32
	.globl _start
_start:
quick_start:
	mov	$PORT_DEBUG_EXIT, %dx
	xor	%eax, %eax
	outb	%al, %dx
1:	hlt
	jmp	1b
