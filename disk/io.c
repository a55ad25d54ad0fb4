// SPDX-License-Identifier: GPL-2.0
/*
 * The requests of lkvm/disk.h, each sent to the disk's format (its ops
 * table, disk/format.h); an empty discard or zero range is nothing to do
 * in any format.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "lkvm/disk.h"
#include "format.h"

int disk_readv(struct disk *disk, const struct iovec *iov, int iovcnt,
	       uint64_t offset)
{
	return disk->fmt->rw(disk, iov, iovcnt, offset, false);
}

int disk_writev(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset)
{
	return disk->fmt->rw(disk, iov, iovcnt, offset, true);
}

int disk_rw_rest(struct disk *disk, const struct iovec *iov, int iovcnt,
		 uint64_t offset, bool write, size_t done)
{
	struct iovec rest[IOV_MAX], *p = rest;

	if (iovcnt > IOV_MAX)
		return -EINVAL;
	memcpy(rest, iov, iovcnt * sizeof(*iov));
	if (!disk_iov_advance(&p, &iovcnt, done))
		return 0;
	return disk->fmt->rw(disk, p, iovcnt, offset + done, write);
}

int disk_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset, bool write)
{
	if (disk->fmt->rw_try)
		return disk->fmt->rw_try(disk, iov, iovcnt, offset, write);
	return disk->fmt->rw(disk, iov, iovcnt, offset, write);
}

bool disk_iov_direct_ok(const struct disk *disk, const struct iovec *iov,
			int iovcnt, uint64_t offset)
{
	return disk_file_iov_ok(&disk->file, iov, iovcnt, offset);
}

int disk_flush(struct disk *disk)
{
	if (disk->fmt->flush)
		return disk->fmt->flush(disk);
	return disk_file_flush(&disk->file);
}

bool disk_flush_is_file_sync(struct disk *disk)
{
	if (!disk->fmt->flush)
		return true;
	return disk->fmt->holds_writes && !disk->fmt->holds_writes(disk);
}

int disk_discard(struct disk *disk, uint64_t offset, uint64_t len)
{
	if (!len)
		return 0;
	return disk->fmt->discard(disk, offset, len);
}

/* A zero-length range is nothing to do (fallocate() would refuse it). */
int disk_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
		      bool may_unmap)
{
	if (!len)
		return 0;
	return disk->fmt->write_zeroes(disk, offset, len, may_unmap);
}
