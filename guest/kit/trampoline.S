/* SPDX-License-Identifier: GPL-2.0 */
/*
 * AP start-up trampoline. kit_ap_start() copies this blob to
 * KIT_TRAMPOLINE_ADDR (below 1 MiB, page aligned) and sends SIPI vector
 * KIT_TRAMPOLINE_ADDR >> 12, so the AP starts here in real mode with
 * CS:IP = 0x0800:0000. It climbs to 64-bit mode on the BSP's page tables,
 * takes its stack and arguments from the data block at the end, acknowledges
 * so the BSP may reuse the block for the next AP, and calls the C entry.
 * All addresses are computed as KIT_TRAMPOLINE_ADDR + offset because the
 * code runs at the copy, not where it was linked.
 */

#define TRAMP		0x8000
#define OFF(x)		((x) - kit_trampoline_start)
#define ABS(x)		(TRAMP + OFF(x))

#define SEL_CODE32	0x08
#define SEL_DATA	0x10
#define SEL_CODE64	0x18

#include "paging.h"

	.section .rodata.trampoline, "a"
	.balign 16
	.globl kit_trampoline_start, kit_trampoline_end, kit_trampoline_data
	.code16
kit_trampoline_start:
	cli
	cld
	movw %cs, %ax
	movw %ax, %ds
	lgdtl OFF(tr_gdt_desc)
	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmpl $SEL_CODE32, $ABS(tr_32)

	.code32
tr_32:
	load_data_segments SEL_DATA
	/* no blanks: a gas macro argument ends at one */
	paging_on (TRAMP+tr_cr3-kit_trampoline_start)
	ljmp $SEL_CODE64, $ABS(tr_64)

	.code64
tr_64:
	movq ABS(tr_stack), %rsp
	movl ABS(tr_idx), %edi
	movq ABS(tr_fn), %rsi
	movq ABS(tr_arg), %rdx
	movq ABS(tr_entry), %rax
	movl $1, ABS(tr_ack)
	call *%rax
1:	cli
	hlt
	jmp 1b

	.balign 16
tr_gdt:
	.quad 0
	.quad 0x00cf9b000000ffff
	.quad 0x00cf93000000ffff
	.quad 0x00af9b000000ffff
tr_gdt_end:
	.balign 8
tr_gdt_desc:
	.word tr_gdt_end - tr_gdt - 1
	.long ABS(tr_gdt)

	/* Must match struct kit_tramp_data in ap.c. */
	.balign 8
kit_trampoline_data:
tr_cr3:		.quad 0
tr_stack:	.quad 0
tr_entry:	.quad 0
tr_fn:		.quad 0
tr_arg:		.quad 0
tr_idx:		.long 0
tr_ack:		.long 0
kit_trampoline_end:
