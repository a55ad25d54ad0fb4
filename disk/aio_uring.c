// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring for disk requests (liburing). The ring is sized for every
 * request a virtqueue can have in flight; completions are counted so that
 * draining (a reset, the VM's end) knows when nothing is left in the
 * kernel's hands that could still write into guest memory.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

#include "lkvm/disk_aio.h"
#include "lkvm/util.h"

/*
 * Owned by one virtqueue and used only under its lock (see disk_aio.h);
 * the counters are read for --stats once the I/O threads have stopped.
 */
struct disk_aio {
	struct io_uring ring;
	struct disk *disk;
	unsigned int queued;		/* prepared, not yet submitted */
	unsigned int inflight;		/* submitted, not yet reaped */
	unsigned int max_inflight;
};

struct disk_aio *disk_aio_create(struct disk *disk, unsigned int depth)
{
	struct disk_aio *aio = calloc(1, sizeof(*aio));
	int ret;

	if (!aio)
		return NULL;
	ret = io_uring_queue_init(depth, &aio->ring, 0);
	if (ret < 0) {
		free(aio);
		errno = -ret;
		return NULL;
	}
	aio->disk = disk;
	return aio;
}

void disk_aio_destroy(struct disk_aio *aio)
{
	if (!aio)
		return;
	disk_aio_submit(aio);
	disk_aio_reap(aio, true, NULL, NULL);
	io_uring_queue_exit(&aio->ring);
	free(aio);
}

int disk_aio_fd(const struct disk_aio *aio)
{
	return aio->ring.ring_fd;
}

static struct io_uring_sqe *disk_aio_sqe(struct disk_aio *aio)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&aio->ring);

	if (!sqe)
		return NULL;
	aio->queued++;
	return sqe;
}

/* After the prep helper, which clears the flags. */
static void disk_aio_sqe_finish(struct io_uring_sqe *sqe, uint64_t tag,
				unsigned int flags)
{
	io_uring_sqe_set_flags(sqe, flags);
	io_uring_sqe_set_data64(sqe, tag);
}

bool disk_aio_prep_rw(struct disk_aio *aio, const struct iovec *iov, int n,
		      uint64_t offset, bool write, uint64_t tag)
{
	struct io_uring_sqe *sqe = disk_aio_sqe(aio);

	if (!sqe)
		return false;
	if (write)
		io_uring_prep_writev(sqe, aio->disk->file.fd, iov, n, offset);
	else
		io_uring_prep_readv(sqe, aio->disk->file.fd, iov, n, offset);
	disk_aio_sqe_finish(sqe, tag, 0);
	return true;
}

bool disk_aio_prep_flush(struct disk_aio *aio, uint64_t tag)
{
	struct io_uring_sqe *sqe = disk_aio_sqe(aio);

	if (!sqe)
		return false;
	io_uring_prep_fsync(sqe, aio->disk->file.fd, IORING_FSYNC_DATASYNC);
	/* FLUSH covers the writes before it: let them finish first */
	disk_aio_sqe_finish(sqe, tag, IOSQE_IO_DRAIN);
	return true;
}

int disk_aio_submit(struct disk_aio *aio)
{
	int ret;

	if (!aio->queued)
		return 0;
	do {
		ret = io_uring_submit(&aio->ring);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	aio->queued -= MIN((unsigned int)ret, aio->queued);
	aio->inflight += ret;
	aio->max_inflight = MAX(aio->max_inflight, aio->inflight);
	return 0;
}

unsigned int disk_aio_reap(struct disk_aio *aio, bool wait,
			   disk_aio_done_fn done, void *opaque)
{
	unsigned int reaped = 0;

	while (aio->inflight) {
		struct io_uring_cqe *cqe;
		int ret = wait ? io_uring_wait_cqe(&aio->ring, &cqe)
			       : io_uring_peek_cqe(&aio->ring, &cqe);

		if (ret == -EINTR)
			continue;
		if (ret < 0)
			break;	/* -EAGAIN: none yet */
		if (done)
			done(opaque, io_uring_cqe_get_data64(cqe), cqe->res);
		io_uring_cqe_seen(&aio->ring, cqe);
		aio->inflight--;
		reaped++;
	}
	return reaped;
}

unsigned int disk_aio_inflight(const struct disk_aio *aio)
{
	return aio->inflight;
}

unsigned int disk_aio_max_inflight(const struct disk_aio *aio)
{
	return aio->max_inflight;
}

int disk_aio_finish(struct disk *disk, const struct iovec *iov, int n,
		    uint64_t offset, bool write, size_t len, int res)
{
	if (res < 0)
		return res;
	if ((size_t)res >= len)
		return 0;
	if (!res && !write)
		return -EIO;	/* the image shrank under us */
	return disk_rw_rest(disk, iov, n, offset, write, res);
}
