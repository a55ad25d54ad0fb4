// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile qcow2 images (disk/qcow2_meta.c): images qemu-img made, then
 * patched so that their tables sit on the header or on each other, are
 * misaligned, lie past the end of the file or past what the refcount
 * table can count. Wrong in the header or its tables: refused at open
 * with one line naming the problem. Wrong in an L2 entry (found only
 * when the guest gets there): that request fails with EIO and a line,
 * nothing of the image is written, and the disk goes on serving the rest.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "qcow2_rig.h"

#define COPIED		(1ULL << 63)
#define COMPRESSED	(1ULL << 62)

static struct img_layout lay;	/* of "good.qcow2" (64 KiB clusters) */

static int setup(void **state)
{
	assert_int_equal(rig_setup("qcow2-check"), 0);
	/* data at guest 0 and 8 MiB: one L2 table (of two L1 entries) */
	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 1G && qemu-io -c 'write -P 7 0 64k' -c 'write -P 8 8M 4k' %s >/dev/null",
			    path("good.qcow2"), path("good.qcow2")), 0);
	img_layout("good.qcow2", &lay);
	assert_true(lay.l2_0 && lay.data0 && lay.refblock0);
	return 0;
}

static int teardown(void **state)
{
	rig_teardown();
	return 0;
}

/* A copy of good.qcow2 with one big-endian field changed. */
static const char *patched(uint64_t off, unsigned int bytes, uint64_t v)
{
	assert_int_equal(sh("cp %s %s", path("good.qcow2"), path("bad.qcow2")),
			 0);
	img_put("bad.qcow2", off, bytes, v);
	return "bad.qcow2";
}

/* Refused at open, the one line saying `what`. */
static void refused(const char *name, const char *what)
{
	char *msg = open_error(name, false);
	char *nl;

	if (!msg)
		fail_msg("opened, though it should say \"%s\"", what);
	nl = strchr(msg, '\n');
	if (!strstr(msg, what) || !nl || nl[1])
		fail_msg("expected one line with \"%s\", got: %s", what, msg);
	free(msg);
	/* read-only users are refused alike: the image is as wrong */
	msg = open_error(name, true);
	assert_non_null(msg);
	free(msg);
}

static void test_tables_on_the_header(void **state)
{
	refused(patched(40, 8, 0), "the header and the L1 table overlap at 0");
	refused(patched(48, 8, 0),
		"the header and the refcount table overlap at 0");
	/* (an L1 or refcount table entry of 0 says "none") */
}

static void test_tables_on_each_other(void **state)
{
	refused(patched(40, 8, lay.reftable_offset),
		"the L1 table and the refcount table overlap");
	refused(patched(lay.l1_offset, 8, COPIED | lay.reftable_offset),
		"the refcount table and an L2 table overlap");
	refused(patched(lay.l1_offset, 8, COPIED | lay.refblock0),
		"a refcount block and an L2 table overlap");
	refused(patched(lay.l1_offset, 8, COPIED | lay.l1_offset),
		"the L1 table and an L2 table overlap");
	refused(patched(lay.reftable_offset, 8, lay.l1_offset),
		"the L1 table and a refcount block overlap");
	refused(patched(lay.reftable_offset + 8, 8, lay.refblock0),
		"a refcount block at 0x20000 is named twice");
	refused(patched(lay.reftable_offset + 8, 8, lay.l2_0),
		"a refcount block and an L2 table overlap");
	/* two L1 entries, one L2 table: two guest ranges on one */
	refused(patched(lay.l1_offset + 8, 8, COPIED | lay.l2_0),
		"an L2 table at 0x40000 is named twice");
}

static void test_tables_misplaced(void **state)
{
	refused(patched(40, 8, lay.l1_offset + 512),
		"the L1 table at 0x30200 is not cluster-aligned");
	refused(patched(48, 8, lay.reftable_offset + 4096),
		"the refcount table at 0x11000 is not cluster-aligned");
	refused(patched(40, 8, 1ULL << 40),
		"the L1 table at 0x10000000000 is past the end of the file");
	refused(patched(lay.l1_offset, 8, COPIED | (lay.l2_0 + 65536 * 64)),
		"the L2 table of L1 entry 0 at 0x440000 is past the end of the file");
	refused(patched(lay.l1_offset, 8, COPIED | (lay.l2_0 + 512)),
		"the L2 table of L1 entry 0 at 0x40200 is not cluster-aligned");
	refused(patched(lay.l1_offset, 8, COPIED | 1ULL << 60 | lay.l2_0),
		"L1 entry 0 has reserved bits set");
	refused(patched(lay.reftable_offset + 8, 8, 0x7000000),
		"refcount block 1 at 0x7000000 is past the end of the file");
	refused(patched(lay.reftable_offset, 8, lay.refblock0 | 1),
		"refcount table entry 0 has reserved bits set");
	/* reserved bits, even in an entry that names no table */
	refused(patched(lay.l1_offset + 8, 8, 1),
		"L1 entry 1 has reserved bits set");
	refused(patched(lay.reftable_offset + 16, 8, 0x100),
		"refcount table entry 2 has reserved bits set");
	/* a backing file name anywhere in the file is read from anywhere */
	refused(patched(8, 8, 1 << 20),
		"its backing file name is not in its first cluster");
	refused(patched(100, 4, 100), "header length");
	refused(patched(100, 4, 1 << 17), "header length");
}

/*
 * 512-byte clusters and a one-cluster refcount table: it counts 64
 * blocks of 256 clusters, 8 MiB. An L2 table past that, in the file (a
 * sparse one), could never be counted.
 */
static void test_tables_past_the_refcounts(void **state)
{
	assert_int_equal(sh("qemu-img create -q -f qcow2 -o cluster_size=512 %s 16M && truncate -s 12M %s",
			    path("small.qcow2"), path("small.qcow2")), 0);
	img_put("small.qcow2", img_get("small.qcow2", 40, 8), 8,
		COPIED | 9 * MIB);
	refused("small.qcow2",
		"the L2 table of L1 entry 0 at 0x900000 is past what the refcount table can count");
}

/* Requests at guest offset off: 0 read, 1 write, 2 discard, 3 zeroes. */
static int do_req(struct disk *d, int kind, uint64_t off)
{
	static uint8_t buf[8192];
	struct iovec iov = { buf, sizeof(buf) };

	memset(buf, 0xee, sizeof(buf));
	switch (kind) {
	case 0:
		return disk_readv(d, &iov, 1, off);
	case 1:
		return disk_writev(d, &iov, 1, off);
	case 2:
		return disk_discard(d, off, 65536);
	default:
		return disk_write_zeroes(d, off, 65536, false);
	}
}

/*
 * In a child of its own (the warnings' rate limit starts afresh): every
 * kind of request at guest 0, `rounds` times; which failed with EIO, as
 * bits; and then, if `good`, a write and a read elsewhere, which must
 * work (bit 4).
 */
static int child_requests(unsigned int rounds, bool good)
{
	struct disk_params p = { .path = path("bad.qcow2") };
	struct disk d;
	int kind, bits = 0;

	if (disk_open(&d, &p))
		_exit(99);
	for (unsigned int i = 0; i < rounds; i++)
		for (kind = 0; kind < 4; kind++)
			if (do_req(&d, kind, 0) == -EIO)
				bits |= 1 << kind;
	if (good && !disk_flush(&d) && !do_req(&d, 1, 4 * MIB) &&
	    !do_req(&d, 0, 4 * MIB))
		bits |= 1 << 4;
	disk_close(&d);
	return bits;
}

/* child_requests()'s bits, and its stderr, malloc()ed, in *msg. */
static int run_child(unsigned int rounds, bool good, char **msg)
{
	int st;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int bits;

		if (!freopen(path("child.err"), "w", stderr))
			_exit(98);
		bits = child_requests(rounds, good);
		fflush(stderr);
		_exit(bits);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	{
		size_t n;
		uint8_t *text = img_read("child.err", &n);

		*msg = realloc(text, n + 1);
		(*msg)[n] = 0;
	}
	return WEXITSTATUS(st);
}

static unsigned int count_lines(const char *msg, const char *what)
{
	unsigned int n = 0;

	for (const char *p = msg; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/*
 * good.qcow2 with L2 entry 0 (guest offset 0) set to `entry`: every kind
 * of request there fails with EIO and a line saying `what`, the image's
 * file is not written, and requests elsewhere still work.
 */
static void entry_fails(uint64_t entry, const char *what)
{
	uint8_t *before, *after;
	size_t n, m;
	char *msg;
	int bits;

	patched(lay.l2_0, 8, entry);
	before = img_read("bad.qcow2", &n);
	bits = run_child(1, false, &msg);
	if (bits != 0xf || count_lines(msg, what) != 4 ||
	    count_lines(msg, "request failed") != 4)
		fail_msg("requests: %#x; expected 4 lines with \"%s\", got: %s",
			 bits, what, msg);
	free(msg);
	after = img_read("bad.qcow2", &m);
	assert_int_equal(n, m);
	assert_memory_equal(before, after, n);
	free(after);
	free(before);
	assert_int_equal(run_child(1, true, &msg), 0x1f);
	free(msg);
}

/* A guest that asks again and again: five lines, then a count held back. */
static void test_l2_warnings_rate_limited(void **state)
{
	char *msg;

	patched(lay.l2_0, 8, COPIED | lay.l1_offset);
	assert_int_equal(run_child(50, true, &msg), 0x1f);
	assert_int_equal(count_lines(msg, "request failed"), 5);
	free(msg);
}

static void test_l2_entries_into_metadata(void **state)
{
	entry_fails(COPIED | lay.l1_offset,
		    "its data is the L1 table at 0x30000");
	entry_fails(COPIED | lay.l2_0, "its data is an L2 table at 0x40000");
	entry_fails(COPIED | lay.refblock0,
		    "its data is a refcount block at 0x20000");
	entry_fails(COPIED | lay.reftable_offset,
		    "its data is the refcount table at 0x10000");
	/* compressed: 2 sectors in the header, or over the L2 table */
	entry_fails(COMPRESSED | 1ULL << 54 | 0x100,
		    "its data is the header at 0");
	entry_fails(COMPRESSED | 1ULL << 54 | (lay.l2_0 + 100),
		    "its data is an L2 table at 0x40000");
}

static void test_l2_entries_out_of_bounds(void **state)
{
	entry_fails(COPIED | (lay.data0 + 512), "is not cluster-aligned");
	entry_fails(COPIED | 64 * MIB, "is past the end of the file");
	entry_fails(COPIED | 1ULL << 50, "is past the end of the file");
	entry_fails(COMPRESSED | 3ULL << 54 | (lay.data0 + 65536 * 2 - 512),
		    "is past the end of the file");
}

static uint8_t *read_guest(const char *name, uint64_t off, size_t len)
{
	struct disk_params p = { .path = path(name), .readonly = true };
	uint8_t *buf = malloc(len);
	struct iovec iov = { buf, len };
	struct disk d;

	assert_non_null(buf);
	assert_int_equal(disk_open(&d, &p), 0);
	assert_int_equal(disk_readv(&d, &iov, 1, off), 0);
	disk_close(&d);
	return buf;
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * Refcounts that call the image's own tables free (a hostile image, or a
 * broken one): lkvm hands out free clusters again, but never those. New
 * data lands elsewhere, and the tables and what they map are intact.
 */
static void test_tables_never_handed_out(void **state)
{
	static uint8_t buf[MIB];
	struct disk_params p = { .path = path("bad.qcow2") };
	struct iovec iov = { buf, sizeof(buf) };
	uint64_t meta[] = { 0, lay.reftable_offset, lay.refblock0,
			    lay.l1_offset, lay.l2_0 };
	uint8_t *got;
	struct disk d;

	patched(lay.refblock0, 2, 0);
	for (unsigned int i = 1; i < ARRAY_SIZE(meta); i++)
		img_put("bad.qcow2", lay.refblock0 + meta[i] / 65536 * 2, 2, 0);
	assert_int_equal(disk_open(&d, &p), 0);
	memset(buf, 0x21, sizeof(buf));
	assert_int_equal(disk_writev(&d, &iov, 1, 16 * MIB), 0);
	assert_int_equal(disk_flush(&d), 0);
	disk_close(&d);
	/* where the 16 new clusters went: none on a table */
	for (unsigned int c = 0; c < 16; c++) {
		uint64_t e = img_get("bad.qcow2", lay.l2_0 + (256 + c) * 8, 8);

		assert_true(e & COPIED);
		for (unsigned int i = 0; i < ARRAY_SIZE(meta); i++)
			assert_int_not_equal(e & 0x00fffffffffffe00ULL, meta[i]);
	}
	got = read_guest("bad.qcow2", 0, 17 * MIB);
	assert_true(all_bytes(got, 65536, 7));
	assert_true(all_bytes(got + 8 * MIB, 4096, 8));
	assert_true(all_bytes(got + 16 * MIB, MIB, 0x21));
	free(got);
	assert_int_equal(img_get("bad.qcow2", lay.l1_offset, 8),
			 COPIED | lay.l2_0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables_on_the_header),
		cmocka_unit_test(test_tables_on_each_other),
		cmocka_unit_test(test_tables_misplaced),
		cmocka_unit_test(test_tables_past_the_refcounts),
		cmocka_unit_test(test_l2_entries_into_metadata),
		cmocka_unit_test(test_l2_entries_out_of_bounds),
		cmocka_unit_test(test_l2_warnings_rate_limited),
		cmocka_unit_test(test_tables_never_handed_out),
	};

	if (sh("qemu-img --version >/dev/null 2>&1")) {
		fprintf(stderr, "qemu-img is missing: scripts/install-deps.sh installs qemu-utils\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
