/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of virtio-pci share: the function's state and the layout
 * of its BARs. pci.c makes the function (config space, capabilities, BAR
 * placement, notify ioeventfds, the transport's ops) and uses the rest;
 * pci_modern.c and pci_legacy.c serve the two register files a driver
 * reaches through the BAR; below them pci_intx.c keeps the ISR and the
 * INTx line, pci_msix.c the MSI-X vectors.
 */
#ifndef LKVM_VIRTIO_VIRTIO_PCI_H
#define LKVM_VIRTIO_VIRTIO_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/pci.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "pci_msix.h"

#define VIRTIO_PCI_ISR_QUEUE	0x1

/* Config space offsets and bits more than one part uses. */
#define PCI_CFG_COMMAND		0x04
#define PCI_CFG_STATUS		0x06
#define PCI_CFG_MSIX		0x40	/* the MSI-X capability */
#define PCI_COMMAND_INTX_DISABLE	0x400

/* The modern BAR (BAR 4): 32 KiB, a 4 KiB region for each structure. */
#define BAR4_SIZE		0x8000
#define BAR4_COMMON		0x0000
#define BAR4_ISR		0x1000
#define BAR4_DEVICE		0x2000
#define BAR4_NOTIFY		0x3000
#define BAR4_MSIX_TABLE		0x4000
#define BAR4_MSIX_PBA		0x6000
#define NOTIFY_MULTIPLIER	4
/* The legacy BAR (BAR 0): registers, then device config. */
#define BAR0_SIZE		0x100

/*
 * One function, made by the main thread. Everything below is guarded by
 * vdev->lock, except isr (atomic: set from the I/O thread, cleared by
 * vCPUs), the INTx line (intx_lock) and what msix says of its own.
 */
struct virtio_pci {
	struct virtio_transport transport;
	struct pci_device pdev;
	struct virtio_device *vdev;
	struct vm *vm;
	bool legacy;
	int slot;

	struct bus_dev bar_dev;		/* BAR 4 (modern) or BAR 0 (legacy) */
	uint64_t bar_addr;		/* where it is mapped; 0: not mapped */
	uint32_t bar_size;

	uint32_t host_features_sel;
	uint32_t guest_features_sel;
	uint16_t queue_sel;
	uint16_t config_vector;
	uint32_t isr;

	/* Made on legacy functions too, which have no capability for it. */
	struct pci_msix msix;

	uint32_t intx_gsi;
	/*
	 * The line follows isr, the Interrupt Disable bit and MSI-X; intx_lock
	 * makes each change of those and the line's one step (I/O threads
	 * raise, vCPU threads read the ISR and write the command register).
	 */
	pthread_mutex_t intx_lock;
	bool intx_held;
};

/* The BAR's register files (pci_modern.c, pci_legacy.c). */
extern const struct bus_ops virtio_pci_modern_ops;
extern const struct bus_ops virtio_pci_legacy_ops;

/* pci_intx.c: the INTx line follows isr, Interrupt Disable and MSI-X. */
void virtio_pci_intx_sync(struct virtio_pci *vp);
/* Set why's bit in the ISR (any thread); the line follows. */
void virtio_pci_intx_raise(struct virtio_pci *vp, uint32_t why);
/* Reading the ISR acknowledges it, and the INTx line goes down with it. */
uint8_t virtio_pci_isr_read(struct virtio_pci *vp);
/*
 * The status register is one byte: a wider write's upper bytes are not
 * part of it, and a 0 in it resets the device and the function's
 * interrupt state alike.
 */
void virtio_pci_set_status(struct virtio_pci *vp, uint8_t status);

static inline struct virtio_queue *virtio_pci_queue(struct virtio_pci *vp)
{
	return virtio_queue_at(vp->vdev, vp->queue_sel);
}

/* A register write's value: up to its first 4 bytes. */
static inline uint32_t virtio_pci_value(const void *data, unsigned int len)
{
	uint32_t v = 0;

	memcpy(&v, data, MIN(len, 4u));
	return v;
}

#endif
