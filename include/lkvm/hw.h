/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The non-virtio board devices under hw/. Each registers its ports on the
 * VM's buses and keeps its state private; arch code decides which a board
 * has and where.
 */
#ifndef LKVM_HW_H
#define LKVM_HW_H

#include <stdint.h>

struct bus;
struct vm;

/*
 * 16550A UART wired to the host console, its 8 byte-wide registers at
 * base on bus (the PC's I/O ports, or MMIO); irq is a GSI of the irqchip.
 */
int serial_init(struct vm *vm, struct bus *bus, uint64_t base,
		unsigned int irq);
/* PS/2 controller: enough for Linux's probe and the reset line. */
int i8042_init(struct vm *vm, uint16_t data_port, uint16_t cmd_port);
/* MC146818 CMOS real-time clock and NVRAM; nvram gets the memory sizes. */
int rtc_init(struct vm *vm, uint16_t port, uint64_t ram_below_4g,
	     uint64_t ram_above_4g);
/* A byte written here ends the VM with that byte as lkvm's exit status. */
int debug_exit_init(struct vm *vm, struct bus *bus, uint64_t base);
/* POST code port: writes are kept, used by Linux as an I/O delay. */
int post_init(struct vm *vm, uint16_t port);
/* ACPI fixed hardware: PM1a event/control blocks and the PM timer. */
int acpi_pm_init(struct vm *vm, uint16_t evt_port, uint16_t cnt_port,
		 uint16_t tmr_port, unsigned int sci_irq, unsigned int slp_typ_s5);
/* QEMU-compatible pvpanic port: a guest panic ends the VM with status 4. */
int pvpanic_init(struct vm *vm, uint16_t port);
/* PCI host bridge with configuration mechanism #1 at 0xcf8/0xcfc. */
int pci_host_init(struct vm *vm, uint16_t port);
/* The same host bridge behind an ECAM window (arm64): bus 0 in 1 MiB. */
int pci_ecam_init(struct vm *vm, uint64_t base, uint64_t size);

#endif
