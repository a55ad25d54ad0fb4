/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest-physical memory map of the x86 PC that lkvm builds. Every fixed
 * address the boot code, firmware tables and devices agree on lives here.
 */
#ifndef LKVM_X86_LAYOUT_H
#define LKVM_X86_LAYOUT_H

/* Low memory, below the 640 KiB line. */
#define X86_GDT_ADDR		0x00000500ULL
#define X86_PVH_START_INFO	0x00006000ULL	/* hvm_start_info + memmap */
#define X86_ZERO_PAGE		0x00007000ULL	/* struct boot_params */
#define X86_PML4_ADDR		0x00009000ULL
#define X86_PDPT_ADDR		0x0000a000ULL
#define X86_PD_ADDR		0x0000b000ULL	/* four pages: 4 GiB of 2 MiB pages */
#define X86_BOOT_STACK		0x0001f000ULL
#define X86_CMDLINE_ADDR	0x00020000ULL
#define X86_CMDLINE_MAX		0x00010000ULL
#define X86_EBDA_ADDR		0x0009fc00ULL	/* reserved, left empty */
#define X86_LOW_RAM_END		0x000a0000ULL	/* 640 KiB; VGA + BIOS area above */

/*
 * The BIOS area: ACPI tables (RSDP first, where scanning kernels look) and
 * the MP table (its floating pointer in the F segment, as the MP spec allows).
 */
#define X86_ACPI_ADDR		0x000e0000ULL
#define X86_ACPI_SIZE		0x00010000ULL
#define X86_MPTABLE_ADDR	0x000f0000ULL
#define X86_MPTABLE_SIZE	0x00010000ULL
#define X86_BIOS_END		0x00100000ULL

#define X86_KERNEL_ADDR		0x00100000ULL	/* protected-mode kernel */

/* The 32-bit hole below 4 GiB: PCI MMIO window, IOAPIC, LAPIC, firmware. */
#define X86_MMIO_HOLE_START	0xc0000000ULL
#define X86_PCI_MMIO_START	0xc0000000ULL
#define X86_PCI_MMIO_SIZE	0x20000000ULL	/* 512 MiB for BARs */
#define X86_VIRTIO_MMIO_START	0xe0000000ULL	/* virtio-mmio slots */
#define X86_VIRTIO_MMIO_SIZE	0x00100000ULL
#define X86_PCI_ECAM_START	0xe8000000ULL	/* reserved for later */
#define X86_IOAPIC_ADDR		0xfec00000ULL
#define X86_LAPIC_ADDR		0xfee00000ULL
#define X86_FIRMWARE_MAX	0x00040000ULL	/* -f image, ends at 4 GiB */
#define X86_4G			0x100000000ULL

/* Port I/O */
#define X86_PORT_COM1		0x3f8
#define X86_IRQ_COM1		4
#define X86_PORT_I8042_DATA	0x60
#define X86_PORT_I8042_CMD	0x64
#define X86_PORT_RTC		0x70
#define X86_IRQ_RTC		8
#define X86_PORT_POST		0x80
#define X86_PORT_DEBUG_EXIT	0x501	/* write a byte: lkvm exits with it */
#define X86_PORT_PVPANIC	0x505
#define X86_PORT_PM1A_EVT	0x600	/* 4 bytes: status, enable */
#define X86_PORT_PM1A_CNT	0x604	/* 2 bytes */
#define X86_PORT_PM_TMR		0x608	/* 4 bytes, 3.579545 MHz */
#define X86_IRQ_SCI		9
#define X86_PORT_PCI_CONFIG	0xcf8
#define X86_PCI_IO_START	0xc000	/* legacy virtio I/O BARs */
#define X86_PCI_INTX_GSI_BASE	16	/* INTA-INTD swizzled over 16-19 */

/* SLP_TYP value the DSDT's \_S5 package gives and the PM device acts on. */
#define X86_SLP_TYP_S5		5

#define X86_NR_GSIS		24	/* IOAPIC pins */

#endif
