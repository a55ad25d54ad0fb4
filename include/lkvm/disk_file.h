/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file under a disk image, whatever its format: a regular file or a
 * block device, opened and locked (a read lock for read-only users and
 * backing files, a write lock otherwise, as OFD locks so that two lkvm
 * processes cannot corrupt one image), and the synchronous engine that
 * moves bytes to and from it: vectored positional I/O, whole transfers,
 * O_DIRECT's alignment met with a bounce buffer, RWF_NOWAIT page-cache
 * hits, hole punching and zero ranges. The io_uring engine
 * (lkvm/disk_aio.h) queues requests on the same fd.
 */
#ifndef LKVM_DISK_FILE_H
#define LKVM_DISK_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/*
 * Owned by its disk and fixed once open, but for the nowait flags; the fd
 * sees positional I/O only, from whichever threads serve the device.
 */
struct disk_file {
	int fd;				/* -1: closed */
	const char *path;
	uint64_t size;			/* bytes */
	dev_t dev;			/* the image's identity */
	ino_t ino;
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
};

#define DISK_FILE_READONLY	(1u << 0)
#define DISK_FILE_DIRECT	(1u << 1)	/* O_DIRECT */
/* A regular file only (a backing file): opened without blocking on a
 * FIFO or following a symbolic link. */
#define DISK_FILE_REGULAR	(1u << 2)

/* Open, check (a file or a block device) and lock; -1 with one line. */
int disk_file_open(struct disk_file *f, const char *path, unsigned int how);
void disk_file_close(struct disk_file *f);
/*
 * The same file again, as an open file description of its own that holds
 * no lock (for an io_uring's fixed file, which outlives the process by
 * the kernel's teardown of the ring: the image's lock must not); -errno.
 */
int disk_file_reopen(const struct disk_file *f);

/*
 * The first DISK_FILE_HEAD bytes of the file, or as many as there are,
 * into a disk_file_head (aligned for O_DIRECT; no allocation: I/O threads
 * may not make the calls malloc may make): how many, or -errno.
 */
#define DISK_FILE_HEAD	4096
struct disk_file_head {
	uint8_t b[DISK_FILE_HEAD];
} __attribute__((aligned(DISK_FILE_HEAD)));
ssize_t disk_file_read_head(struct disk_file *f, struct disk_file_head *h);

/* Whole transfers (short I/O is retried); -errno on failure. */
int disk_file_rw(struct disk_file *f, const struct iovec *iov, int iovcnt,
		 uint64_t offset, bool write);
/*
 * At once if it need not wait for the device (see disk_rw_try()):
 * -EAGAIN when it would.
 */
int disk_file_rw_try(struct disk_file *f, const struct iovec *iov,
		     int iovcnt, uint64_t offset, bool write);
/* Can the kernel take these buffers as they are (O_DIRECT alignment)? */
bool disk_file_iov_ok(const struct disk_file *f, const struct iovec *iov,
		      int iovcnt, uint64_t offset);
int disk_file_flush(struct disk_file *f);
int disk_file_discard(struct disk_file *f, uint64_t offset, uint64_t len);
int disk_file_write_zeroes(struct disk_file *f, uint64_t offset,
			   uint64_t len, bool may_unmap);

/* Advance an iovec array past `done` bytes; the iovecs left. */
int disk_iov_advance(struct iovec **iov, int *iovcnt, size_t done);

#endif
