/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For assembler sources only (guest/kit/start.S, the peer guests): the
 * x86 long-mode set-up facts, and the one set of page tables every test
 * guest uses, built by the assembler rather than by loops (every guest
 * instruction is expensive on a software KVM; data is free): the low
 * 4 GiB identity-mapped with 2 MiB pages, the top GiB (MMIO hole, IOAPIC,
 * LAPIC) uncached.
 */
#ifndef KIT_PAGING_H
#define KIT_PAGING_H

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

/*
 * paging_on CR3: CR3 from the operand (say $table, or a memory word), PAE,
 * EFER.LME, then paging and protection on: the CPU is in long mode
 * (compatibility) once the caller's next far jump lands on a 64-bit code
 * segment. Clobbers eax, ecx, edx.
 */
.macro paging_on cr3
	movl \cr3, %eax
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
.endm

/*
 * load_data_segments SEL: every data segment register, SEL (64-bit mode
 * ignores most of it, but the loads must name a valid descriptor).
 */
.macro load_data_segments sel
	movl $\sel, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl %eax, %fs
	movl %eax, %gs
.endm

/* identity_map_4g PML4, PDPT, PD: the tables, page aligned, here. */
.macro identity_map_4g pml4, pdpt, pd
	.balign 4096
\pml4:
	.quad \pdpt + PTE_P + PTE_RW
	.fill 511, 8, 0
\pdpt:
	.quad \pd + 0x0000 + PTE_P + PTE_RW
	.quad \pd + 0x1000 + PTE_P + PTE_RW
	.quad \pd + 0x2000 + PTE_P + PTE_RW
	.quad \pd + 0x3000 + PTE_P + PTE_RW
	.fill 508, 8, 0
\pd:
	.set pde, 0
	.rept 2048
	.if pde >= 1536
	.quad (pde << 21) + PTE_P + PTE_RW + PTE_PS + PTE_PWT + PTE_PCD
	.else
	.quad (pde << 21) + PTE_P + PTE_RW + PTE_PS
	.endif
	.set pde, pde + 1
	.endr
.endm

#endif
