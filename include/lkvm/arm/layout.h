/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 board's guest-physical map and interrupt numbers. Devices sit
 * below 1 GiB, RAM from 1 GiB up; the device tree (arm/fdt.c) describes
 * exactly this.
 *
 *   0x0800_0000  GIC distributor                   64 KiB
 *   0x0801_0000  GICv2 CPU interface                8 KiB
 *   0x0802_0000  GICv2m MSI frame                   4 KiB
 *   0x0804_0000  GICv3 ITS                        128 KiB
 *   0x0900_0000  16550 UART                         4 KiB
 *   0x0901_0000  debug-exit (+0) and boot-marker (+1) bytes
 *   0x0a00_0000  virtio-mmio slots, 4 KiB each    128 KiB
 *   0x0b00_0000  GICv3 redistributors, 128 KiB per vCPU
 *   0x1000_0000  PCI memory window (32-bit BARs)
 *   0x3eff_0000  PCI I/O window                    64 KiB
 *   0x3f00_0000  PCI ECAM, buses 0-15              16 MiB
 *   0x4000_0000  RAM
 *
 * Interrupts are numbered as the device tree's SPI cells (INTID - 32),
 * which is also the GSI that KVM's irqfds and default routes use on arm64.
 */
#ifndef LKVM_ARM_LAYOUT_H
#define LKVM_ARM_LAYOUT_H

#define ARM_GIC_DIST_BASE	0x08000000ULL
#define ARM_GIC_DIST_SIZE	0x00010000ULL
#define ARM_GIC_V2_DIST_SIZE	0x00001000ULL
#define ARM_GIC_CPU_BASE	0x08010000ULL
#define ARM_GIC_CPU_SIZE	0x00002000ULL
#define ARM_GIC_V2M_BASE	0x08020000ULL
#define ARM_GIC_V2M_SIZE	0x00001000ULL
#define ARM_GIC_ITS_BASE	0x08040000ULL
#define ARM_GIC_ITS_SIZE	0x00020000ULL
#define ARM_UART_BASE		0x09000000ULL
#define ARM_UART_SIZE		0x00001000ULL
/* guest/init/init.c writes these through /dev/mem: keep them in step */
#define ARM_DEBUG_EXIT_BASE	0x09010000ULL
#define ARM_BOOT_MARKER_BASE	0x09010001ULL
#define ARM_VIRTIO_MMIO_BASE	0x0a000000ULL
#define ARM_VIRTIO_MMIO_SLOT	0x00001000ULL
#define ARM_VIRTIO_MMIO_SLOTS	32
#define ARM_GIC_REDIST_BASE	0x0b000000ULL
#define ARM_GIC_REDIST_STRIDE	0x00020000ULL	/* RD_base + SGI_base frames */
#define ARM_PCI_MMIO_BASE	0x10000000ULL
#define ARM_PCI_MMIO_SIZE	0x2eff0000ULL
#define ARM_PCI_IO_BASE		0x3eff0000ULL	/* CPU address of PCI I/O 0 */
#define ARM_PCI_IO_SIZE		0x00010000ULL
#define ARM_PCI_ECAM_BASE	0x3f000000ULL
#define ARM_PCI_ECAM_SIZE	0x01000000ULL
#define ARM_PCI_ECAM_BUSES	16
#define ARM_RAM_BASE		0x40000000ULL

/* SPIs (INTID - 32) */
#define ARM_SPI_UART		1
#define ARM_SPI_PCI_INTX	4	/* 4 lines, swizzled by slot */
#define ARM_SPI_VIRTIO_MMIO	16	/* one per slot */
#define ARM_SPI_V2M		64	/* the GICv2m frame's MSIs */
#define ARM_SPI_V2M_COUNT	64
#define ARM_NR_SPIS		(ARM_SPI_V2M + ARM_SPI_V2M_COUNT)

/* The arch timer's PPIs (INTID - 16), as its device tree binding lists */
#define ARM_PPI_TIMER_SECURE	13
#define ARM_PPI_TIMER_PHYS	14
#define ARM_PPI_TIMER_VIRT	11
#define ARM_PPI_TIMER_HYP	10

/* Redistributors for this many vCPUs fit below the PCI window. */
#define ARM_MAX_VCPUS_GICV3	((ARM_PCI_MMIO_BASE - ARM_GIC_REDIST_BASE) / \
				 ARM_GIC_REDIST_STRIDE)
/* A GICv2 addresses 8 CPUs. */
#define ARM_MAX_VCPUS_GICV2	8

#endif
