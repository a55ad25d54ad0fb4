// SPDX-License-Identifier: GPL-2.0
/*
 * The io_uring engine's rings (disk/aio_uring.c) are confined. Code that
 * got hold of a ring (a memory-corruption bug in lkvm) can write requests
 * straight into its submission queue, past every seccomp filter: the
 * kernel must refuse each one (-EACCES) that is not a readv, writev or
 * fsync on the disk's own file, and every register call, while the disk's
 * own requests keep working. Where a kernel cannot restrict rings, the
 * disk is served synchronously (aio=io_uring refuses to open).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/disk_aio.h"
#include "lkvm/util.h"

#define DEPTH		8
#define IMAGE_SIZE	(1 << 20)

struct fixture {
	char path[64];		/* the disk */
	char other[64];		/* a file the disk has nothing to do with */
	int other_fd;
	struct disk disk;
	struct disk_aio *aio;
};

static void make_file(char *path, size_t size, const char *name, int byte)
{
	uint8_t buf[4096];
	int fd;

	snprintf(path, 64, "/tmp/lkvm-test-aio-%s-%d", name, getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_true(fd >= 0);
	memset(buf, byte, sizeof(buf));
	for (size_t done = 0; done < size; done += sizeof(buf))
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct disk_params p = { 0 };

	assert_non_null(f);
	make_file(f->path, IMAGE_SIZE, "disk", 0);
	make_file(f->other, 4096, "secret", 's');
	f->other_fd = open(f->other, O_RDONLY);
	assert_true(f->other_fd >= 0);
	p.path = f->path;
	assert_int_equal(disk_open(&f->disk, &p), 0);
	f->aio = disk_aio_create(&f->disk, DEPTH);
	assert_non_null(f->aio);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	disk_aio_destroy(f->aio);
	disk_close(&f->disk);
	close(f->other_fd);
	unlink(f->path);
	unlink(f->other);
	free(f);
	return 0;
}

static void save_res(void *opaque, uint64_t tag, int res)
{
	((int *)opaque)[tag] = res;
}

/* The disk's own requests: a write, a flush, a read of what was written. */
static void own_requests(struct fixture *f)
{
	static uint8_t out[8192], in[8192];
	struct iovec wiov = { out, sizeof(out) }, riov = { in, sizeof(in) };
	int res[3] = { -1, -1, -1 };

	memset(out, 0x5c, sizeof(out));
	assert_true(disk_aio_prep_rw(f->aio, &wiov, 1, 65536, true, 0));
	assert_true(disk_aio_prep_flush(f->aio, 1));
	assert_int_equal(disk_aio_submit(f->aio), 0);
	assert_int_equal(disk_aio_reap(f->aio, true, save_res, res), 2);
	assert_int_equal(res[0], sizeof(out));
	assert_int_equal(res[1], 0);
	assert_true(disk_aio_prep_rw(f->aio, &riov, 1, 65536, false, 2));
	assert_int_equal(disk_aio_submit(f->aio), 0);
	assert_int_equal(disk_aio_reap(f->aio, true, save_res, res), 1);
	assert_int_equal(res[2], sizeof(in));
	assert_memory_equal(in, out, sizeof(in));
}

/*
 * The disk's ring as its fd gives it away: mapped a second time, with the
 * offsets the kernel gives any ring of its size, past what the first
 * mapping (disk_aio's own) has submitted.
 */
static void map_ring(struct fixture *f, struct io_uring *ring)
{
	struct io_uring_params p = { 0 };
	struct io_uring twin;
	int fd = dup(disk_aio_fd(f->aio));

	assert_true(fd >= 0);
	assert_int_equal(io_uring_queue_init_params(DEPTH, &twin, &p), 0);
	io_uring_queue_exit(&twin);
	assert_int_equal(io_uring_queue_mmap(fd, &p, ring), 0);
	ring->sq.sqe_head = ring->sq.sqe_tail = *ring->sq.ktail;
}

/* One raw request on the ring, as prep() and flags make it: its result. */
static int submit_one(struct io_uring *ring, unsigned int flags,
		      void (*prep)(struct io_uring_sqe *, void *), void *arg)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	bool makes_fd;
	int res;

	assert_non_null(sqe);
	prep(sqe, arg);
	io_uring_sqe_set_flags(sqe, flags);
	makes_fd = sqe->opcode != IORING_OP_READV;
	assert_int_equal(io_uring_submit(ring), 1);
	assert_int_equal(io_uring_wait_cqe(ring, &cqe), 0);
	res = cqe->res;
	if (res >= 0 && makes_fd)
		close(res);	/* an fd it should never have had */
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static void prep_openat(struct io_uring_sqe *sqe, void *path)
{
	io_uring_prep_openat(sqe, AT_FDCWD, path, O_RDONLY, 0);
}

static void prep_socket(struct io_uring_sqe *sqe, void *unused)
{
	io_uring_prep_socket(sqe, AF_INET, SOCK_STREAM, 0, 0);
}

struct read_req {
	int fd;
	struct iovec iov;
};

static void prep_read(struct io_uring_sqe *sqe, void *arg)
{
	struct read_req *r = arg;

	io_uring_prep_readv(sqe, r->fd, &r->iov, 1, 0);
}

static void test_ring_refuses_foreign_requests(void **state)
{
	struct fixture *f = *state;
	char buf[64] = { 0 };
	struct read_req other = { f->other_fd, { buf, sizeof(buf) } };
	struct read_req fixed = { 0, { buf, sizeof(buf) } };
	struct read_req fixed1 = { 1, { buf, sizeof(buf) } };
	struct io_uring ring;
	int spare = dup(f->other_fd);

	own_requests(f);
	map_ring(f, &ring);
	/* files and sockets: no such opcode, with or without a fixed file */
	assert_int_equal(submit_one(&ring, 0, prep_openat, f->other), -EACCES);
	assert_int_equal(submit_one(&ring, IOSQE_FIXED_FILE, prep_openat,
				    f->other), -EACCES);
	assert_int_equal(submit_one(&ring, 0, prep_socket, NULL), -EACCES);
	assert_int_equal(submit_one(&ring, IOSQE_FIXED_FILE, prep_socket,
				    NULL), -EACCES);
	/* a read of any fd but the fixed disk file, or with other flags */
	assert_int_equal(submit_one(&ring, 0, prep_read, &other), -EACCES);
	assert_true(submit_one(&ring, IOSQE_FIXED_FILE, prep_read, &fixed1) < 0);
	assert_int_equal(submit_one(&ring, IOSQE_FIXED_FILE | IOSQE_ASYNC,
				    prep_read, &fixed), -EACCES);
	assert_int_equal(submit_one(&ring, IOSQE_FIXED_FILE | IOSQE_IO_LINK,
				    prep_read, &fixed), -EACCES);
	assert_memory_equal(buf, (char[sizeof(buf)]){ 0 }, sizeof(buf));
	/* and no register call: no other file can become the fixed one */
	assert_int_equal(io_uring_register_files(&ring, &spare, 1), -EACCES);
	assert_int_equal(io_uring_register_files_update(&ring, 0, &spare, 1),
			 -EACCES);
	/* the mapping itself works: the disk's own file reads through it */
	assert_int_equal(submit_one(&ring, IOSQE_FIXED_FILE, prep_read, &fixed),
			 sizeof(buf));
	io_uring_queue_exit(&ring);
	close(spare);
}

/*
 * In a child whose io_uring_register refuses IORING_REGISTER_RESTRICTIONS
 * as a kernel before 5.10 does: 0 when the disk opens for aio=default on
 * the synchronous engine and refuses aio=io_uring, else what went wrong.
 */
static int child_old_kernel(const char *path)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct disk_params p = { .path = path };
	struct disk d;

	log_threshold = LOG_SILENT;	/* aio=io_uring's refusal */
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL),
				     SCMP_SYS(io_uring_register), 1,
				     SCMP_A1(SCMP_CMP_EQ,
					     IORING_REGISTER_RESTRICTIONS)) ||
	    seccomp_load(ctx))
		return 10;
	if (disk_aio_check() != -EOPNOTSUPP)
		return 11;
	if (disk_open(&d, &p))
		return 12;
	if (d.aio != DISK_AIO_SYNC)
		return 13;
	disk_close(&d);
	p.aio = DISK_AIO_URING;
	if (!disk_open(&d, &p))
		return 14;
	return 0;
}

static void test_old_kernel_serves_disks_synchronously(void **state)
{
	struct fixture *f = *state;
	int status;
	pid_t pid;

	assert_int_equal(disk_aio_check(), 0);
	assert_int_equal(f->disk.aio, DISK_AIO_DEFAULT);
	disk_aio_destroy(f->aio);	/* the child opens the disk itself */
	f->aio = NULL;
	disk_close(&f->disk);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(child_old_kernel(f->path));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_ring_refuses_foreign_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_old_kernel_serves_disks_synchronously, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
