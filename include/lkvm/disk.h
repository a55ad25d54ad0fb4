/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Disk images for virtio-blk, whatever their format: raw files and block
 * devices, or qcow2 images. A disk is opened from its own small set of
 * parameters (struct disk_params: nothing of virtio in it), its format
 * named by format= or found by probing its first bytes, over the file
 * layer (lkvm/disk_file.h). Requests go to the format; those a format
 * passes through as they are may reach the file through io_uring
 * (lkvm/disk_aio.h) instead of one synchronous call at a time.
 */
#ifndef LKVM_DISK_H
#define LKVM_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lkvm/disk_file.h"

struct disk_format;

#define DISK_SERIAL_LEN		20	/* VIRTIO_BLK_ID_BYTES */

/* The engine: how the device's requests reach the image's file. */
enum disk_aio_mode {
	DISK_AIO_DEFAULT,	/* io_uring where the kernel allows it, else sync */
	DISK_AIO_SYNC,		/* one request at a time, preadv/pwritev */
	DISK_AIO_URING,		/* io_uring, or an error if there is none */
};

/* The image's format: detected from its header unless forced. */
enum disk_format_id {
	DISK_FORMAT_AUTO,
	DISK_FORMAT_RAW,
	DISK_FORMAT_QCOW2,
};

/* What a disk is opened from (-d's own part of it, or a test's). */
struct disk_params {
	const char *path;
	/*
	 * backing-dir=: backing files may come from there too, not only from
	 * the directory of the image that names them. NULL: none.
	 */
	const char *backing_dir;
	bool readonly;
	bool direct;			/* O_DIRECT: bypass the host page cache */
	enum disk_aio_mode aio;		/* aio= */
	enum disk_format_id format;	/* format= */
};

/*
 * Owned by its device and fixed after disk_open(), but for the file's
 * nowait flags (lkvm/disk_file.h); requests come from whichever threads
 * serve the device's queues, the format serialising what it must.
 */
struct disk {
	struct disk_file file;
	const struct disk_format *fmt;	/* NULL: not open */
	void *fmt_state;		/* the format's (qcow2's tables) */
	struct disk *backing;		/* in fmt_state; the layer opens it */
	const char *path;
	char *own_path;			/* a backing file's: path, resolved */
	uint64_t size;			/* what the guest sees, bytes */
	bool readonly;
	enum disk_aio_mode aio;
	char serial[DISK_SERIAL_LEN];	/* stable: from the image's identity */
};

/*
 * The keys of -d the disk does not know (the device's poll=) go to the
 * caller's parse(): 0 when it took the key, -1 when it refused it (after
 * its message), 1 when it does not know it either.
 */
struct disk_option_extra {
	const char *keys;		/* for the message: "poll=" */
	int (*parse)(void *opaque, const char *arg, const char *key,
		     size_t len);
	void *opaque;
};

/*
 * Parse "PATH[,ro][,direct][,aio=io_uring|sync][,format=raw|qcow2]
 * [,backing-dir=DIR]" and the extra keys into *p, its strings kept in buf;
 * -1 with a message when malformed. extra may be NULL.
 */
int disk_parse_option(const char *arg, struct disk_params *p, char *buf,
		      size_t size, const struct disk_option_extra *extra);
int disk_open(struct disk *disk, const struct disk_params *p);
/* NULL, never opened, or moved away: nothing to do. */
void disk_close(struct disk *disk);
/* Hand an open disk over to *to, leaving *from closed. */
void disk_move(struct disk *to, struct disk *from);

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
 * buffered writes wait at most for writeback to catch up), or whatever
 * the format does itself. -EAGAIN when it would wait (then nothing was
 * done that matters: queue it on the disk's io_uring, disk_aio.h); else
 * 0 or -errno.
 */
int disk_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset, bool write);
/* Can the kernel take these buffers as they are (O_DIRECT alignment)? */
bool disk_iov_direct_ok(const struct disk *disk, const struct iovec *iov,
			int iovcnt, uint64_t offset);
int disk_flush(struct disk *disk);
/*
 * Is a flush now the file's data sync and nothing more, so that an engine
 * may queue it as one (io_uring's fsync)? It covers the writes completed
 * before it was asked. Else disk_flush() must do it.
 */
bool disk_flush_is_file_sync(struct disk *disk);
/* Deallocate (discard) or zero a range; -errno on failure. */
int disk_discard(struct disk *disk, uint64_t offset, uint64_t len);
int disk_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
		      bool may_unmap);

#endif
