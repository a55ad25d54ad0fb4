/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small virtio driver for guest-kit tests over virtio-mmio (version 2),
 * and through virtio_pci.h over modern and legacy virtio-pci: find the
 * devices, negotiate features, set up split virtqueues, submit direct and
 * indirect chains, kick and poll for completions. It stays close to the
 * registers on purpose: hostile tests reach past it (vio_raw_*) to break
 * the rules one at a time, and everything a test might count (register
 * accesses, kicks) is counted here.
 */
#ifndef KIT_VIRTIO_H
#define KIT_VIRTIO_H

#include "kit.h"

/* The uapi headers are plain data layouts; the legacy part is not ours. */
#define VIRTIO_RING_NO_LEGACY
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>

/* lkvm's board: include/lkvm/x86/layout.h and x86/arch.c. */
#define VIO_MMIO_BASE		0xe0000000UL
#define VIO_MMIO_SLOT_SIZE	0x1000UL
#define VIO_MMIO_SLOTS		13
#define VIO_MMIO_MAGIC		0x74726976	/* "virt" */

#define VIO_STATUS_NEEDS_RESET	0x40

/* InterruptStatus bits (virtio 1.2, 4.2.2). */
#define VIO_INT_VRING		(1u << 0)
#define VIO_INT_CONFIG		(1u << 1)

enum vio_transport {
	VIO_MMIO,			/* the zero value: mmio users need not say */
	VIO_PCI,			/* modern virtio-pci, regions in a BAR */
	VIO_PCI_LEGACY,			/* virtio 0.9.5 registers in an I/O BAR */
};

struct vio_dev {
	uintptr_t base;			/* mmio slot, or the PCI BAR (I/O: port) */
	unsigned int slot;		/* mmio slot, or PCI device number */
	unsigned int gsi;		/* IOAPIC pin, by slot order or INTx line */
	uint32_t device_id;
	uint64_t offered;		/* device features, both words */
	uint64_t features;		/* what we accepted */
	enum vio_transport transport;
	/* modern virtio-pci: where the capabilities put each region */
	uintptr_t common, isr, devcfg, notify;
	uint32_t notify_mult;
	unsigned int msix_cap;		/* config offset, 0 if none */
	unsigned int nr_vectors;	/* MSI-X table size */
	uintptr_t msix_table, msix_pba;
	bool msix_on;			/* queues get vector index + 1 */
};

/* Register accesses and kicks so far: tests compare them with lkvm's stats. */
extern unsigned long vio_reg_reads, vio_reg_writes, vio_kicks;

/* virtio-mmio registers (hostile tests reach them directly). */
uint32_t vio_read(const struct vio_dev *d, unsigned int reg);
void vio_write(const struct vio_dev *d, unsigned int reg, uint32_t v);
uint8_t vio_config_read8(const struct vio_dev *d, unsigned int off);
uint32_t vio_config_read32(const struct vio_dev *d, unsigned int off);
void vio_config_write32(const struct vio_dev *d, unsigned int off, uint32_t v);
/* Two 32-bit halves under the generation counter, as the spec asks. */
uint64_t vio_config_read64(const struct vio_dev *d, unsigned int off);
/* The config generation; legacy PCI has none and says 0. */
uint32_t vio_config_generation(const struct vio_dev *d);

/* The GSI lkvm gives slot n (x86/arch.c), or -1. */
int vio_slot_gsi(unsigned int slot);

/*
 * Probes the slots for "virt" version 2 with a non-zero device ID and
 * fills devs[] in slot order; returns how many were found.
 */
unsigned int vio_find(struct vio_dev *devs, unsigned int max);

/* transport=mmio|pci|legacy from the command line, else dflt; ends the
 * test with a failure on anything else. */
enum vio_transport vio_cmdline_transport(enum vio_transport dflt);

/*
 * Looks in the DSDT for a LNRO0005 device whose _CRS has Memory32Fixed at
 * base; returns true and its size and GSI (Extended Interrupt) if found.
 */
bool vio_dsdt_lookup(uintptr_t base, uint32_t *size, uint32_t *gsi,
		     bool *edge_high);

uint8_t vio_status(const struct vio_dev *d);
void vio_set_status(const struct vio_dev *d, uint8_t status);
/* Writes 0 and waits for Status to read back 0; false on timeout. */
bool vio_reset(const struct vio_dev *d);

/*
 * Reset, ACKNOWLEDGE, DRIVER, accept (offered & wanted) | VERSION_1, and
 * FEATURES_OK, which must read back. 0 on success, else -1 with FAILED
 * set and a message printed.
 */
int vio_negotiate(struct vio_dev *d, uint64_t wanted);
void vio_driver_ok(const struct vio_dev *d);

/*
 * The device's interrupt without an IDT: route its GSI on the IOAPIC to a
 * vector (fixed, edge, active-high, to APIC 0; the PICs masked so only the
 * IOAPIC delivers) and, with IF=0, watch the vector wait in the LAPIC IRR.
 * An IRR bit cannot be cleared that way: use a fresh vector per check.
 */
void vio_irq_route(const struct vio_dev *d, unsigned int vector);
void vio_irq_mask(const struct vio_dev *d);
bool vio_irq_pending(unsigned int vector);
/* Polls the IRR for up to us microseconds. */
bool vio_irq_wait(unsigned int vector, uint64_t us);

/* InterruptStatus, and acknowledging what it said. */
uint32_t vio_isr(const struct vio_dev *d);
void vio_isr_ack(const struct vio_dev *d, uint32_t bits);

struct vio_queue {
	struct vio_dev *dev;
	unsigned int index;
	unsigned int size;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t *used_event;		/* avail->ring[size] */
	uint16_t *avail_event;		/* used->ring[size] */
	bool event_idx;
	uint16_t avail_idx;		/* next avail->idx to publish */
	uint16_t kicked_idx;		/* avail_idx at the last kick decision */
	uint16_t last_used;
	uint16_t free_head;
	uint16_t nr_free;
	uint16_t *chain_len;		/* per head: ring descriptors used */
	struct vring_desc **indirect;	/* per head: its table, to free */
	void *ring;			/* one block for all three (legacy) */
	uintptr_t notify;		/* modern virtio-pci: its notify address */
};

/* True when the device reports the queue enabled (QueueReady, queue_enable). */
bool vio_queue_enabled(struct vio_queue *q);

/* Allocates rings for `size` entries (alignments of virtio 1.2, 2.7). */
int vio_queue_alloc(struct vio_queue *q, struct vio_dev *d,
		    unsigned int index, unsigned int size);
/* The same in the legacy layout: one block, used on a 4 KiB boundary. */
int vio_queue_alloc_legacy(struct vio_queue *q, struct vio_dev *d,
			   unsigned int index, unsigned int size);
void vio_queue_free(struct vio_queue *q);
/*
 * Programs the queue registers with q's rings (QueueNum = num) and sets
 * QueueReady (virtio-mmio only). -1 if the queue is missing, already
 * ready, or too small.
 */
int vio_queue_program(struct vio_queue *q, unsigned int num);
/*
 * alloc + program with size min(QueueNumMax, want), on any transport
 * (legacy virtio-pci: the device's size, whatever want says).
 */
int vio_queue_setup(struct vio_queue *q, struct vio_dev *d,
		    unsigned int index, unsigned int want);

struct vio_buf {
	uint64_t addr;			/* guest-physical */
	uint32_t len;
	bool write;			/* device-writable */
};

/*
 * Puts a chain (readable buffers first) into the ring and publishes it,
 * directly or as one indirect descriptor. Returns the head, or -1 when
 * the ring has no room.
 */
int vio_add(struct vio_queue *q, const struct vio_buf *bufs, unsigned int n,
	    bool indirect);
/* Notifies the device if it asked for it (flags or avail_event). */
bool vio_kick(struct vio_queue *q);
/* Notifies unconditionally. */
void vio_notify(struct vio_queue *q);

/* Takes one used element if there is one; frees its descriptors. */
bool vio_get_used(struct vio_queue *q, uint32_t *id, uint32_t *len);

enum vio_wait {
	VIO_WAIT_USED,
	VIO_WAIT_NEEDS_RESET,
	VIO_WAIT_TIMEOUT,
};
/*
 * Polls the used ring (and, if watch_status, the device Status for
 * NEEDS_RESET) for up to timeout_us.
 */
enum vio_wait vio_wait_used(struct vio_queue *q, uint64_t timeout_us,
			    bool watch_status, uint32_t *id, uint32_t *len);

/* Interrupt suppression: the avail flag, or used_event with EVENT_IDX. */
void vio_want_interrupt(struct vio_queue *q, bool want);

/* Low-level pieces for tests that break the rules on purpose. */
void vio_raw_desc(struct vio_queue *q, unsigned int i, uint64_t addr,
		  uint32_t len, uint16_t flags, uint16_t next);
/* Puts head at the next avail slot and publishes avail->idx = idx + delta. */
void vio_raw_publish(struct vio_queue *q, uint16_t head, uint16_t delta);
/*
 * Publishes a hand-built chain at head as vio_raw_publish() does and
 * notifies; a head inside the ring is marked in use first, so that
 * vio_get_used() takes it back.
 */
void vio_raw_submit(struct vio_queue *q, uint16_t head, uint16_t delta);

/* ---- virtio-blk requests ---- */

#define VIO_BLK_SECTOR		512
#define VIO_BLK_TIMEOUT_US	2000000

/*
 * One request: header, the data buffers (readable for writes and
 * discards, writable for reads and GET_ID), status. Returns the status
 * byte, or -1 when no completion came (*wait says why). *used_len gets
 * the length the device reported.
 */
int vio_blk_request(struct vio_queue *q, uint32_t type, uint64_t sector,
		    const struct vio_buf *data, unsigned int n, bool indirect,
		    uint32_t *used_len, enum vio_wait *wait);
/* Read or write whole sectors into/from one buffer. */
int vio_blk_rw(struct vio_queue *q, bool write, uint64_t sector, void *buf,
	       uint32_t len, bool indirect);

/* ---- virtio-net ---- */

/* virtio 1.2, 5.1.6: struct virtio_net_hdr, num_buffers from 1.0/MRG */
struct vio_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
} __packed;

#endif
