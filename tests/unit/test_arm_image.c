// SPDX-License-Identifier: GPL-2.0
/*
 * arm64 Image header checks (arm/image.c) against synthetic headers and
 * the files people give by mistake, and the boot payload's placement.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/arm/image.h"
#include "lkvm/util.h"

#define FILE_SIZE	(1 << 20)
#define MIB		(1ULL << 20)
#define RAM_BASE	0x80000000ULL

static void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

/* Debian 6.1's header: 4K pages, placed anywhere, 2 MiB of BSS. */
static uint8_t *make_image(uint64_t text_offset, uint64_t image_size,
			   uint64_t flags)
{
	uint8_t *d = calloc(1, FILE_SIZE);

	memcpy(d, "MZ\0\0", 4);
	put_le64(d + 8, text_offset);
	put_le64(d + 16, image_size);
	put_le64(d + 24, flags);
	memcpy(d + 0x38, "ARM\x64", 4);
	return d;
}

/* Run parse with stderr caught; the message lands in msg. */
static int parse_caught(const void *d, size_t size, struct arm64_image *img,
			char *msg, size_t msg_size)
{
	int saved = dup(2), fd = memfd_create("err", 0), ret;
	ssize_t n;

	fflush(stderr);
	dup2(fd, 2);
	ret = arm64_image_parse(d, size, "k", img);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, msg, msg_size - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	close(fd);
	return ret;
}

static void test_image_ok(void **state)
{
	uint8_t *d = make_image(0, FILE_SIZE + 2 * MIB, 0xa);
	struct arm64_image img;
	char msg[256];

	assert_int_equal(parse_caught(d, FILE_SIZE, &img, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(img.text_offset, 0);
	assert_int_equal(img.image_size, FILE_SIZE + 2 * MIB);
	assert_int_equal(img.page_kib, 4);
	assert_true(img.anywhere);
	free(d);
}

static void test_image_flags(void **state)
{
	static const struct { uint64_t flags; unsigned int kib; bool any; } t[] = {
		{ 0x0, 0, false }, { 0x2, 4, false }, { 0x4, 16, false },
		{ 0x6, 64, false }, { 0xe, 64, true },
	};
	struct arm64_image img;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		uint8_t *d = make_image(0x80000, FILE_SIZE, t[i].flags);

		assert_int_equal(arm64_image_parse(d, FILE_SIZE, "k", &img), 0);
		assert_int_equal(img.page_kib, t[i].kib);
		assert_int_equal(img.anywhere, t[i].any);
		free(d);
	}
}

/* A pre-3.17 kernel: image_size 0 means text_offset 0x80000, unannounced. */
static void test_image_old_kernel(void **state)
{
	uint8_t *d = make_image(0x1234, 0, 0x1);
	struct arm64_image img;

	assert_int_equal(arm64_image_parse(d, FILE_SIZE, "k", &img), 0);
	assert_int_equal(img.text_offset, 0x80000);
	assert_int_equal(img.image_size, FILE_SIZE);
	free(d);
}

static void expect_refused(const uint8_t *d, size_t size, const char *why)
{
	struct arm64_image img;
	char msg[512];

	assert_int_equal(parse_caught(d, size, &img, msg, sizeof(msg)), -1);
	if (!strstr(msg, why) || !strstr(msg, "kernel 'k'") ||
	    strchr(msg, '\n') != msg + strlen(msg) - 1)
		fail_msg("wanted one line with \"%s\", got \"%s\"", why, msg);
}

static void test_image_refused(void **state)
{
	uint8_t *d = make_image(0, FILE_SIZE, 0x2);

	put_le64(d + 24, 0x3);
	expect_refused(d, FILE_SIZE, "big-endian");
	put_le64(d + 24, 0x2);
	put_le64(d + 16, FILE_SIZE - 1);	/* shorter than the file */
	expect_refused(d, FILE_SIZE, "corrupt Image header");
	put_le64(d + 16, 1ULL << 40);
	expect_refused(d, FILE_SIZE, "corrupt Image header");
	put_le64(d + 16, FILE_SIZE);
	put_le64(d + 8, 0x80001);		/* not page-aligned */
	expect_refused(d, FILE_SIZE, "corrupt Image header");
	put_le64(d + 8, 2 * MIB);		/* past its 2 MiB block */
	expect_refused(d, FILE_SIZE, "corrupt Image header");
	put_le64(d + 8, 0);
	expect_refused(d, 63, "too short");
	d[0x3b] = 0x65;
	expect_refused(d, FILE_SIZE, "no \"ARM\\x64\" magic");
	free(d);
}

/* The files people pass by mistake are named for what they are. */
static void test_image_impostors(void **state)
{
	uint8_t *d = calloc(1, FILE_SIZE);

	memcpy(d, "\x1f\x8b\x08", 3);
	expect_refused(d, FILE_SIZE, "gzip-compressed");
	memset(d, 0, 8);
	memcpy(d, "MZ\0\0zimg", 8);
	expect_refused(d, FILE_SIZE, "EFI zboot");
	memset(d, 0, 8);
	memcpy(d, "\177ELF", 4);
	expect_refused(d, FILE_SIZE, "ELF vmlinux");
	memset(d, 0, 8);
	memcpy(d + 0x202, "HdrS", 4);
	expect_refused(d, FILE_SIZE, "x86 bzImage");
	free(d);
}

static void test_layout(void **state)
{
	struct arm64_image img = { .text_offset = 0, .image_size = 40 * MIB };
	struct arm64_boot_layout l;

	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 256 * MIB,
					   MIB, 20 * MIB + 5, &l), 0);
	assert_int_equal(l.kernel, RAM_BASE);
	/* the tree alone in the last 2 MiB block */
	assert_int_equal(l.dtb, RAM_BASE + 254 * MIB);
	/* the initrd right below it, 64 KiB-aligned, clear of the BSS */
	assert_true(l.initrd + 20 * MIB + 5 <= l.dtb);
	assert_true(l.initrd >= RAM_BASE + 40 * MIB);
	assert_int_equal(l.initrd % (64 << 10), 0);
	assert_int_equal(l.dtb - l.initrd, 20 * MIB + (64 << 10));

	img.text_offset = 0x80000;
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 256 * MIB,
					   MIB, 0, &l), 0);
	assert_int_equal(l.kernel, RAM_BASE + 0x80000);
	assert_int_equal(l.initrd, 0);
}

static void test_layout_too_small(void **state)
{
	struct arm64_image img = { .text_offset = 0, .image_size = 40 * MIB };
	struct arm64_boot_layout l;

	log_threshold = LOG_SILENT;	/* the errors are expected */
	/* kernel + BSS reach into the tree's block */
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 41 * MIB,
					   MIB, 0, &l), -1);
	/* room for the kernel and the tree, not for the initrd as well */
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 64 * MIB,
					   MIB, 30 * MIB, &l), -1);
	/* an initrd larger than all of RAM */
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 64 * MIB,
					   MIB, 1ULL << 40, &l), -1);
	/* a tree larger than booting.rst allows */
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 256 * MIB,
					   4 * MIB, 0, &l), -1);
	/* just enough: kernel, then the tree's 2 MiB */
	assert_int_equal(arm64_boot_layout(&img, 30 * MIB, RAM_BASE, 42 * MIB,
					   MIB, 0, &l), 0);
	log_threshold = LOG_WARN;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_ok),
		cmocka_unit_test(test_image_flags),
		cmocka_unit_test(test_image_old_kernel),
		cmocka_unit_test(test_image_refused),
		cmocka_unit_test(test_image_impostors),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_layout_too_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
