// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk. Each queue is served on the device's I/O thread: pop every
 * available request, do its I/O with vectored positional calls straight
 * into guest memory, push, and publish once per pass (one used->idx store,
 * at most one interrupt). While a pass runs the driver is asked not to
 * kick; the re-check after re-enabling closes the lost-kick window.
 */
#include <errno.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lkvm/disk.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "lkvm/virtio/device.h"
#include "lkvm/vm.h"

#define BLK_SECTOR		512ULL
#define PCI_CLASS_STORAGE_SCSI	0x010000
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
};

struct blk_req_hdr {
	uint32_t type;
	uint32_t ioprio;
	uint64_t sector;
};

/* Copy `len` bytes from the start of a chain's readable buffers. */
static bool chain_read(const struct virtq_chain *c, size_t skip, void *dst,
		       size_t len)
{
	uint8_t *out = dst;
	unsigned int i;

	for (i = 0; i < c->nr_out && len; i++) {
		size_t n;

		if (skip >= c->out[i].len) {
			skip -= c->out[i].len;
			continue;
		}
		n = MIN(len, c->out[i].len - skip);
		memcpy(out, (uint8_t *)c->out[i].hva + skip, n);
		out += n;
		len -= n;
		skip = 0;
	}
	return !len;
}

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

static uint8_t blk_rw(struct virtio_blk *blk, const struct virtq_chain *c,
		      const struct blk_req_hdr *hdr, bool write,
		      uint32_t *written)
{
	struct iovec iov[BLK_QUEUE_SIZE + 2];
	size_t len = write ? c->out_len - sizeof(*hdr) : c->in_len - 1;
	int n, ret;

	if (write && blk->disk.readonly)
		return VIRTIO_BLK_S_IOERR;
	/*
	 * Data goes one way: a read's data buffers must all be writable
	 * (nothing readable but the header), a write's all readable (nothing
	 * writable but the status byte).
	 */
	if (write ? c->in_len != 1 : c->out_len != sizeof(*hdr))
		return VIRTIO_BLK_S_IOERR;
	if (!blk_range_ok(blk, hdr->sector, len))
		return VIRTIO_BLK_S_IOERR;
	if (write)
		n = chain_iov(c->out, c->nr_out, sizeof(*hdr), len, iov,
			      ARRAY_SIZE(iov));
	else
		n = chain_iov(c->in, c->nr_in, 0, len, iov, ARRAY_SIZE(iov));
	if (n < 0 || !blk_segments_ok(iov, n))
		return VIRTIO_BLK_S_IOERR;
	ret = write ? disk_writev(&blk->disk, iov, n, hdr->sector * BLK_SECTOR)
		    : disk_readv(&blk->disk, iov, n, hdr->sector * BLK_SECTOR);
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

		chain_read(c, sizeof(struct blk_req_hdr) + i * sizeof(seg),
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
static void blk_put_status(const struct virtq_chain *c, uint8_t status)
{
	const struct virtq_buf *last = &c->in[c->nr_in - 1];

	((uint8_t *)last->hva)[last->len - 1] = status;
}

static enum virtio_chain_result blk_handle(struct virtio_queue *q,
					   const struct virtq_chain *c,
					   void *opaque, uint32_t *written)
{
	struct virtio_blk *blk = opaque;
	struct blk_req_hdr hdr;
	uint8_t status;

	/* Nowhere to put the status: the driver broke the protocol. */
	if (!c->nr_in || !c->in[c->nr_in - 1].len)
		return VIRTIO_CHAIN_USED;
	*written = 1;
	if (!chain_read(c, 0, &hdr, sizeof(hdr)))
		status = VIRTIO_BLK_S_IOERR;
	else
		status = blk_do_request(blk, c, &hdr, written);
	blk_put_status(c, status);
	return VIRTIO_CHAIN_USED;
}

static void blk_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	virtio_queue_serve(vdev, q, blk_handle, vdev->priv);
}

static const struct virtio_device_ops blk_ops = {
	.name = "blk",
	.device_id = VIRTIO_ID_BLOCK,
	.queue_kick = blk_queue_kick,
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

struct virtio_blk *virtio_blk_create(struct vm *vm,
				     const struct virtio_blk_options *opts)
{
	struct virtio_blk *blk = vm_zalloc(vm, sizeof(*blk));
	unsigned int nr_queues = MAX(opts->nr_queues, 1u);

	if (!blk) {
		disk_close(opts->disk);
		return NULL;
	}
	blk->disk = *opts->disk;
	opts->disk->fd = -1;	/* ours now */
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
	blk->vdev.host_features |= blk_features(blk, nr_queues);
	blk_fill_config(blk, nr_queues);
	blk->vdev.config = (uint8_t *)&blk->config;
	blk->vdev.config_size = sizeof(blk->config);
	if (virtio_transport_attach(vm, &blk->vdev, opts->transport,
				    PCI_CLASS_STORAGE_SCSI,
				    opts->custom_transport,
				    opts->custom_transport_priv) ||
	    (blk->iothread && iothread_start(blk->iothread)))
		goto fail;
	return blk;
fail:
	iothread_destroy(blk->iothread);
	blk->iothread = NULL;
	blk->stopped = true;
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
	iothread_destroy(blk->iothread);
	blk->iothread = NULL;
	disk_close(&blk->disk);
	blk->stopped = true;
}

struct virtio_device *virtio_blk_device(struct virtio_blk *blk)
{
	return &blk->vdev;
}
