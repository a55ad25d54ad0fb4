// SPDX-License-Identifier: GPL-2.0
/*
 * The raw format (disk/raw.c) on tmpfs. WRITE_ZEROES and DISCARD, whose
 * fallocate() has no ZERO_RANGE there: zeroes must still read back, with
 * or without leave to unmap, and an empty range is nothing to do rather
 * than an error (fallocate() refuses a zero length).
 *
 * And the guard of a probed raw image (no format=): no guest write, in
 * whole or in part, by any path (the synchronous one, disk_rw_try()'s,
 * which feeds io_uring, with or without O_DIRECT), may leave the image's
 * first bytes saying qcow2, or its next open would take a host file the
 * guest named for its disk; the refusal is said in a line that a guest
 * cannot repeat without bound. format=raw writes them as they come.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"

#define IMAGE_SIZE	(1 << 20)

struct fixture {
	char path[64];
	struct disk disk;
};

static int open_image(void **state, enum disk_format_id format, bool direct)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct disk_params cfg = { .format = format, .direct = direct };
	int fd;

	assert_non_null(f);
	snprintf(f->path, sizeof(f->path), "/dev/shm/lkvm-test-disk-%d",
		 getpid());
	fd = open(f->path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_true(fd >= 0);
	for (int i = 0; i < IMAGE_SIZE / 4096; i++) {
		uint8_t block[4096];

		memset(block, 0xa5, sizeof(block));
		assert_int_equal(write(fd, block, sizeof(block)), 4096);
	}
	close(fd);
	cfg.path = f->path;
	assert_int_equal(disk_open(&f->disk, &cfg), 0);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return open_image(state, DISK_FORMAT_AUTO, false);
}

static int setup_direct(void **state)
{
	return open_image(state, DISK_FORMAT_AUTO, true);
}

static int setup_format_raw(void **state)
{
	return open_image(state, DISK_FORMAT_RAW, false);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	disk_close(&f->disk);
	unlink(f->path);
	free(f);
	return 0;
}

/* Bytes [off, off + len) are 0 and their neighbours still 0xa5. */
static void assert_zeroed(struct fixture *f, off_t off, size_t len)
{
	uint8_t buf[3 * 4096];

	assert_true(off >= 4096 && len <= 4096);
	assert_int_equal(pread(f->disk.file.fd, buf, sizeof(buf), off - 4096),
			 sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++) {
		bool inside = i >= 4096 && i < 4096 + len;

		assert_int_equal(buf[i], inside ? 0 : 0xa5);
	}
}

static void test_write_zeroes_without_zero_range(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(disk_write_zeroes(&f->disk, 8192, 4096, false), 0);
	assert_zeroed(f, 8192, 4096);
	assert_int_equal(disk_write_zeroes(&f->disk, 65536, 512, true), 0);
	assert_zeroed(f, 65536, 512);
}

static void test_empty_ranges_are_nothing_to_do(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(disk_write_zeroes(&f->disk, 8192, 0, false), 0);
	assert_int_equal(disk_discard(&f->disk, 8192, 0), 0);
	assert_zeroed(f, 8192, 0);
}

/* ---- the guard of a probed raw image ---- */

/* The first sector of a qcow2 image: the magic and version 3 do it. */
static void qcow2_sector(uint8_t *s)
{
	static const uint8_t head[] = { 'Q', 'F', 'I', 0xfb, 0, 0, 0, 3 };

	memset(s, 0, 512);
	memcpy(s, head, sizeof(head));
}

static int write_at(struct fixture *f, const void *buf, size_t len,
		    uint64_t off, bool try)
{
	static uint8_t block[4096] __attribute__((aligned(4096)));
	struct iovec iov = { block, len };

	memcpy(block, buf, len);
	return try ? disk_rw_try(&f->disk, &iov, 1, off, true)
		   : disk_writev(&f->disk, &iov, 1, off);
}

static void assert_bytes(struct fixture *f, uint64_t off, const void *want,
			 size_t len)
{
	uint8_t got[512];

	assert_true(len <= sizeof(got));
	assert_int_equal(pread(f->disk.file.fd, got, len, off), len);
	assert_memory_equal(got, want, len);
}

/* The image opened again, as the next `lkvm run` would: still raw? */
static void assert_still_raw(struct fixture *f)
{
	struct disk_params p = { .path = f->path };
	struct disk again;
	int fd = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

	disk_close(&f->disk);		/* its lock */
	dup2(null, STDERR_FILENO);	/* what a qcow2 open would say */
	assert_int_equal(disk_open(&again, &p), 0);
	dup2(fd, STDERR_FILENO);
	close(fd);
	close(null);
	assert_int_equal(again.size, IMAGE_SIZE);
	disk_close(&again);
}

static void test_probed_raw_refuses_a_qcow2_header(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[4096] = { 0 }, old[512], data[512];

	qcow2_sector(hdr);
	memset(old, 0xa5, sizeof(old));
	assert_int_equal(write_at(f, hdr, 512, 0, false), -EPERM);
	assert_int_equal(write_at(f, hdr, 512, 0, true), -EPERM);
	/* 4 KiB from sector 0 on: judged by its first sector */
	assert_int_equal(write_at(f, hdr, sizeof(hdr), 0, false), -EPERM);
	assert_bytes(f, 0, old, sizeof(old));
	/* the same bytes anywhere else, and plain data at 0, are data */
	assert_int_equal(write_at(f, hdr, 512, 512, false), 0);
	assert_bytes(f, 512, hdr, 512);
	memset(data, 0x3c, sizeof(data));
	assert_int_equal(write_at(f, data, 512, 0, true), 0);
	assert_bytes(f, 0, data, sizeof(data));
	/* zeroes say no format: harmless */
	assert_int_equal(disk_write_zeroes(&f->disk, 0, 4096, true), 0);
	assert_still_raw(f);
}

/* Each part fine alone; what counts is the sector they leave together. */
static void test_partial_writes_are_judged_merged(void **state)
{
	struct fixture *f = *state;
	static const uint8_t magic[4] = { 'Q', 'F', 'I', 0xfb };
	uint8_t hdr[512];
	struct iovec split[2];

	assert_int_equal(write_at(f, magic, 2, 0, false), 0);
	assert_int_equal(write_at(f, magic + 2, 2, 2, false), -EPERM);
	assert_int_equal(write_at(f, magic + 2, 2, 2, true), -EPERM);
	assert_bytes(f, 0, (uint8_t[]){ 'Q', 'F', 0xa5, 0xa5 }, 4);
	assert_int_equal(write_at(f, (uint8_t[]){ 0, 0 }, 2, 0, false), 0);
	assert_int_equal(write_at(f, magic + 2, 2, 2, false), 0);
	assert_int_equal(write_at(f, magic, 2, 0, true), -EPERM);
	assert_bytes(f, 0, (uint8_t[]){ 0, 0, 'I', 0xfb }, 4);
	/* a header in two buffers of one request */
	qcow2_sector(hdr);
	split[0] = (struct iovec){ hdr, 3 };
	split[1] = (struct iovec){ hdr + 3, 509 };
	assert_int_equal(disk_writev(&f->disk, split, 2, 0), -EPERM);
	assert_int_equal(disk_rw_try(&f->disk, split, 2, 0, true), -EPERM);
	assert_still_raw(f);
}

/* O_DIRECT: disk_rw_try() would hand the write to io_uring (-EAGAIN). */
static void test_direct_header_write_never_reaches_io_uring(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[512], data[512];

	qcow2_sector(hdr);
	assert_int_equal(write_at(f, hdr, 512, 0, true), -EPERM);
	memset(data, 0x3c, sizeof(data));
	assert_int_equal(write_at(f, data, 512, 0, true), 0);
	assert_bytes(f, 0, data, sizeof(data));
	/* past the first sector, a direct write goes to io_uring as before */
	assert_int_equal(write_at(f, hdr, 512, 4096, true), -EAGAIN);
	assert_still_raw(f);
}

/* stderr into a file for the length of a call. */
static int stderr_to(const char *path)
{
	int saved = dup(STDERR_FILENO);
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, STDERR_FILENO);
	close(fd);
	return saved;
}

static void test_refusals_are_said_rate_limited(void **state)
{
	struct fixture *f = *state;
	char log[80], text[4096] = "";
	uint8_t hdr[512];
	int saved, fd, lines = 0;
	const char *p;

	qcow2_sector(hdr);
	snprintf(log, sizeof(log), "/dev/shm/lkvm-test-disk-log-%d", getpid());
	saved = stderr_to(log);
	for (int i = 0; i < 50; i++)
		write_at(f, hdr, 512, 0, i & 1);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	assert_true(read(fd, text, sizeof(text) - 1) > 0);
	close(fd);
	unlink(log);
	for (p = text; (p = strstr(p, "refused a guest write")); p++)
		lines++;
	assert_in_range(lines, 1, LOG_BURST);
	assert_non_null(strstr(text, f->path));
	assert_non_null(strstr(text, "qcow2"));
}

static void test_format_raw_writes_any_header(void **state)
{
	struct fixture *f = *state;
	uint8_t hdr[512];

	qcow2_sector(hdr);
	assert_int_equal(write_at(f, hdr, 512, 0, false), 0);
	assert_int_equal(write_at(f, hdr, 512, 0, true), 0);
	assert_bytes(f, 0, hdr, sizeof(hdr));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_write_zeroes_without_zero_range, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_empty_ranges_are_nothing_to_do, setup, teardown),
		/* first: the others' refusals would use up the line's burst */
		cmocka_unit_test_setup_teardown(
			test_refusals_are_said_rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_probed_raw_refuses_a_qcow2_header, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_partial_writes_are_judged_merged, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_direct_header_write_never_reaches_io_uring,
			setup_direct, teardown),
		cmocka_unit_test_setup_teardown(
			test_format_raw_writes_any_header, setup_format_raw,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
