/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interrupt delivery into the guest through KVM: the GSI routing table
 * (irqchip pins the arch sets up, plus MSI routes devices add) and irqfds,
 * so that I/O threads interrupt the guest with a write to an eventfd; and
 * shared level-triggered lines, which must follow their devices' state
 * exactly (KVM_IRQ_LINE).
 */
#ifndef LKVM_IRQ_H
#define LKVM_IRQ_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct kvm_irq_routing_entry;

/* Set up the routing table with the arch's irqchip routes and commit it. */
int irq_init(struct vm *vm);
void irq_exit(struct vm *vm);

/* Arch hook: append the irqchip routes of the board; returns how many. */
unsigned int arch_irq_default_routes(struct kvm_irq_routing_entry *e,
				     unsigned int max);

/*
 * Add an MSI route from the device with PCI requester ID devid; returns
 * its GSI, or -1. Committed at once. Where KVM wants to know the sender
 * (KVM_CAP_MSI_DEVID: arm64's ITS translates by device), the route says.
 */
int irq_msi_route_add(struct vm *vm, uint32_t devid, uint64_t addr,
		      uint32_t data);
int irq_msi_route_update(struct vm *vm, unsigned int gsi, uint32_t devid,
			 uint64_t addr, uint32_t data);

/*
 * A level-triggered irqchip line that devices share (PCI INTx): it is up
 * while any device holds it up, so one device lowering its share (virtio:
 * the guest read its ISR) leaves the others' standing. *held is the
 * caller's share, changed only through here; any thread.
 */
void irq_line_hold(struct vm *vm, unsigned int gsi, bool *held, bool up);

/* Attach an eventfd to a GSI (resample_fd >= 0: level-triggered). */
int irqfd_attach(struct vm *vm, int fd, unsigned int gsi, int resample_fd);
void irqfd_detach(struct vm *vm, int fd, unsigned int gsi);

#endif
