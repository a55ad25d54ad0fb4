/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Split virtqueues (virtio 1.x, 2.7), device side, as struct virtq (the
 * uapi header already takes the name struct vring for the ring layout). A pure library: no KVM,
 * no threads, no globals; guest memory is reached only through the
 * bounds-checked guest_mem API, so unit tests and fuzzers can run it on a
 * fake guest memory.
 *
 * Everything the guest controls is treated as hostile: descriptor indices,
 * addresses and lengths, chain length and loops, indirect tables, and the
 * avail index. A malformed chain is an error the caller turns into a failed
 * request or into NEEDS_RESET for the device; the library itself never
 * touches memory outside guest RAM.
 */
#ifndef LKVM_VIRTIO_RING_H
#define LKVM_VIRTIO_RING_H

#include <stdbool.h>
#include <stdint.h>

#define VIRTIO_RING_NO_LEGACY	/* its struct vring and vring_init() are not ours */
#include <linux/virtio_ring.h>

#include "lkvm/guest_mem.h"

#define VIRTQ_MAX_SIZE		32768	/* virtio: split queues hold at most 2^15 */

/* What went wrong with the guest's ring; 0 is success. */
enum virtq_error {
	VIRTQ_OK = 0,
	VIRTQ_ERR_RING_ADDR,		/* desc/avail/used not in RAM or misaligned */
	VIRTQ_ERR_AVAIL_IDX,		/* avail->idx moved by more than the size */
	VIRTQ_ERR_DESC_INDEX,		/* a head or next index >= queue size */
	VIRTQ_ERR_BUF_ADDR,		/* addr/len not inside guest RAM (or overflow) */
	VIRTQ_ERR_LOOP,			/* chain longer than allowed: a loop */
	VIRTQ_ERR_INDIRECT,		/* bad indirect table: size, nesting, NEXT */
	VIRTQ_ERR_ORDER,		/* device-readable after device-writable */
	VIRTQ_ERR_TOO_BIG,		/* total chain length overflows 32 bits */
	VIRTQ_ERR_COUNT
};

const char *virtq_error_name(enum virtq_error err);

/* One guest buffer of a chain, already translated and bounds-checked. */
struct virtq_buf {
	void *hva;
	uint32_t len;
};

/*
 * A popped chain: readable buffers first (out[]), then writable (in[]),
 * as the driver must lay them out. The arrays are owned by the vring.
 */
struct virtq_chain {
	uint16_t head;
	uint16_t nr_out;
	uint16_t nr_in;
	uint32_t out_len;		/* total readable bytes */
	uint32_t in_len;		/* total writable bytes */
	struct virtq_buf *out;
	struct virtq_buf *in;
};

/*
 * One split virtqueue. Owned by the thread that serves the queue (a
 * device's I/O thread, or a vCPU with --no-ioeventfd under the device's
 * lock); the transport configures it before enabling and never while the
 * queue is served.
 */
struct virtq {
	const struct guest_mem *mem;
	uint16_t size;			/* number of descriptors, a power of 2 */
	bool event_idx;			/* VIRTIO_F_EVENT_IDX negotiated */
	bool indirect;			/* VIRTIO_F_INDIRECT_DESC negotiated */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t last_avail;		/* next avail entry the device reads */
	uint16_t used_idx;		/* our copy of used->idx */
	uint16_t signalled_used;	/* used_idx at the last interrupt */
	bool signalled_valid;
	enum virtq_error error;		/* first error seen; sticky */
	struct virtq_buf *bufs;		/* size entries: scratch for one chain */
	unsigned int max_chain;		/* buffers per chain, indirect included */
};

/*
 * Set up a queue whose three parts the driver placed at these guest
 * addresses. Checks every part lies in RAM with the alignment the spec
 * requires; -1 (and vr->error set) otherwise. virtq_exit() frees it.
 */
int virtq_init(struct virtq *vr, const struct guest_mem *mem, uint16_t size,
	       uint64_t desc, uint64_t avail, uint64_t used,
	       bool event_idx, bool indirect);
void virtq_exit(struct virtq *vr);

/*
 * Take the next available chain. Returns 1 with *chain filled, 0 when the
 * ring is empty, -1 on a malformed ring or chain (vr->error says which;
 * the error is sticky: the device should then set NEEDS_RESET).
 */
int virtq_pop(struct virtq *vr, struct virtq_chain *chain);

/* Give a chain back with `written` bytes written into its in[] buffers. */
void virtq_push(struct virtq *vr, uint16_t head, uint32_t written);

/*
 * Publish the used entries pushed so far (one used->idx store for a
 * batch) and say whether the driver wants an interrupt for them, per
 * VRING_AVAIL_F_NO_INTERRUPT or, with EVENT_IDX, used_event.
 */
bool virtq_publish(struct virtq *vr);

/*
 * Ask the driver for notifications (kicks) or tell it not to bother while
 * the device polls. After enabling, callers must check virtq_has_avail()
 * once more: a chain made available just before may not have been kicked.
 */
void virtq_enable_notify(struct virtq *vr, bool enable);

/* Are there chains the device has not popped yet? */
bool virtq_has_avail(struct virtq *vr);

#endif
