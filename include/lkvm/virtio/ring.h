/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Split virtqueues (virtio 1.x, 2.7), device side. A pure library: no KVM,
 * no threads, no globals; guest memory is reached only through the
 * bounds-checked guest_mem API, so unit tests and fuzzers can run it on a
 * fake guest memory.
 *
 * Everything the guest controls is treated as hostile: descriptor indices,
 * addresses and lengths, chain length and loops, indirect tables, and the
 * avail index. A malformed chain is an error the caller turns into
 * NEEDS_RESET for the device; the library itself never touches memory
 * outside guest RAM.
 *
 * The names are virtq_*, the spec's own, because <linux/virtio_ring.h>
 * (which gives us the ring layout) already owns struct vring.
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
	VIRTQ_ERR_SIZE,			/* queue size 0, not a power of 2 or > 32768 */
	VIRTQ_ERR_NOMEM,		/* host allocation failed: not the guest's fault */
	VIRTQ_ERR_AVAIL_IDX,		/* avail->idx moved by more than the size */
	VIRTQ_ERR_DESC_INDEX,		/* a head or next index >= queue size */
	VIRTQ_ERR_BUF_ADDR,		/* addr/len not inside one RAM region */
	VIRTQ_ERR_LOOP,			/* chain longer than allowed: a loop */
	VIRTQ_ERR_INDIRECT,		/* bad indirect table, or not negotiated */
	VIRTQ_ERR_ORDER,		/* device-readable after device-writable */
	VIRTQ_ERR_TOO_BIG,		/* total chain length overflows 32 bits */
	VIRTQ_ERR_COUNT
};

/* A short lower-case name for logs; "unknown" for out-of-range values. */
const char *virtq_error_name(enum virtq_error err);

/*
 * One guest buffer of a chain, already translated and bounds-checked:
 * [hva, hva + len) is guest RAM. A zero-length buffer is valid (the spec
 * does not forbid it); its address must still be in RAM, at most one past
 * the end of a region, so hva is never NULL.
 */
struct virtq_buf {
	void *hva;
	uint32_t len;
};

/*
 * A popped chain: readable buffers first (out[]), then writable (in[]),
 * as the driver must lay them out; in == out + nr_out. The arrays are
 * owned by the virtq and valid until the next virtq_pop().
 */
struct virtq_chain {
	uint16_t head;			/* give this back to virtq_push() */
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
	bool notify;			/* kicks wanted (virtq_enable_notify) */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t *used_event;		/* avail->ring[size], EVENT_IDX only */
	uint16_t *avail_event;		/* used->ring[size], EVENT_IDX only */
	uint16_t last_avail;		/* next avail entry the device reads */
	uint16_t used_idx;		/* our copy of used->idx, maybe unpublished */
	uint16_t published_used;	/* used->idx as last published */
	enum virtq_error error;		/* first error seen; sticky */
	struct virtq_buf *bufs;		/* max_chain entries: scratch for one chain */
	unsigned int max_chain;		/* buffers per chain, indirect included */
};

/*
 * The scatter-gather copies between a popped chain and one flat buffer:
 * read `len` bytes of its readable part from byte `skip` on (false, and
 * a partial copy, when the chain is shorter), or write up to `len` bytes
 * into its writable part in order (returns how many fitted).
 */
bool virtq_chain_read(const struct virtq_chain *c, size_t skip, void *dst,
		      size_t len);
size_t virtq_chain_write(const struct virtq_chain *c, const void *src,
			 size_t len);

/*
 * Set up a queue whose three parts the driver placed at these guest
 * addresses, for a queue just enabled after a reset: both indices start at
 * 0, and used->flags/idx are zeroed. Checks the size and that every part
 * lies in RAM with the alignment the spec requires; -1 (and vq->error set)
 * otherwise, after which virtq_pop() fails and virtq_exit() is still safe.
 * To reset a queue, virtq_exit() it and virtq_init() it again on enable.
 */
int virtq_init(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
	       uint64_t desc, uint64_t avail, uint64_t used,
	       bool event_idx, bool indirect);
void virtq_exit(struct virtq *vq);

/*
 * Take the next available chain. Returns 1 with *chain filled, 0 when the
 * ring is empty, -1 on a malformed ring or chain (vq->error says which;
 * the error is sticky: the device should then set NEEDS_RESET). Nothing is
 * consumed on error.
 */
int virtq_pop(struct virtq *vq, struct virtq_chain *chain);

/*
 * Put back the last n popped chains, not yet pushed, to be popped again
 * (virtio-net: a frame that needs more receive buffers than are there).
 */
void virtq_unpop(struct virtq *vq, uint16_t n);

/*
 * Ask for a kick at the next chain the driver adds, even though chains are
 * already waiting (they are too few for what the device has to deliver).
 */
void virtq_notify_on_next(struct virtq *vq);

/* How many chains the driver has made available and we have not popped. */
uint16_t virtq_avail_count(struct virtq *vq);

/*
 * The driver's avail->idx as it is now: a snapshot that any chain the
 * driver adds later changes (unlike the count, which popping lowers).
 */
uint16_t virtq_avail_idx(struct virtq *vq);

/*
 * Give a chain back with `written` bytes written into its in[] buffers.
 * Not visible to the driver until virtq_publish().
 */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t written);

/*
 * Publish the used entries pushed so far (one used->idx store for a
 * batch) and say whether the driver wants an interrupt for them, per
 * VRING_AVAIL_F_NO_INTERRUPT or, with EVENT_IDX, used_event. Call it at
 * least once per 65535 pushes (in practice: once per processing pass).
 */
bool virtq_publish(struct virtq *vq);

/*
 * Ask the driver for notifications (kicks) or tell it not to bother while
 * the device polls. After enabling, callers must check virtq_has_avail()
 * once more: a chain made available just before may not have been kicked.
 */
void virtq_enable_notify(struct virtq *vq, bool enable);

/* Are there chains the device has not popped yet? false after an error. */
bool virtq_has_avail(struct virtq *vq);

#endif
