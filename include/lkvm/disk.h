/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Disk images for virtio-blk: raw files, block devices and qcow2 images
 * (lkvm/qcow2.h), opened and locked (a read lock for read-only users and
 * backing files, a write lock otherwise, as OFD locks so that two lkvm
 * processes cannot corrupt one image).
 */
#ifndef LKVM_DISK_H
#define LKVM_DISK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lkvm/virtio/poll.h"

struct qcow2;

#define DISK_SERIAL_LEN		20	/* VIRTIO_BLK_ID_BYTES */

/* How virtio-blk reaches the image. */
enum disk_aio_mode {
	DISK_AIO_DEFAULT,	/* io_uring where the kernel allows it, else sync */
	DISK_AIO_SYNC,		/* one request at a time, preadv/pwritev */
	DISK_AIO_URING,		/* io_uring, or an error if there is none */
};

/* The image's format: detected from its header unless forced. */
enum disk_format {
	DISK_FORMAT_AUTO,
	DISK_FORMAT_RAW,
	DISK_FORMAT_QCOW2,
};

struct disk_config {
	const char *path;		/* points at path_buf after parsing */
	char path_buf[4096];
	bool readonly;
	bool direct;			/* O_DIRECT: bypass the host page cache */
	enum virtio_poll_mode poll;	/* poll=; VIRTIO_POLL_UNSET: --poll's */
	enum disk_aio_mode aio;		/* aio= */
	enum disk_format format;	/* format= */
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
	/*
	 * Does the file system take RWF_NOWAIT (page-cache hits without
	 * blocking)? Assumed until it says EOPNOTSUPP; any queue's thread
	 * may clear them (atomically, relaxed: a stale true costs one call).
	 */
	bool nowait_read, nowait_write;
	char serial[DISK_SERIAL_LEN];	/* stable: from the image's identity */
	struct qcow2 *qcow2;		/* NULL: raw */
};

/*
 * Parse "PATH[,ro][,direct][,poll=MODE][,aio=io_uring|sync]
 * [,format=raw|qcow2]"; -1 with a message when malformed.
 */
int disk_parse_option(const char *arg, struct disk_config *cfg);

int disk_open(struct disk *disk, const struct disk_config *cfg);
/* The same for an image's backing file, `depth` files down the chain. */
int disk_open_nested(struct disk *disk, const struct disk_config *cfg,
		     unsigned int depth);
void disk_close(struct disk *disk);

/* Whole transfers (short I/O is retried); -errno on failure. */
int disk_readv(struct disk *disk, const struct iovec *iov, int iovcnt,
	       uint64_t offset);
int disk_writev(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset);
/* The rest of a transfer of which the first `done` bytes were moved. */
int disk_rw_rest(struct disk *disk, const struct iovec *iov, int iovcnt,
		 uint64_t offset, bool write, size_t done);
/*
 * Do a read or write at once if it need not wait for the device: from
 * and into the page cache with RWF_NOWAIT, or plainly where the file
 * system takes no RWF_NOWAIT (tmpfs never waits for a device; ext4's
 * buffered writes wait at most for writeback to catch up). -EAGAIN when
 * it would wait (then nothing was done that matters: do it again
 * asynchronously); else 0 or -errno.
 */
int disk_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset, bool write);
/* Can the kernel take these buffers as they are (O_DIRECT alignment)? */
bool disk_iov_direct_ok(const struct disk *disk, const struct iovec *iov,
			int iovcnt, uint64_t offset);
int disk_flush(struct disk *disk);
/* Deallocate (discard) or zero a range; -errno on failure. */
int disk_discard(struct disk *disk, uint64_t offset, uint64_t len);
int disk_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
		      bool may_unmap);

#endif
