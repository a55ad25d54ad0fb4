// SPDX-License-Identifier: GPL-2.0
/*
 * The raw format: the guest's disk is the file, byte for byte, so every
 * request goes to the file as it is, and may go through io_uring.
 *
 * A raw image that was probed (opened without format=) is only raw as long
 * as its first bytes say nothing else: a guest that wrote a qcow2 header
 * into its sector 0 would have its next open take the disk for a qcow2
 * image, with a backing file of the guest's choosing (any host file). So
 * a write reaching those bytes is judged on what they would hold after it
 * (the write merged into what is there now) and refused when any other
 * format's probe would take them (QEMU refuses the same). Such writes are
 * judged and done one at a time, never through io_uring. Zeroes cannot
 * make a format's magic: discard and write-zeroes are not judged.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "format.h"

/* A probed, writable raw image's guard; the layer's ctx says against what. */
struct raw_guard {
	const struct disk_format *const *others;	/* probes to fail */
	unsigned int nr_others;
	pthread_mutex_t lock;		/* one header write at a time */
};

static int raw_open(struct disk *disk, struct disk_open_ctx *ctx)
{
	struct raw_guard *g;

	disk->size = disk->file.size;
	if (disk->size % 512)
		pr_warn("disk '%s': size is not a multiple of 512 bytes; the tail is not visible",
			disk->path);
	if (!ctx->nr_guard || disk->readonly)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g) {
		pr_err("disk '%s': out of memory", disk->path);
		return -1;
	}
	g->others = ctx->guard;
	g->nr_others = ctx->nr_guard;
	pthread_mutex_init(&g->lock, NULL);
	disk->fmt_state = g;
	return 0;
}

static void raw_close(struct disk *disk)
{
	struct raw_guard *g = disk->fmt_state;

	if (!g)
		return;
	pthread_mutex_destroy(&g->lock);
	free(g);
	disk->fmt_state = NULL;
}

/*
 * The format the image's first bytes would say after writing iov at
 * offset; NULL: still raw. *err on a failed read.
 */
static const struct disk_format *
raw_head_after(struct disk *disk, const struct iovec *iov, int iovcnt,
	       uint64_t offset, int *err)
{
	struct raw_guard *g = disk->fmt_state;
	struct disk_file_head head;
	ssize_t n = disk_file_read_head(&disk->file, &head);
	size_t len, pos = offset;
	unsigned int i;
	int k;

	*err = n < 0 ? (int)n : 0;
	if (n < 0)
		return NULL;
	len = MIN((size_t)n, (size_t)DISK_PROBE_BYTES);
	memset(head.b + len, 0, DISK_PROBE_BYTES - len);	/* a hole */
	for (k = 0; k < iovcnt && pos < DISK_PROBE_BYTES; k++) {
		size_t take = MIN(iov[k].iov_len, DISK_PROBE_BYTES - pos);

		memcpy(head.b + pos, iov[k].iov_base, take);
		pos += take;
		len = MAX(len, pos);
	}
	for (i = 0; i < g->nr_others; i++)
		if (g->others[i] != disk->fmt && g->others[i]->probe &&
		    g->others[i]->probe(head.b, len))
			return g->others[i];
	return NULL;
}

/* A write that reaches the first bytes of a guarded image. */
static int raw_write_head(struct disk *disk, const struct iovec *iov,
			  int iovcnt, uint64_t offset)
{
	struct raw_guard *g = disk->fmt_state;
	const struct disk_format *would;
	int ret;

	pthread_mutex_lock(&g->lock);
	would = raw_head_after(disk, iov, iovcnt, offset, &ret);
	if (!would && !ret)
		ret = disk_file_rw(&disk->file, iov, iovcnt, offset, true);
	pthread_mutex_unlock(&g->lock);
	if (would) {
		pr_warn_ratelimited("disk '%s': refused a guest write that would make the raw image look like %s on its next open (format=raw allows it)",
				    disk->path, would->name);
		return -EPERM;
	}
	return ret;
}

static bool raw_guarded(const struct disk *disk, bool write, uint64_t offset)
{
	return write && disk->fmt_state && offset < DISK_PROBE_BYTES;
}

static int raw_rw(struct disk *disk, const struct iovec *iov, int iovcnt,
		  uint64_t offset, bool write)
{
	if (raw_guarded(disk, write, offset))
		return raw_write_head(disk, iov, iovcnt, offset);
	return disk_file_rw(&disk->file, iov, iovcnt, offset, write);
}

static int raw_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		      uint64_t offset, bool write)
{
	if (raw_guarded(disk, write, offset))
		return raw_write_head(disk, iov, iovcnt, offset);
	return disk_file_rw_try(&disk->file, iov, iovcnt, offset, write);
}

static int raw_discard(struct disk *disk, uint64_t offset, uint64_t len)
{
	return disk_file_discard(&disk->file, offset, len);
}

static int raw_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
			    bool may_unmap)
{
	return disk_file_write_zeroes(&disk->file, offset, len, may_unmap);
}

const struct disk_format disk_raw_format = {
	.name = "raw",
	.open = raw_open,
	.close = raw_close,
	.rw = raw_rw,
	.rw_try = raw_rw_try,
	.discard = raw_discard,
	.write_zeroes = raw_write_zeroes,
};
