// SPDX-License-Identifier: GPL-2.0
/*
 * The raw-image backend's WRITE_ZEROES and DISCARD (disk/raw.c) on tmpfs,
 * whose fallocate() has no ZERO_RANGE: zeroes must still read back, with
 * or without leave to unmap, and an empty range is nothing to do rather
 * than an error (fallocate() refuses a zero length).
 */
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

#define IMAGE_SIZE	(1 << 20)

struct fixture {
	char path[64];
	struct disk disk;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct disk_params cfg = { 0 };
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_write_zeroes_without_zero_range, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_empty_ranges_are_nothing_to_do, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
