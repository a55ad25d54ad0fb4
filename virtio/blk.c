// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk. Each queue is served on its I/O thread: pop every available
 * request and hand its I/O, straight into guest memory, to the queue's
 * io_uring (disk_aio.h), all of a pass in one submission; completions are
 * pushed as the thread reaps them and published once per batch (one
 * used->idx store, at most one interrupt). Without io_uring (aio=sync, or
 * a kernel that refuses it) each request is done in turn with vectored
 * positional calls. While a pass runs the driver is asked not to kick; the
 * re-check after re-enabling closes the lost-kick window.
 */
#include <errno.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "lkvm/disk.h"
#include "lkvm/disk_aio.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "lkvm/virtio/device.h"
#include "lkvm/vm.h"

#define BLK_SECTOR		512ULL
#define BLK_QUEUE_SIZE		256
#define BLK_SEG_MAX		(BLK_QUEUE_SIZE - 2)	/* header + status */
#define BLK_SIZE_MAX		(1U << 20)
#define BLK_MAX_DISCARD_SEG	32
#define BLK_MAX_DISCARD_SECTORS	(1U << 22)		/* 2 GiB a segment */

/*
 * Created by the main thread; config and capacity are fixed from then on.
 * Requests are served by whichever thread serves a queue (the I/O thread,
 * or a vCPU with --no-ioeventfd) under that queue's lock; the disk takes
 * positional I/O only, so queues served at once do not disturb each other.
 * iothread is the device's own, NULL when its queues are on a pool's.
 */
struct virtio_blk {
	struct virtio_device vdev;
	struct disk disk;
	struct iothread *iothread;
	bool stopped;
	struct virtio_blk_config config;
	uint64_t capacity;		/* sectors */
	/* Per queue, with io_uring; all NULL when requests are synchronous. */
	struct blk_queue *queues[VIRTIO_MAX_QUEUES];
	bool async;			/* fixed once created */
	unsigned int max_inflight;	/* of any queue; kept past its end */
	uint64_t drained;		/* in flight when a queue stopped */
	uint64_t done_now;		/* served without io_uring */
};

/*
 * A request in the kernel's hands: what its completion needs once the
 * chain it came from has left the ring's scratch arrays. The buffers are
 * guest RAM, which outlives every request (the queue drains first).
 */
struct blk_req {
	uint16_t head;
	bool write;
	bool flush;
	uint8_t *status;		/* the chain's last byte */
	uint32_t len;			/* data bytes */
	uint64_t offset;
	int nr_iov;
	struct iovec iov[BLK_SEG_MAX + 1];	/* one over: see blk_rw_map() */
};

/*
 * One queue's io_uring and its requests in flight. Used under the queue's
 * lock only: by whichever thread serves the queue, and by the queue's I/O
 * thread when the ring's fd says completions wait. Made and freed by the
 * main thread with the device.
 */
struct blk_queue {
	struct virtio_blk *blk;
	struct virtio_queue *q;
	struct disk_aio *aio;
	struct io_source done_src;
	bool done_watched;
	bool held;			/* no free slot: serve again once reaped */
	bool stopping;			/* draining: nothing reaches the ring */
	uint64_t drained;		/* requests a stop waited for */
	uint64_t done_now;		/* reads and writes that did not wait */
	uint16_t nr_free;
	uint16_t free[BLK_QUEUE_SIZE];	/* free slots, a stack */
	struct blk_req reqs[BLK_QUEUE_SIZE];
};

struct blk_req_hdr {
	uint32_t type;
	uint32_t ioprio;
	uint64_t sector;
};

/* An iovec view of [skip, skip + len) of a buffer list. */
static int chain_iov(const struct virtq_buf *bufs, unsigned int nr,
		     size_t skip, size_t len, struct iovec *iov, int max)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < nr && len; i++) {
		size_t take;

		if (skip >= bufs[i].len) {
			skip -= bufs[i].len;
			continue;
		}
		if (n == max)
			return -1;
		take = MIN(len, bufs[i].len - skip);
		iov[n].iov_base = (uint8_t *)bufs[i].hva + skip;
		iov[n].iov_len = take;
		n++;
		len -= take;
		skip = 0;
	}
	return len ? -1 : n;
}

/*
 * Within what the config space promised (seg_max segments of at most
 * size_max bytes)? A driver that ignores it gets an error, not a huge
 * bounce buffer on a `direct` disk.
 */
static bool blk_segments_ok(const struct iovec *iov, int n)
{
	int i;

	if (n > BLK_SEG_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (iov[i].iov_len > BLK_SIZE_MAX)
			return false;
	return true;
}

static bool blk_range_ok(const struct virtio_blk *blk, uint64_t sector,
			 uint64_t bytes)
{
	uint64_t end;

	return !(bytes % BLK_SECTOR) &&
	       !u64_add_overflows(sector, bytes / BLK_SECTOR, &end) &&
	       end <= blk->capacity;
}

/*
 * Check a read or write and map its data: at most BLK_SEG_MAX iovecs
 * into iov, *n of them, *len bytes. VIRTIO_BLK_S_OK or the status to fail
 * it with.
 */
static uint8_t blk_rw_map(struct virtio_blk *blk, const struct virtq_chain *c,
			  const struct blk_req_hdr *hdr, bool write,
			  struct iovec *iov, int *n, uint32_t *len)
{
	*len = write ? c->out_len - sizeof(*hdr) : c->in_len - 1;
	if (write && blk->disk.readonly)
		return VIRTIO_BLK_S_IOERR;
	/*
	 * Data goes one way: a read's data buffers must all be writable
	 * (nothing readable but the header), a write's all readable (nothing
	 * writable but the status byte).
	 */
	if (write ? c->in_len != 1 : c->out_len != sizeof(*hdr))
		return VIRTIO_BLK_S_IOERR;
	if (!blk_range_ok(blk, hdr->sector, *len))
		return VIRTIO_BLK_S_IOERR;
	/* one more than allowed, so that too many segments show */
	if (write)
		*n = chain_iov(c->out, c->nr_out, sizeof(*hdr), *len, iov,
			       BLK_SEG_MAX + 1);
	else
		*n = chain_iov(c->in, c->nr_in, 0, *len, iov, BLK_SEG_MAX + 1);
	if (*n < 0 || !blk_segments_ok(iov, *n))
		return VIRTIO_BLK_S_IOERR;
	return VIRTIO_BLK_S_OK;
}

static uint8_t blk_rw(struct virtio_blk *blk, const struct virtq_chain *c,
		      const struct blk_req_hdr *hdr, bool write,
		      uint32_t *written)
{
	struct iovec iov[BLK_SEG_MAX + 1];
	uint64_t offset = hdr->sector * BLK_SECTOR;
	uint32_t len;
	uint8_t status;
	int n, ret;

	status = blk_rw_map(blk, c, hdr, write, iov, &n, &len);
	if (status != VIRTIO_BLK_S_OK)
		return status;
	ret = write ? disk_writev(&blk->disk, iov, n, offset)
		    : disk_readv(&blk->disk, iov, n, offset);
	if (ret)
		return VIRTIO_BLK_S_IOERR;
	if (!write)
		*written += len;
	return VIRTIO_BLK_S_OK;
}

static uint8_t blk_get_id(struct virtio_blk *blk, const struct virtq_chain *c,
			  uint32_t *written)
{
	struct iovec iov[BLK_QUEUE_SIZE + 2];
	size_t len = MIN((size_t)c->in_len - 1, (size_t)DISK_SERIAL_LEN);
	const uint8_t *src = (const uint8_t *)blk->disk.serial;
	int i, n = chain_iov(c->in, c->nr_in, 0, len, iov, ARRAY_SIZE(iov));

	if (n < 0)
		return VIRTIO_BLK_S_IOERR;
	for (i = 0; i < n; i++) {
		memcpy(iov[i].iov_base, src, iov[i].iov_len);
		src += iov[i].iov_len;
	}
	*written += len;
	return VIRTIO_BLK_S_OK;
}

/* DISCARD and WRITE_ZEROES: an array of segments after the header. */
static uint8_t blk_discard(struct virtio_blk *blk, const struct virtq_chain *c,
			   bool zeroes)
{
	struct virtio_blk_discard_write_zeroes seg;
	size_t payload = c->out_len - sizeof(struct blk_req_hdr);
	size_t i, nr = payload / sizeof(seg);

	if (blk->disk.readonly)
		return VIRTIO_BLK_S_IOERR;
	if (!nr || payload % sizeof(seg) || nr > BLK_MAX_DISCARD_SEG)
		return VIRTIO_BLK_S_UNSUPP;
	for (i = 0; i < nr; i++) {
		uint64_t bytes;
		int ret;

		virtq_chain_read(c, sizeof(struct blk_req_hdr) + i * sizeof(seg),
			   &seg, sizeof(seg));
		bytes = (uint64_t)seg.num_sectors * BLK_SECTOR;
		if (!blk_range_ok(blk, seg.sector, bytes) ||
		    seg.num_sectors > BLK_MAX_DISCARD_SECTORS ||
		    (!zeroes && seg.flags) || (seg.flags & ~1u))
			return VIRTIO_BLK_S_UNSUPP;
		ret = zeroes ? disk_write_zeroes(&blk->disk,
						 seg.sector * BLK_SECTOR, bytes,
						 seg.flags & 1)
			     : disk_discard(&blk->disk, seg.sector * BLK_SECTOR,
					    bytes);
		if (ret)
			return VIRTIO_BLK_S_IOERR;
	}
	return VIRTIO_BLK_S_OK;
}

static uint8_t blk_do_request(struct virtio_blk *blk,
			      const struct virtq_chain *c,
			      const struct blk_req_hdr *hdr, uint32_t *written)
{
	switch (hdr->type) {
	case VIRTIO_BLK_T_IN:
		return blk_rw(blk, c, hdr, false, written);
	case VIRTIO_BLK_T_OUT:
		return blk_rw(blk, c, hdr, true, written);
	case VIRTIO_BLK_T_FLUSH:
		return disk_flush(&blk->disk) ? VIRTIO_BLK_S_IOERR
					      : VIRTIO_BLK_S_OK;
	case VIRTIO_BLK_T_GET_ID:
		return blk_get_id(blk, c, written);
	case VIRTIO_BLK_T_DISCARD:
		return blk_discard(blk, c, false);
	case VIRTIO_BLK_T_WRITE_ZEROES:
		return blk_discard(blk, c, true);
	default:
		return VIRTIO_BLK_S_UNSUPP;
	}
}

/* The status byte is the last byte of the last writable buffer. */
static uint8_t *blk_status_byte(const struct virtq_chain *c)
{
	const struct virtq_buf *last = &c->in[c->nr_in - 1];

	return (uint8_t *)last->hva + last->len - 1;
}

/*
 * What needs no waiting for the device is done right here, at the cost of
 * one system call (page-cache hits; writes the file system would do
 * synchronously anyway, which io_uring would only hand to a worker
 * thread). True when the request must go to io_uring after all.
 */
static bool blk_try_now(struct blk_queue *bq, const struct blk_req *req,
			uint32_t *written, uint8_t *status)
{
	int ret = disk_rw_try(&bq->blk->disk, req->iov, req->nr_iov,
			      req->offset, req->write);

	if (ret == -EAGAIN)
		return true;
	bq->done_now++;
	if (!ret && !req->write)
		*written += req->len;
	*status = ret ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
	return false;
}

/*
 * A read, write or flush for the queue's io_uring: queued for the pass's
 * one submission. Held when every slot is in flight (the queue is served
 * again as they complete); done here when it fails its checks, or when
 * its buffers need the bounce that O_DIRECT's alignment asks for.
 */
static enum virtio_chain_result blk_submit(struct blk_queue *bq,
					   const struct virtq_chain *c,
					   const struct blk_req_hdr *hdr,
					   uint32_t *written)
{
	struct virtio_blk *blk = bq->blk;
	bool flush = hdr->type == VIRTIO_BLK_T_FLUSH;
	bool write = hdr->type == VIRTIO_BLK_T_OUT;
	struct blk_req *req;
	uint16_t slot;
	bool queued;

	if (!bq->nr_free) {
		bq->held = true;
		return VIRTIO_CHAIN_HELD;
	}
	slot = bq->free[bq->nr_free - 1];
	req = &bq->reqs[slot];
	*req = (struct blk_req) {
		.head = c->head, .write = write, .flush = flush,
		.status = blk_status_byte(c),
		.offset = hdr->sector * BLK_SECTOR,
	};
	if (!flush) {
		uint8_t status = blk_rw_map(blk, c, hdr, write, req->iov,
					    &req->nr_iov, &req->len);

		if (status == VIRTIO_BLK_S_OK &&
		    !disk_iov_direct_ok(&blk->disk, req->iov, req->nr_iov,
					req->offset))
			status = blk_rw(blk, c, hdr, write, written);
		else if (status == VIRTIO_BLK_S_OK &&
			 blk_try_now(bq, req, written, &status))
			goto queue;
		*req->status = status;
		return VIRTIO_CHAIN_USED;
	}
queue:
	queued = flush ? disk_aio_prep_flush(bq->aio, slot)
		       : disk_aio_prep_rw(bq->aio, req->iov, req->nr_iov,
					  req->offset, write, slot);
	if (!queued) {
		/* the ring is as deep as the slots: not while one is free */
		bq->held = true;
		return VIRTIO_CHAIN_HELD;
	}
	bq->nr_free--;
	return VIRTIO_CHAIN_ASYNC;
}

static bool blk_is_async(const struct blk_queue *bq, uint32_t type)
{
	return bq && (type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_OUT ||
		      (type == VIRTIO_BLK_T_FLUSH &&
		       disk_flush_is_file_sync(&bq->blk->disk)));
}

static enum virtio_chain_result blk_handle(struct virtio_queue *q,
					   const struct virtq_chain *c,
					   void *opaque, uint32_t *written)
{
	struct virtio_blk *blk = opaque;
	struct blk_queue *bq = blk->queues[q->index];
	struct blk_req_hdr hdr;
	uint8_t status;

	/* Nowhere to put the status: the driver broke the protocol. */
	if (!c->nr_in || !c->in[c->nr_in - 1].len)
		return VIRTIO_CHAIN_USED;
	*written = 1;
	if (!virtq_chain_read(c, 0, &hdr, sizeof(hdr)))
		status = VIRTIO_BLK_S_IOERR;
	else if (blk_is_async(bq, hdr.type))
		return blk_submit(bq, c, &hdr, written);
	else
		status = blk_do_request(blk, c, &hdr, written);
	*blk_status_byte(c) = status;
	return VIRTIO_CHAIN_USED;
}

/* One completion: finish a short transfer, status, push; free the slot. */
static void blk_req_done(void *opaque, uint64_t tag, int res)
{
	struct blk_queue *bq = opaque;
	struct blk_req *req;
	uint32_t written = 1;
	int ret;

	if (tag >= BLK_QUEUE_SIZE)
		return;		/* not ours: the kernel returns our tags */
	req = &bq->reqs[tag];
	bq->free[bq->nr_free++] = tag;
	if (bq->stopping)
		return;		/* the driver reset it: not a word to the ring */
	if (req->flush)
		ret = res < 0 ? res : 0;
	else
		ret = disk_aio_finish(&bq->blk->disk, req->iov, req->nr_iov,
				      req->offset, req->write, req->len, res);
	if (!ret && !req->write && !req->flush)
		written += req->len;
	*req->status = ret ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
	virtq_push(&bq->q->ring, req->head, written);
}

/* Submit what the pass queued, push what is done; caller publishes. */
static unsigned int blk_submit_and_reap(struct blk_queue *bq)
{
	int ret = disk_aio_submit(bq->aio);

	if (ret)
		pr_warn_ratelimited("virtio-blk: '%s': io_uring submit: %s",
				    bq->blk->disk.path, strerror(-ret));
	return disk_aio_reap(bq->aio, false, blk_req_done, bq);
}

static void blk_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_blk *blk = vdev->priv;
	struct blk_queue *bq = blk->queues[q->index];

	if (!bq) {
		virtio_queue_serve(vdev, q, blk_handle, blk);
		return;
	}
	/* what completed since: published with the pass */
	disk_aio_reap(bq->aio, false, blk_req_done, bq);
	bq->held = false;
	virtio_queue_serve(vdev, q, blk_handle, blk);
	/* and what the kernel finished while it took the submission */
	if (blk_submit_and_reap(bq))
		virtio_queue_publish(vdev, q);
}

/* The queue's I/O thread: its ring has completions. */
static void blk_aio_ready(struct io_source *src, uint32_t events)
{
	struct blk_queue *bq = src->opaque;
	struct virtio_queue *q = bq->q;
	unsigned int reaped;

	pthread_mutex_lock(&q->lock);
	bq->stopping = !q->live;	/* stopped queues drained already */
	reaped = blk_submit_and_reap(bq);
	bq->stopping = false;
	if (reaped && q->live) {
		virtio_queue_publish(q->vdev, q);
		if (bq->held)
			blk_queue_kick(q->vdev, q);
	}
	pthread_mutex_unlock(&q->lock);
}

/*
 * Under q->lock, before the ring goes: wait for every request in flight,
 * and let none of them write a status or a used entry.
 */
static void blk_queue_stop(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_blk *blk = vdev->priv;
	struct blk_queue *bq = blk->queues[q->index];

	if (!bq)
		return;
	bq->stopping = true;
	disk_aio_submit(bq->aio);
	bq->drained += disk_aio_reap(bq->aio, true, blk_req_done, bq);
	bq->stopping = false;
	bq->held = false;
}

/* Read at exit, once the I/O threads are stopped. */
static void blk_write_stats(struct virtio_device *vdev, FILE *f)
{
	struct virtio_blk *blk = vdev->priv;
	unsigned int i, max = blk->max_inflight;
	uint64_t drained = blk->drained, done_now = blk->done_now;
	bool served = false;

	for (i = 0; i < vdev->nr_queues; i++) {
		if (blk->queues[i]) {
			max = MAX(max, disk_aio_max_inflight(blk->queues[i]->aio));
			drained += blk->queues[i]->drained;
			done_now += blk->queues[i]->done_now;
		}
		served |= vdev->queues[i].requests != 0;
	}
	if (!blk->async)
		max = served;	/* one at a time */
	fprintf(f, "\"aio\":\"%s\",\"max_inflight\":%u,"
		"\"done_without_waiting\":%llu,\"drained_at_stop\":%llu",
		blk->async ? "io_uring" : "sync", max,
		(unsigned long long)done_now, (unsigned long long)drained);
}

static const struct virtio_device_ops blk_ops = {
	.name = "blk",
	.device_id = VIRTIO_ID_BLOCK,
	.queue_kick = blk_queue_kick,
	.queue_stop = blk_queue_stop,
	.write_stats = blk_write_stats,
	/* no config_written: nothing in our config space is writable */
};

static void blk_fill_config(struct virtio_blk *blk, unsigned int nr_queues)
{
	struct virtio_blk_config *c = &blk->config;

	c->capacity = blk->capacity;
	c->size_max = BLK_SIZE_MAX;
	c->seg_max = BLK_SEG_MAX;
	c->blk_size = BLK_SECTOR;
	c->num_queues = nr_queues;
	c->max_discard_sectors = BLK_MAX_DISCARD_SECTORS;
	c->max_discard_seg = BLK_MAX_DISCARD_SEG;
	c->discard_sector_alignment = 4096 / BLK_SECTOR;
	c->max_write_zeroes_sectors = BLK_MAX_DISCARD_SECTORS;
	c->max_write_zeroes_seg = BLK_MAX_DISCARD_SEG;
	c->write_zeroes_may_unmap = 1;
}

static uint64_t blk_features(const struct virtio_blk *blk, unsigned int nr_queues)
{
	uint64_t f = (1ULL << VIRTIO_BLK_F_SIZE_MAX) |
		     (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		     (1ULL << VIRTIO_BLK_F_BLK_SIZE) |
		     (1ULL << VIRTIO_BLK_F_FLUSH);

	if (blk->disk.readonly)
		f |= 1ULL << VIRTIO_BLK_F_RO;
	else
		f |= (1ULL << VIRTIO_BLK_F_DISCARD) |
		     (1ULL << VIRTIO_BLK_F_WRITE_ZEROES);
	if (nr_queues > 1)
		f |= 1ULL << VIRTIO_BLK_F_MQ;
	return f;
}

/* A queue's io_uring, its completions watched by the queue's thread. */
static struct blk_queue *blk_queue_create(struct virtio_blk *blk,
					  struct virtio_queue *q)
{
	struct blk_queue *bq = calloc(1, sizeof(*bq));
	unsigned int i;

	if (!bq)
		return NULL;
	bq->aio = disk_aio_create(&blk->disk, BLK_QUEUE_SIZE);
	if (!bq->aio) {
		free(bq);
		return NULL;
	}
	bq->blk = blk;
	bq->q = q;
	for (i = 0; i < BLK_QUEUE_SIZE; i++)
		bq->free[i] = BLK_QUEUE_SIZE - 1 - i;
	bq->nr_free = BLK_QUEUE_SIZE;
	bq->done_src = (struct io_source) {
		.fd = disk_aio_fd(bq->aio), .handler = blk_aio_ready,
		.opaque = bq,
	};
	return bq;
}

/* Threads stopped and queues drained (virtio_device_stop()). */
static void blk_queue_destroy(struct blk_queue *bq)
{
	if (!bq)
		return;
	if (bq->done_watched)
		iothread_del(bq->q->iothread, &bq->done_src);
	disk_aio_destroy(bq->aio);
	free(bq);
}

/*
 * io_uring for every queue, as asked: aio=io_uring fails without it; by
 * default the disk is served synchronously, with a note saying why.
 */
static int blk_setup_aio(struct virtio_blk *blk, enum disk_aio_mode mode)
{
	unsigned int i;

	if (mode == DISK_AIO_SYNC)
		return 0;
	for (i = 0; i < blk->vdev.nr_queues; i++) {
		struct virtio_queue *q = &blk->vdev.queues[i];
		struct blk_queue *bq = blk_queue_create(blk, q);

		if (!bq)
			goto no_uring;
		blk->queues[i] = bq;
		if (iothread_add(q->iothread, &bq->done_src, EPOLLIN))
			return -1;
		bq->done_watched = true;
	}
	blk->async = true;
	return 0;
no_uring:
	if (mode == DISK_AIO_URING) {
		pr_err("disk '%s': aio=io_uring: %s", blk->disk.path,
		       strerror(errno));
		return -1;
	}
	pr_warn("disk '%s': io_uring refused (%s): one request at a time (aio=sync asks for that quietly)",
		blk->disk.path, strerror(errno));
	for (i = 0; i < blk->vdev.nr_queues; i++) {
		blk_queue_destroy(blk->queues[i]);
		blk->queues[i] = NULL;
	}
	return 0;
}

/* Its own thread for every queue, or the pool's threads in turn. */
static void blk_bind_queues(struct virtio_blk *blk,
			    struct iothread_pool *pool)
{
	unsigned int i;

	for (i = 0; i < blk->vdev.nr_queues; i++) {
		if (pool)
			blk->vdev.queues[i].iothread = iothread_pool_next(pool);
		virtio_queue_allow_poll(&blk->vdev, i);
	}
}

static void blk_free_queues(struct virtio_blk *blk)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		if (blk->queues[i]) {
			blk->max_inflight = MAX(blk->max_inflight,
				disk_aio_max_inflight(blk->queues[i]->aio));
			blk->drained += blk->queues[i]->drained;
			blk->done_now += blk->queues[i]->done_now;
		}
		blk_queue_destroy(blk->queues[i]);
		blk->queues[i] = NULL;
	}
}

struct virtio_blk *virtio_blk_create(struct vm *vm,
				     const struct virtio_blk_options *opts)
{
	struct virtio_blk *blk = vm_zalloc(vm, sizeof(*blk));
	unsigned int nr_queues = MAX(opts->nr_queues, 1u);

	if (!blk) {
		disk_close(opts->disk);
		return NULL;
	}
	disk_move(&blk->disk, opts->disk);
	blk->capacity = blk->disk.size / BLK_SECTOR;
	if (!opts->pool) {
		blk->iothread = iothread_create(vm, "blk-io");
		if (!blk->iothread)
			goto fail;
	}
	if (virtio_device_init(&blk->vdev, vm, &blk_ops, blk, nr_queues,
			       BLK_QUEUE_SIZE, blk->iothread,
			       opts->use_ioeventfd))
		goto fail;
	virtio_device_set_poll(&blk->vdev, &opts->poll);
	blk_bind_queues(blk, opts->pool);
	if (blk_setup_aio(blk, blk->disk.aio))
		goto fail;
	blk->vdev.host_features |= blk_features(blk, nr_queues);
	blk_fill_config(blk, nr_queues);
	blk->vdev.config = (uint8_t *)&blk->config;
	blk->vdev.config_size = sizeof(blk->config);
	if (blk->iothread && iothread_start(blk->iothread))
		goto fail;
	return blk;
fail:
	iothread_destroy(blk->iothread);
	blk->iothread = NULL;
	blk->stopped = true;
	blk_free_queues(blk);
	disk_close(&blk->disk);
	return NULL;
}

/*
 * Its own thread stops here; pool threads must have stopped before (the
 * caller's), so that no thread serves a queue being torn down.
 */
void virtio_blk_destroy(struct virtio_blk *blk)
{
	if (!blk || blk->stopped)
		return;
	iothread_stop(blk->iothread);
	virtio_device_stop(&blk->vdev);
	blk_free_queues(blk);
	iothread_destroy(blk->iothread);
	blk->iothread = NULL;
	disk_close(&blk->disk);
	blk->stopped = true;
}

struct virtio_device *virtio_blk_device(struct virtio_blk *blk)
{
	return &blk->vdev;
}
