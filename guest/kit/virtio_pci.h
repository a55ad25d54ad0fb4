/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-pci for the kit's virtio driver (virtio.h): the same vio_dev and
 * vio_queue calls work once vio_pci_find() has filled the device in.
 *
 *  - modern (virtio 1.2, 4.1): the vendor capabilities give the common
 *    config, ISR, device config and notify regions inside a memory BAR;
 *    interrupts are MSI-X, one table entry for config changes (0) and one
 *    per queue (index + 1), as lkvm lays them out;
 *  - legacy (virtio 0.9.5): registers in I/O BAR 0, 32 feature bits, the
 *    ring at a page frame number with the size fixed to QueueNum, INTx.
 *
 * Interrupts are seen as elsewhere in the kit: with IF=0 a delivered
 * vector waits in the LAPIC IRR. MSI goes straight to the LAPIC, INTx
 * through the IOAPIC pin the function's Interrupt Line names. INTx is
 * level-triggered: the vector stays in service (Remote IRR) until an EOI,
 * and a line still up at the EOI fires again, so vio_irq_accept() briefly
 * opens interrupts to take what is pending and EOI it.
 */
#ifndef KIT_VIRTIO_PCI_H
#define KIT_VIRTIO_PCI_H

#include "virtio.h"

#define VIO_PCI_VENDOR		0x1af4
#define VIO_MSI_ADDR		0xfee00000u	/* destination APIC ID 0 */
#define VIO_NO_VECTOR		0xffff

/*
 * Finds the first virtio function of the given flavour on bus 0 (modern:
 * device ID 0x1040 + type; legacy: 0x1000-0x103f with the type in the
 * subsystem ID), walks its capability list and maps its regions. Turns
 * on memory or I/O decoding and bus mastering. false if there is none or
 * a capability is missing.
 */
bool vio_pci_find(struct vio_dev *d, bool legacy);
/* The same from slot first on: the next function after d->slot, say. */
bool vio_pci_find_from(struct vio_dev *d, bool legacy, unsigned int first);

/* The transport's halves of the calls in virtio.h (virtio.c dispatches). */
uint32_t vio_pci_config_read(const struct vio_dev *d, unsigned int off,
			     unsigned int size);
void vio_pci_config_write32(const struct vio_dev *d, unsigned int off,
			    uint32_t v);
uint8_t vio_pci_config_generation(const struct vio_dev *d);
uint8_t vio_pci_status(const struct vio_dev *d);
void vio_pci_set_status(const struct vio_dev *d, uint8_t status);
void vio_pci_features(struct vio_dev *d, uint64_t wanted);
uint32_t vio_pci_isr(const struct vio_dev *d);
uint32_t vio_pci_queue_max(const struct vio_dev *d, unsigned int index);
int vio_pci_queue_setup(struct vio_queue *q, struct vio_dev *d,
			unsigned int index, unsigned int want);
bool vio_pci_queue_enabled(struct vio_queue *q);
void vio_pci_notify(struct vio_queue *q);

/* ---- MSI-X (modern) ---- */

/*
 * Turns MSI-X on in the capability (the function mask clear), leaves every
 * table entry masked, and points msix_config at entry 0; queues set up
 * after this get entry index + 1. false if the device did not take it.
 */
bool vio_msix_enable(struct vio_dev *d);
/* Programs entry: address of APIC 0, data = vector, and its mask bit. */
void vio_msix_set(const struct vio_dev *d, unsigned int entry,
		  unsigned int vector, bool masked);
void vio_msix_mask(const struct vio_dev *d, unsigned int entry, bool masked);
/* The function mask in the capability's message control. */
void vio_msix_function_mask(const struct vio_dev *d, bool masked);
/* The entry's bit in the Pending Bit Array. */
bool vio_msix_pending(const struct vio_dev *d, unsigned int entry);
/* What the device says a queue's vector is (queue_msix_vector). */
uint16_t vio_msix_queue_vector(const struct vio_dev *d, unsigned int index);

/* ---- INTx (legacy, or modern without MSI-X) ---- */

/*
 * Routes the function's Interrupt Line on the IOAPIC to vector:
 * level-triggered and active-low as the DSDT's _PRT says, to APIC 0.
 * Writing the entry edge-triggered first clears a stale Remote IRR.
 */
void vio_intx_route(const struct vio_dev *d, unsigned int vector);
void vio_intx_mask(const struct vio_dev *d);
/* The pin's Remote IRR: a level interrupt delivered and not yet EOIed. */
bool vio_intx_remote_irr(const struct vio_dev *d);

/*
 * Opens interrupts for a moment so the CPU takes what waits in the IRR;
 * the handler EOIs each one. Returns how many were taken (a level line
 * the device still holds up fires again at each EOI: at most 256).
 */
unsigned int vio_irq_accept(void);
/* Takes exactly one pending interrupt (false if none was pending). */
bool vio_irq_accept_one(void);

#endif
