// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring for disk requests (liburing). The ring is sized for every
 * request a virtqueue can have in flight; completions are counted so that
 * draining (a reset, the VM's end) knows when nothing is left in the
 * kernel's hands that could still write into guest memory.
 *
 * A ring is a way into the kernel that seccomp does not see: whoever can
 * write its submission queue could open files or sockets with it. So each
 * ring is made disabled, given the disk's file as its one fixed file and
 * restricted (Linux 5.10) to what disks need, readv, writev and fsync on
 * that fixed file, with no register call allowed afterwards, and only
 * then enabled.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

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

#define AIO_FIXED_FD	0	/* the disk's file: the ring's only one */

/*
 * io_uring_register(2) itself: liburing 2.3 declares its restriction and
 * enable helpers but its library does not export them. 0 or -errno.
 */
static int aio_register(struct io_uring *ring, unsigned int op,
			const void *arg, unsigned int nr)
{
	return syscall(__NR_io_uring_register, ring->ring_fd, op, arg, nr) < 0
	       ? -errno : 0;
}

/*
 * A disabled ring's restrictions: the opcodes disk_aio_prep_*() use, on
 * the fixed file only (IOSQE_FIXED_FILE required: no other fd can be
 * named); FLUSH's drain is the one other flag. No register opcode is
 * listed, so none is allowed once the ring is enabled.
 */
static int aio_restrict(struct io_uring *ring)
{
	struct io_uring_restriction res[] = {
		{ .opcode = IORING_RESTRICTION_SQE_OP,
		  .sqe_op = IORING_OP_READV },
		{ .opcode = IORING_RESTRICTION_SQE_OP,
		  .sqe_op = IORING_OP_WRITEV },
		{ .opcode = IORING_RESTRICTION_SQE_OP,
		  .sqe_op = IORING_OP_FSYNC },
		{ .opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED,
		  .sqe_flags = IOSQE_FIXED_FILE },
		{ .opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED,
		  .sqe_flags = IOSQE_IO_DRAIN },
	};

	return aio_register(ring, IORING_REGISTER_RESTRICTIONS, res,
			    ARRAY_SIZE(res));
}

/* A confined ring of `depth` entries on fd (-1: none, for the check). */
static int aio_ring_init(struct io_uring *ring, unsigned int depth, int fd)
{
	int ret = io_uring_queue_init(depth, ring, IORING_SETUP_R_DISABLED);

	if (ret < 0)
		return ret;
	if (fd >= 0)
		ret = io_uring_register_files(ring, &fd, 1);
	if (!ret)
		ret = aio_restrict(ring);
	if (!ret)
		ret = aio_register(ring, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (ret < 0)
		io_uring_queue_exit(ring);
	return ret;
}

int disk_aio_check(void)
{
	struct io_uring ring;
	int ret = aio_ring_init(&ring, 1, -1);

	if (!ret) {
		io_uring_queue_exit(&ring);
		return 0;
	}
	if (ret != -EINVAL)
		return ret;	/* io_uring itself refused */
	/* a kernel before 5.10: rings, but no R_DISABLED or restrictions */
	ret = io_uring_queue_init(1, &ring, 0);
	if (ret < 0)
		return ret;
	io_uring_queue_exit(&ring);
	return -EOPNOTSUPP;
}

struct disk_aio *disk_aio_create(struct disk *disk, unsigned int depth)
{
	struct disk_aio *aio = calloc(1, sizeof(*aio));
	int fd, ret;

	if (!aio)
		return NULL;
	/* the ring keeps the file; our fd of it is not needed */
	ret = fd = disk_file_reopen(&disk->file);
	if (fd >= 0) {
		ret = aio_ring_init(&aio->ring, depth, fd);
		close(fd);
	}
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
	io_uring_sqe_set_flags(sqe, flags | IOSQE_FIXED_FILE);
	io_uring_sqe_set_data64(sqe, tag);
}

bool disk_aio_prep_rw(struct disk_aio *aio, const struct iovec *iov, int n,
		      uint64_t offset, bool write, uint64_t tag)
{
	struct io_uring_sqe *sqe = disk_aio_sqe(aio);

	if (!sqe)
		return false;
	if (write)
		io_uring_prep_writev(sqe, AIO_FIXED_FD, iov, n, offset);
	else
		io_uring_prep_readv(sqe, AIO_FIXED_FD, iov, n, offset);
	disk_aio_sqe_finish(sqe, tag, 0);
	return true;
}

bool disk_aio_prep_flush(struct disk_aio *aio, uint64_t tag)
{
	struct io_uring_sqe *sqe = disk_aio_sqe(aio);

	if (!sqe)
		return false;
	io_uring_prep_fsync(sqe, AIO_FIXED_FD, IORING_FSYNC_DATASYNC);
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
