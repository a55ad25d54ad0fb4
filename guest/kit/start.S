/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest-kit entry. lkvm (or any PVH loader) enters _start in 32-bit
 * protected mode with paging off and EBX pointing at struct hvm_start_info;
 * this switches to 64-bit mode on identity-mapped 2 MiB pages covering the
 * first 4 GiB, so that RAM, the ACPI tables, the LAPIC and the IOAPIC are
 * all reachable at their physical addresses, then calls kit_main().
 * It also holds the exception stubs that turn a fault into a report rather
 * than a triple fault.
 */

#define XEN_ELFNOTE_PHYS32_ENTRY	18

#define SEL_CODE32	0x08
#define SEL_DATA	0x10
#define SEL_CODE64	0x18

#include "paging.h"

	/* The PVH loader finds the 32-bit entry point through this note. */
	.section .note.Xen, "a"
	.balign 4
	.long 4				/* namesz */
	.long 4				/* descsz */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.long _start

	.section .text.start, "ax"
	.code32
	.globl _start
_start:
	cli
	cld
	/* EBX is the only state we get; ESI survives the bss clearing. */
	movl %ebx, %esi
	lgdt kit_gdt_desc
	ljmp $SEL_CODE32, $1f
1:
	load_data_segments SEL_DATA
	movl $kit_stack_top, %esp

	/* A loader may leave memsz beyond filesz dirty; bss is kept small. */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	shrl $2, %ecx
	xorl %eax, %eax
	rep stosl

	paging_on $kit_pml4
	ljmp $SEL_CODE64, $long_mode

	.code64
long_mode:
	load_data_segments SEL_DATA
	movq $kit_stack_top, %rsp
	movl %esi, %edi			/* zero-extends: the start_info address */
	call kit_main
2:	cli
	hlt
	jmp 2b

/*
 * Exception stubs, 16 bytes apart so that C can find stub n at
 * kit_isr_stubs + 16 * n. Vectors without a CPU error code push a zero so
 * that every frame has the same shape.
 */
	.macro isr vec
	.balign 16
	/* Error code pushed by the CPU for 8, 10-14, 17, 21, 29 and 30. */
	.if (\vec == 8) || ((\vec >= 10) && (\vec <= 14)) || (\vec == 17)
	.elseif (\vec == 21) || (\vec == 29) || (\vec == 30)
	.else
	pushq $0
	.endif
	pushq $\vec
	jmp isr_common
	.endm

	.balign 16
	.globl kit_isr_stubs
kit_isr_stubs:
	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	isr \vec
	.endr
	.irp vec, 16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	isr \vec
	.endr

isr_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, %rdi
	call kit_exception
3:	cli
	hlt
	jmp 3b

	.section .data.boot, "aw"
	.balign 16
	.globl kit_gdt, kit_gdt_desc
kit_gdt:
	.quad 0
	.quad 0x00cf9b000000ffff	/* 0x08: 32-bit code, flat */
	.quad 0x00cf93000000ffff	/* 0x10: data, flat */
	.quad 0x00af9b000000ffff	/* 0x18: 64-bit code */
kit_gdt_end:
	.balign 8
kit_gdt_desc:
	.word kit_gdt_end - kit_gdt - 1
	.quad kit_gdt

	.section .data.pagetables, "aw"
	.globl kit_pml4
	identity_map_4g kit_pml4, kit_pdpt, kit_pd

	.section .stack, "aw", @nobits
	.balign 16
	.space 16384
	.globl kit_stack_top
kit_stack_top:
