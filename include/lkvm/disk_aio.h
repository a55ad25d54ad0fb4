/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Asynchronous disk I/O through io_uring: one submission ring per
 * virtqueue, so a queue can have as many requests in flight as the guest
 * posts (up to the ring's depth) instead of one at a time. Requests are
 * prepared as the serve loop pops them, submitted with one system call per
 * pass, and reaped by the thread that owns the queue: its ring fd is
 * readable while completions wait.
 *
 * A disk_aio is not thread-safe: its owner (a virtqueue) serialises every
 * call under its own lock.
 */
#ifndef LKVM_DISK_AIO_H
#define LKVM_DISK_AIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "lkvm/disk.h"

struct disk_aio;

/*
 * Can rings be confined here (Linux 5.10)? 0; -EOPNOTSUPP when the kernel
 * makes rings but cannot restrict them; else the -errno io_uring gave.
 */
int disk_aio_check(void);
/*
 * A ring of `depth` entries on disk, confined to readv, writev and fsync
 * on the disk's file; NULL with errno set when the kernel (or a seccomp
 * policy above us) refuses io_uring.
 */
struct disk_aio *disk_aio_create(struct disk *disk, unsigned int depth);
/* Waits for every request in flight, then frees the ring. NULL is fine. */
void disk_aio_destroy(struct disk_aio *aio);
/* Readable (EPOLLIN) while completions wait to be reaped. */
int disk_aio_fd(const struct disk_aio *aio);

/*
 * Queue a request for the next disk_aio_submit(); false when the ring has
 * no free entry. `tag` comes back with its completion. The iovecs must
 * stay valid until the request completes (a short transfer is finished
 * from them, see disk_aio_finish()).
 */
bool disk_aio_prep_rw(struct disk_aio *aio, const struct iovec *iov, int n,
		      uint64_t offset, bool write, uint64_t tag);
/* A data sync that starts once every request queued before it is done. */
bool disk_aio_prep_flush(struct disk_aio *aio, uint64_t tag);
/* Hand everything queued to the kernel; -errno if it refused. */
int disk_aio_submit(struct disk_aio *aio);

/* res: bytes moved or -errno, as the kernel reported it. */
typedef void (*disk_aio_done_fn)(void *opaque, uint64_t tag, int res);
/*
 * Reap completions: what is there now, or (wait) every request in flight.
 * Returns how many were reaped.
 */
unsigned int disk_aio_reap(struct disk_aio *aio, bool wait,
			   disk_aio_done_fn done, void *opaque);
unsigned int disk_aio_inflight(const struct disk_aio *aio);
/* The most requests ever in the kernel's hands at once (for --stats). */
unsigned int disk_aio_max_inflight(const struct disk_aio *aio);

/*
 * A read or write the kernel completed with res bytes of `len`: 0 when
 * whole, else the rest done synchronously (a short transfer), or -errno.
 */
int disk_aio_finish(struct disk *disk, const struct iovec *iov, int n,
		    uint64_t offset, bool write, size_t len, int res);

#endif
