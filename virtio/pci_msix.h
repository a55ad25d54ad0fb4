/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MSI-X for a virtio-pci function (PCI 3.0, 6.8.2): the capability, the
 * vector table and the pending-bit array the function maps in a BAR, and
 * one irqfd per vector whose GSI route follows its table entry. Private
 * to virtio/pci*.c.
 */
#ifndef LKVM_VIRTIO_PCI_MSIX_H
#define LKVM_VIRTIO_PCI_MSIX_H

#include <stdbool.h>
#include <stdint.h>

#define PCI_MSIX_MAX_VECTORS	64	/* the pending bits are one word */
#define PCI_MSIX_NO_VECTOR	0xffff

struct pci_device;
struct vm;

struct pci_msix_entry {
	uint32_t addr_lo;
	uint32_t addr_hi;
	uint32_t data;
	uint32_t ctrl;
};

/*
 * Owned by its function. The table is written by vCPU threads under the
 * function's device lock (vdev->lock), which every call below but
 * pci_msix_fire() and pci_msix_pba_read() wants held; the entries' ctrl
 * words and pending are atomics, since an I/O thread fires a vector under
 * its queue's lock only.
 */
struct pci_msix {
	struct vm *vm;
	const struct pci_device *pdev;
	unsigned int cap;		/* its capability's offset in pdev */
	uint32_t requester_id;		/* for the routes (arm64's ITS) */
	unsigned int nr_vectors;
	struct pci_msix_entry table[PCI_MSIX_MAX_VECTORS];
	uint64_t pending;		/* the PBA: one bit per vector */
	int gsi[PCI_MSIX_MAX_VECTORS];
	int fd[PCI_MSIX_MAX_VECTORS];
};

/*
 * nr_vectors (at most PCI_MSIX_MAX_VECTORS), masked, each with its irqfd
 * and route; their capability at cap in pdev's config space, which
 * pci_msix_add_cap() writes (a function without it never enables them).
 */
int pci_msix_init(struct pci_msix *m, struct vm *vm,
		  const struct pci_device *pdev, unsigned int cap,
		  uint32_t requester_id, unsigned int nr_vectors);
/* The capability, next in the list: table and PBA at those BAR offsets. */
void pci_msix_add_cap(const struct pci_msix *m, struct pci_device *pdev,
		      unsigned int next, uint8_t bar, uint32_t table,
		      uint32_t pba);
/* The config write at offset, len touched the Message Control register. */
bool pci_msix_control_written(const struct pci_msix *m, unsigned int offset,
			      unsigned int len);

bool pci_msix_enabled(const struct pci_msix *m);
/* v if the table has it, else PCI_MSIX_NO_VECTOR. */
uint16_t pci_msix_vector(const struct pci_msix *m, uint32_t v);
/* Send vector's message, or leave it pending while it is masked. Any thread. */
void pci_msix_fire(struct pci_msix *m, uint16_t vector);
/* Send what is pending and no longer masked (after an unmask). */
void pci_msix_deliver_pending(struct pci_msix *m);
/* A reset of the function: nothing pending. */
void pci_msix_reset(struct pci_msix *m);

/* The driver's accesses, at offsets inside the table and the PBA. */
void pci_msix_table_read(struct pci_msix *m, uint64_t off, void *data,
			 unsigned int len);
void pci_msix_table_write(struct pci_msix *m, uint64_t off, const void *data,
			  unsigned int len);
void pci_msix_pba_read(struct pci_msix *m, uint64_t off, void *data,
		       unsigned int len);

#endif
