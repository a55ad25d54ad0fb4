// SPDX-License-Identifier: GPL-2.0
/*
 * A driver that resets virtio-blk with requests still in the kernel's
 * hands (io_uring): the reset waits for every one of them, and none of
 * their completions reaches the ring or a status byte afterwards; the
 * device then starts again with every request slot free. The image is
 * opened O_DIRECT, so the reads really are in flight (on the disk, not
 * copied from the page cache while the I/O thread submits them).
 *
 * And where io_uring is refused (a seccomp policy above lkvm, as container
 * runtimes have), a disk is served synchronously by default, while an
 * explicit aio=io_uring fails to start.
 */
#include <errno.h>
#include <linux/virtio_blk.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "blk_rig.h"

#define NR_REQ		64
#define REQ_BYTES	(64 * 1024)
#define BLOCKS		(NR_REQ * REQ_BYTES / 4096)
#define HDR_OFF		RING_AREA		/* 16 bytes each */
#define STATUS_OFF	(HDR_OFF + 0x1000)	/* one byte each */
#define DATA_OFF	0x100000
#define MEM_SIZE	(DATA_OFF + NR_REQ * REQ_BYTES)
#define WAIT_MS		5000
#define TRIES		20

static int setup(void **state)
{
	struct blk_rig *r = calloc(1, sizeof(*r));
	struct virtio_poll_config poll = { .mode = VIRTIO_POLL_OFF };

	assert_non_null(r);
	r->direct = true;
	blk_rig_start(r, BLOCKS, MEM_SIZE, &poll, 0, WAIT_MS);
	*state = r;
	return 0;
}

/* Request i: read REQ_BYTES at i * REQ_BYTES into its own buffer. */
static void post_read(struct ring_driver *rd, unsigned int i)
{
	struct virtio_blk_outhdr *hdr = (void *)(rd->mem + HDR_OFF + 16 * i);
	uint16_t d = 3 * i;

	*hdr = (struct virtio_blk_outhdr) {
		.type = VIRTIO_BLK_T_IN,
		.sector = (uint64_t)i * REQ_BYTES / 512,
	};
	rd->mem[STATUS_OFF + i] = 0xff;
	rd->desc[d] = (struct vring_desc) {
		.addr = ring_gpa(HDR_OFF + 16 * i), .len = sizeof(*hdr),
		.flags = VRING_DESC_F_NEXT, .next = d + 1,
	};
	rd->desc[d + 1] = (struct vring_desc) {
		.addr = ring_gpa(DATA_OFF + (size_t)i * REQ_BYTES),
		.len = REQ_BYTES,
		.flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, .next = d + 2,
	};
	rd->desc[d + 2] = (struct vring_desc) {
		.addr = ring_gpa(STATUS_OFF + i), .len = 1,
		.flags = VRING_DESC_F_WRITE,
	};
	ring_driver_add(rd, d);
}

static uint64_t drained_at_stop(struct virtio_device *vdev)
{
	char *text = NULL, *at;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	uint64_t n;

	assert_non_null(f);
	vdev->ops->write_stats(vdev, f);
	fclose(f);
	at = strstr(text, "\"drained_at_stop\":");
	assert_non_null(at);
	n = strtoull(at + strlen("\"drained_at_stop\":"), NULL, 10);
	free(text);
	return n;
}

/* Back to a fresh driver: rings zeroed, device started again. */
static void restart(struct blk_rig *r)
{
	struct ring_driver *rd = &r->rd;

	memset(rd->mem, 0, RING_AREA);
	rd->avail_idx = rd->last_used = 0;
	assert_int_equal(ring_driver_start(rd, 0, 1), 0);
}

/*
 * Post every read, wait until the device has taken them all (and so
 * submitted them: that happens under the queue's lock, which the reset
 * takes next), reset. What the ring and the status bytes say right after
 * the reset must stay so.
 */
static uint16_t reset_with_reads_in_flight(struct blk_rig *r)
{
	struct ring_driver *rd = &r->rd;
	uint8_t status[NR_REQ];
	struct timespec ms = { 0, 1000 * 1000 };
	uint64_t before = __atomic_load_n(&r->q->requests, __ATOMIC_RELAXED);
	uint16_t old = rd->avail_idx, used;
	unsigned int i, waited;

	for (i = 0; i < NR_REQ; i++)
		post_read(rd, i);
	ring_driver_publish(rd, old);
	for (waited = 0; __atomic_load_n(&r->q->requests, __ATOMIC_RELAXED) -
			 before < NR_REQ; waited++) {
		assert_true(waited < WAIT_MS);
		nanosleep(&ms, NULL);
	}
	virtio_set_status(rd->vdev, 0);
	used = __atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE);
	memcpy(status, rd->mem + STATUS_OFF, NR_REQ);
	for (i = 0; i < 50; i++) {
		nanosleep(&ms, NULL);
		assert_int_equal(rd->used->idx, used);
		assert_memory_equal(rd->mem + STATUS_OFF, status, NR_REQ);
	}
	return used;
}

static void test_reset_waits_for_requests_in_flight(void **state)
{
	struct blk_rig *r = *state;
	unsigned int tries;
	uint64_t drained = 0;

	/* Each try resets with some of 64 direct reads not done yet. */
	for (tries = 0; tries < TRIES && !drained; tries++) {
		reset_with_reads_in_flight(r);
		drained = drained_at_stop(r->rd.vdev);
		restart(r);
	}
	assert_true(drained > 0);
	print_message("%llu requests were in flight at a reset (%u tries)\n",
		      (unsigned long long)drained, tries);
}

/* After such resets every slot is free again: a full ring is served. */
static void test_device_whole_after_resets(void **state)
{
	struct blk_rig *r = *state;
	struct ring_driver *rd = &r->rd;
	unsigned int i, round;

	for (round = 0; round < 3; round++) {
		reset_with_reads_in_flight(r);
		restart(r);
	}
	for (round = 0; round < 5; round++) {
		uint16_t old = rd->avail_idx;

		for (i = 0; i < NR_REQ; i++)
			post_read(rd, i);
		ring_driver_publish(rd, old);
		while (rd->last_used != rd->avail_idx) {
			while (__atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE)
			       == rd->last_used)
				ring_driver_wait(rd);
			rd->last_used = rd->used->idx;
		}
		for (i = 0; i < NR_REQ; i++) {
			const uint32_t *w = (const void *)(rd->mem + DATA_OFF +
							   (size_t)i * REQ_BYTES);

			assert_int_equal(rd->mem[STATUS_OFF + i],
					 VIRTIO_BLK_S_OK);
			assert_int_equal(w[0], i * REQ_BYTES / 4096);
			assert_int_equal(w[REQ_BYTES / 4 - 1],
					 (i + 1) * REQ_BYTES / 4096 - 1);
		}
	}
	assert_int_equal(virtio_get_status(rd->vdev) &
			 VIRTIO_CONFIG_S_NEEDS_RESET, 0);
}

/*
 * In a child with io_uring_setup refused: 0 when the device comes up
 * (on its synchronous path) or, with mode DISK_AIO_URING, refuses to;
 * anything else says what went wrong. No cmocka in the child.
 */
static int child_without_io_uring(enum disk_aio_mode mode)
{
	struct blk_rig r = { 0 };
	struct disk_params dc = { .aio = mode };
	struct virtio_blk_options opts = {
		.nr_queues = 1, .use_ioeventfd = true,
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct virtio_blk *blk;
	struct disk disk;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int fd;

	virtio_poll_config_default(&opts.poll);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				     SCMP_SYS(io_uring_setup), 0) ||
	    seccomp_load(ctx))
		return 10;
	snprintf(r.path, sizeof(r.path), "/tmp/lkvm-test-blk-XXXXXX");
	fd = mkstemp(r.path);
	if (fd < 0 || ftruncate(fd, 1 << 20))
		return 11;
	close(fd);
	dc.path = r.path;
	if (fake_vm_init(&r.fake, 0, 1) ||
	    ring_driver_init(&r.rd, &r.fake.vm, 1 << 20, WAIT_MS) ||
	    disk_open(&disk, &dc))
		return 12;
	opts.disk = &disk;
	blk = virtio_blk_create(&r.fake.vm, &opts);
	unlink(r.path);
	if (mode == DISK_AIO_URING)
		return blk ? 13 : 0;
	if (!blk)
		return 14;
	f = open_memstream(&text, &len);
	virtio_blk_device(blk)->ops->write_stats(virtio_blk_device(blk), f);
	fclose(f);
	virtio_blk_destroy(blk);
	return strstr(text, "\"aio\":\"sync\"") ? 0 : 15;
}

static int run_child_without_io_uring(enum disk_aio_mode mode)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(child_without_io_uring(mode));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_no_io_uring_default_is_sync(void **state)
{
	assert_int_equal(run_child_without_io_uring(DISK_AIO_DEFAULT), 0);
}

static void test_no_io_uring_explicit_fails(void **state)
{
	assert_int_equal(run_child_without_io_uring(DISK_AIO_URING), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_reset_waits_for_requests_in_flight, setup,
			blk_rig_teardown),
		cmocka_unit_test_setup_teardown(test_device_whole_after_resets,
						setup, blk_rig_teardown),
		cmocka_unit_test(test_no_io_uring_default_is_sync),
		cmocka_unit_test(test_no_io_uring_explicit_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
