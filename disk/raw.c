// SPDX-License-Identifier: GPL-2.0
/*
 * The raw format: the guest's disk is the file, byte for byte, so every
 * request goes to the file as it is, and may go through io_uring.
 */
#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "format.h"

static int raw_open(struct disk *disk, struct disk_open_ctx *ctx)
{
	disk->size = disk->file.size;
	if (disk->size % 512)
		pr_warn("disk '%s': size is not a multiple of 512 bytes; the tail is not visible",
			disk->path);
	return 0;
}

static int raw_rw(struct disk *disk, const struct iovec *iov, int iovcnt,
		  uint64_t offset, bool write)
{
	return disk_file_rw(&disk->file, iov, iovcnt, offset, write);
}

static int raw_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		      uint64_t offset, bool write)
{
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
	.rw = raw_rw,
	.rw_try = raw_rw_try,
	.discard = raw_discard,
	.write_zeroes = raw_write_zeroes,
};
