/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Disk images for virtio-blk: raw files and block devices, opened and
 * locked (a read lock for read-only users, a write lock otherwise, as OFD
 * locks so that two lkvm processes cannot corrupt one image).
 */
#ifndef LKVM_DISK_H
#define LKVM_DISK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lkvm/virtio/poll.h"

#define DISK_SERIAL_LEN		20	/* VIRTIO_BLK_ID_BYTES */

struct disk_config {
	const char *path;		/* points at path_buf after parsing */
	char path_buf[4096];
	bool readonly;
	bool direct;			/* O_DIRECT: bypass the host page cache */
	enum virtio_poll_mode poll;	/* poll=; VIRTIO_POLL_UNSET: --poll's */
};

/*
 * Owned by its device and fixed after disk_open(); the fd sees positional
 * I/O only, from whichever threads serve the device's queues.
 */
struct disk {
	int fd;
	const char *path;
	uint64_t size;			/* bytes */
	bool readonly;
	bool is_block_device;
	bool direct;			/* O_DIRECT: I/O must be aligned */
	unsigned int align;		/* O_DIRECT memory/offset alignment */
	char serial[DISK_SERIAL_LEN];	/* stable: from the image's identity */
};

/* Parse "PATH[,ro][,direct][,poll=MODE]"; -1 with a message when malformed. */
int disk_parse_option(const char *arg, struct disk_config *cfg);

int disk_open(struct disk *disk, const struct disk_config *cfg);
void disk_close(struct disk *disk);

/* Whole transfers (short I/O is retried); -errno on failure. */
int disk_readv(struct disk *disk, const struct iovec *iov, int iovcnt,
	       uint64_t offset);
int disk_writev(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset);
int disk_flush(struct disk *disk);
/* Deallocate (discard) or zero a range; -errno on failure. */
int disk_discard(struct disk *disk, uint64_t offset, uint64_t len);
int disk_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
		      bool may_unmap);

#endif
