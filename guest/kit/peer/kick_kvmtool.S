/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kick_kvmtool.bin, entry and timed loops: a flat binary for kvmtool.
 *
 * kvmtool loads a kernel that is not a bzImage "as a flat binary" at
 * 0x1000:0000 (linear 0x10000) and starts the boot vCPU there in real mode
 * with CS = DS = ES = SS = 0x1000, IP = 0, SP = 0x8000 (x86/kvm.c
 * load_flat_binary, x86/kvm-cpu.c kvm_cpu__setup_regs). This switches
 * straight from real mode to 64-bit mode on identity-mapped 2 MiB pages
 * covering the first 4 GiB (kvmtool's PCI MMIO BARs live at 0xd2000000+),
 * then calls kick_main(). The image is linked at 0x10000 (kick_kvmtool.ld).
 *
 * The two timed loops are written here, instruction for instruction the
 * loops that gcc makes of guest/kit/kick.c in kick.elf, so that the same
 * number of guest instructions surround each notify: on a software KVM that
 * emulates every instruction, the loop shape is part of the figure.
 */

#define SEL_CODE64	0x08
#define SEL_DATA	0x10

#include "../paging.h"

#define LOAD_ADDR	0x10000

	.section .text.entry, "ax"
	.code16
	.globl _start
_start:
	cli
	cld
	/* DS = 0x1000: the operand is an offset from the load address. */
	lgdtl kt_gdt_desc - LOAD_ADDR
	paging_on $kt_pml4
	/* Real mode straight to long mode: a 32-bit far jump to a 64-bit CS. */
	ljmpl $SEL_CODE64, $long_mode

	.code64
long_mode:
	load_data_segments SEL_DATA
	movq $kt_stack_top, %rsp
	/* kvmtool's guest RAM is a fresh anonymous mapping, but clear anyway. */
	movq $__bss_start, %rdi
	movq $__bss_end, %rcx
	subq %rdi, %rcx
	shrq $3, %rcx
	xorl %eax, %eax
	rep stosq
	call kick_main
	/* kick_main ends the VM; should it return, fault the CPU. */
	jmp kt_triple_fault

/*
 * void kt_kick_loop(uint64_t n, uint16_t port, uintptr_t mmio, int pio)
 * n: a multiple of 16. pio: write port with outw, else 16-bit store to mmio.
 *
 * kick.elf's loop (gcc -O2 of kick.c), with BL = "legacy":
 *	mov $16,%ecx; jmp 2f
 * 1:	out %ax,(%dx); sub $1,%ecx; je 3f
 * 2:	test %bl,%bl; jne 1b
 *	mov $0xe0000050,%edi; movl $0,(%rdi); sub $1,%ecx; jne 2b
 * 3:	add $16,%rsi; cmp %r12,%rsi; jb <top>
 * The MMIO store here is a movw (kvmtool's ioeventfd is 2 bytes wide, and
 * datamatch 0: Linux's vp_notify does iowrite16(queue index)).
 */
	.macro kick_loop name, out, store
	.globl \name
\name:
	pushq %rbx
	pushq %r12
	movq %rdi, %r12
	movl %ecx, %ebx
	movq %rdx, %r8
	movl %esi, %edx
	xorl %esi, %esi
	xorl %eax, %eax
	testq %r12, %r12
	je 4f
	.balign 8
0:	movl $16, %ecx
	jmp 2f
1:	\out
	subl $1, %ecx
	je 3f
2:	testb %bl, %bl
	jne 1b
	movq %r8, %rdi
	\store
	subl $1, %ecx
	jne 2b
3:	addq $16, %rsi
	cmpq %r12, %rsi
	jb 0b
4:	popq %r12
	popq %rbx
	ret
	.endm

	.text
	kick_loop kt_kick_loop, "outw %ax, (%dx)", "movw $0, (%rdi)"
/*
 * kt_kick_loop32: the same with 4-byte writes, which kvmtool's 2-byte
 * ioeventfds do not match: every kick exits to kvmtool's vCPU thread,
 * whose handler reads the low 16 bits (queue 0) and calls notify_vq.
 */
	kick_loop kt_kick_loop32, "outl %eax, (%dx)", "movl $0, (%rdi)"

/*
 * void kt_empty_loop(uint64_t n): kick.elf's empty loop, "sink = u":
 * 0:	xor %eax,%eax
 * 1:	mov %eax,0xc(%rsp); add $1,%eax; cmp $16,%eax; jne 1b
 *	add $16,%rcx; cmp %r12,%rcx; jb 0b
 */
	.globl kt_empty_loop
kt_empty_loop:
	subq $24, %rsp
	xorl %ecx, %ecx
	testq %rdi, %rdi
	je 2f
	.balign 8
0:	xorl %eax, %eax
1:	movl %eax, 0xc(%rsp)
	addl $1, %eax
	cmpl $16, %eax
	jne 1b
	addq $16, %rcx
	cmpq %rdi, %rcx
	jb 0b
2:	addq $24, %rsp
	ret

/*
 * An empty IDT and an exception: a triple fault, which ends kvmtool's vCPU
 * loop (KVM_EXIT_SHUTDOWN; kvm_pvm reports KVM_EXIT_INTERNAL_ERROR).
 */
	.globl kt_triple_fault
kt_triple_fault:
	lidt kt_null_idt_desc
	int3
3:	cli
	hlt
	jmp 3b

	.section .data.boot, "aw"
	.balign 16
kt_gdt:
	.quad 0
	.quad 0x00af9b000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf93000000ffff	/* 0x10: data, flat */
kt_gdt_end:
	.balign 8
kt_gdt_desc:
	.word kt_gdt_end - kt_gdt - 1
	.long kt_gdt
	.balign 8
kt_null_idt_desc:
	.word 0
	.quad 0

	/* Built by the assembler: guest instructions are dear, data is free. */
	.section .data.pagetables, "aw"
	identity_map_4g kt_pml4, kt_pdpt, kt_pd

	.section .stack, "aw", @nobits
	.balign 16
	.space 16384
	.globl kt_stack_top
kt_stack_top:
