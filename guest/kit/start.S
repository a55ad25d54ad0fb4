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

#define CR0_PE		(1 << 0)
#define CR0_PG		(1 << 31)
#define CR4_PAE		(1 << 5)
#define MSR_EFER	0xc0000080
#define EFER_LME	(1 << 8)

#define PTE_P		0x001
#define PTE_RW		0x002
#define PTE_PWT		0x008
#define PTE_PCD		0x010
#define PTE_PS		0x080

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
	movl $SEL_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl %eax, %fs
	movl %eax, %gs
	movl $kit_stack_top, %esp

	/* A loader may leave memsz beyond filesz dirty; bss is kept small. */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	shrl $2, %ecx
	xorl %eax, %eax
	rep stosl

	movl $kit_pml4, %eax
	movl %eax, %cr3
	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	orl $(CR0_PG | CR0_PE), %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $long_mode

	.code64
long_mode:
	movl $SEL_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl %eax, %fs
	movl %eax, %gs
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

	/*
	 * Page tables built by the assembler rather than by loops: every guest
	 * instruction is expensive on a software KVM, data is free. The top
	 * GiB (MMIO hole, IOAPIC, LAPIC) is mapped uncached.
	 */
	.section .data.pagetables, "aw"
	.balign 4096
	.globl kit_pml4
kit_pml4:
	.quad kit_pdpt + PTE_P + PTE_RW
	.fill 511, 8, 0
kit_pdpt:
	.quad kit_pd + 0x0000 + PTE_P + PTE_RW
	.quad kit_pd + 0x1000 + PTE_P + PTE_RW
	.quad kit_pd + 0x2000 + PTE_P + PTE_RW
	.quad kit_pd + 0x3000 + PTE_P + PTE_RW
	.fill 508, 8, 0
kit_pd:
	.set pde, 0
	.rept 2048
	.if pde >= 1536
	.quad (pde << 21) + PTE_P + PTE_RW + PTE_PS + PTE_PWT + PTE_PCD
	.else
	.quad (pde << 21) + PTE_P + PTE_RW + PTE_PS
	.endif
	.set pde, pde + 1
	.endr

	.section .stack, "aw", @nobits
	.balign 16
	.space 16384
	.globl kit_stack_top
kit_stack_top:
