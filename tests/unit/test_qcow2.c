// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 images (disk/qcow2.c) against what QEMU's own tools make and
 * check: images from qemu-img create/convert (versions 2 and 3, backing
 * files, compressed clusters), written and read through the disk API,
 * then qemu-img check must find no corruption and qemu-img convert must
 * give exactly the bytes a model of the disk expects. Also what lkvm
 * refuses, with one line naming it, and an image whose writer is killed
 * with SIGKILL in the middle of its writes.
 *
 * And backing files as the image names them, the image being anyone's: a
 * backing file's format is the image's word for it, never a probe of its
 * bytes (a guest's raw disk holding a qcow2 header names a file of the
 * host); it must lie in the image's directory (or the user's backing-dir)
 * and be a regular file, or the open is refused in one line naming both.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "qcow2_rig.h"

#define SIZE		(64 * MIB)

static char outside[80];	/* beside the images: where the host's secrets are */

static void open_disk(struct disk *d, const char *name, bool ro)
{
	struct disk_params cfg = { 0 };

	cfg.path = path(name);
	cfg.readonly = ro;
	assert_int_equal(disk_open(d, &cfg), 0);
}

static int open_fails(const char *name, enum disk_format_id format, bool direct)
{
	struct disk_params cfg = { .format = format, .direct = direct };
	struct disk d;

	cfg.path = path(name);
	if (!disk_open(&d, &cfg)) {
		disk_close(&d);
		return 0;
	}
	return 1;
}

static uint8_t byte_at(uint64_t off, unsigned int seed)
{
	return (uint8_t)((off >> 9) * 31 + seed * 7 + (off & 511));
}

static void fill(uint8_t *buf, uint64_t off, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = byte_at(off + i, seed);
}

static void rw(struct disk *d, uint8_t *buf, uint64_t off, size_t len,
	       bool write)
{
	struct iovec iov[3];
	size_t a = len / 3, b = len / 3;

	/* three buffers, as a guest's scatter-gather would */
	iov[0] = (struct iovec) { buf, a };
	iov[1] = (struct iovec) { buf + a, b };
	iov[2] = (struct iovec) { buf + a + b, len - a - b };
	assert_int_equal(write ? disk_writev(d, iov, 3, off)
			       : disk_readv(d, iov, 3, off), 0);
}

/* The model: what every byte of the virtual disk should read as. */
static uint8_t *model;

static void model_write(struct disk *d, uint64_t off, size_t len,
			unsigned int seed)
{
	fill(model + off, off, len, seed);
	rw(d, model + off, off, len, true);
}

static void check_reads(struct disk *d)
{
	uint8_t *got = malloc(SIZE);

	assert_non_null(got);
	for (uint64_t off = 0; off < SIZE; off += 4 * MIB)
		rw(d, got + off, off, 4 * MIB, false);
	assert_memory_equal(got, model, SIZE);
	free(got);
}

/* qemu-img check finds nothing (0) or leaks only (3), never corruption. */
static void check_with_qemu(const char *name, bool leaks_ok)
{
	int rc = sh("qemu-img check -q %s >/dev/null 2>&1", path(name));

	assert_true(rc == 0 || (leaks_ok && rc == 3));
	assert_int_equal(sh("qemu-img convert -O raw %s %s", path(name),
			    path("conv.raw")), 0);
	{
		int fd = open(path("conv.raw"), O_RDONLY);
		uint8_t *got = malloc(SIZE);

		assert_true(fd >= 0 && got);
		assert_int_equal(pread(fd, got, SIZE, 0), SIZE);
		close(fd);
		assert_memory_equal(got, model, SIZE);
		free(got);
	}
}

static int setup(void **state)
{
	assert_int_equal(rig_setup("qcow2"), 0);
	snprintf(outside, sizeof(outside), "%s-outside", rig_dir());
	assert_int_equal(mkdir(outside, 0700), 0);
	model = calloc(1, SIZE);
	assert_non_null(model);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", outside);
	rig_teardown();
	free(model);
	return 0;
}

/*
 * Writes of every shape: within a cluster, across clusters, whole ones,
 * far apart (L2 tables made), and enough 4 KiB clusters to need new
 * refcount blocks; then discard and write-zeroes, whole and partial.
 */
static void workload(struct disk *d)
{
	uint64_t off;
	unsigned int i;

	model_write(d, 0, 512, 1);
	model_write(d, 4096 - 512, 8192, 2);		/* across */
	model_write(d, 8 * MIB, 64 * 1024, 3);		/* whole clusters */
	model_write(d, SIZE - 4096, 4096, 4);		/* the last one */
	for (i = 0, off = 16 * MIB; i < 160; i++, off += 64 * 1024)
		model_write(d, off, 64 * 1024, 5 + i % 3);	/* 10 MiB */
	model_write(d, 0, 512, 9);			/* in place */
	assert_int_equal(disk_discard(d, 16 * MIB, 256 * 1024), 0);
	memset(model + 16 * MIB, 0, 256 * 1024);
	assert_int_equal(disk_write_zeroes(d, 17 * MIB + 100 * 512,
					   10 * 4096 + 512, true), 0);
	memset(model + 17 * MIB + 100 * 512, 0, 10 * 4096 + 512);
	assert_int_equal(disk_flush(d), 0);
}

static void test_rw_versions(void **state)
{
	static const char *const compat[] = { "0.10", "1.1" };

	for (unsigned int v = 0; v < 2; v++) {
		struct disk d;

		memset(model, 0, SIZE);
		assert_int_equal(sh("qemu-img create -q -f qcow2 -o compat=%s,cluster_size=4096 %s 64M",
				    compat[v], path("a.qcow2")), 0);
		open_disk(&d, "a.qcow2", false);
		assert_int_equal(d.size, SIZE);
		workload(&d);
		check_reads(&d);
		disk_close(&d);
		check_with_qemu("a.qcow2", false);
		/* and opened again: what was written is there */
		open_disk(&d, "a.qcow2", true);
		check_reads(&d);
		disk_close(&d);
	}
}

/* Data all through but the last MiB: a hole, or (short) not there. */
static void make_base(bool short_file)
{
	int fd = open(path("base.raw"), O_CREAT | O_TRUNC | O_RDWR, 0600);

	assert_true(fd >= 0);
	fill(model, 0, SIZE - MIB, 40);
	assert_int_equal(pwrite(fd, model, SIZE - MIB, 0), SIZE - MIB);
	memset(model + SIZE - MIB, 0, MIB);
	if (!short_file)
		assert_int_equal(ftruncate(fd, SIZE), 0);
	close(fd);
}

static void test_backing_file(void **state)
{
	struct disk d;
	struct stat before, after;

	make_base(true);	/* the overlay reads zeroes past its end */
	assert_int_equal(stat(path("base.raw"), &before), 0);
	assert_int_equal(sh("qemu-img create -q -f qcow2 -b base.raw -F raw -o compat=0.10 %s 64M && qemu-img create -q -f qcow2 -b mid.qcow2 -F qcow2 %s 64M",
			    path("mid.qcow2"), path("top.qcow2")), 0);
	open_disk(&d, "top.qcow2", false);
	check_reads(&d);		/* all through two levels */
	workload(&d);			/* partial clusters: copied up */
	check_reads(&d);
	disk_close(&d);
	check_with_qemu("top.qcow2", false);
	assert_int_equal(stat(path("base.raw"), &after), 0);
	assert_int_equal(before.st_mtime, after.st_mtime);
	assert_int_equal(sh("qemu-img compare -q %s %s", path("mid.qcow2"),
			    path("base.raw")), 0);
}

static void test_compressed_clusters(void **state)
{
	struct disk d;

	make_base(false);
	assert_int_equal(sh("qemu-img convert -q -c -O qcow2 %s %s",
			    path("base.raw"), path("c.qcow2")), 0);
	open_disk(&d, "c.qcow2", false);
	check_reads(&d);
	workload(&d);	/* rewrites parts of compressed clusters */
	check_reads(&d);
	disk_close(&d);
	check_with_qemu("c.qcow2", false);
}

/* The header's autoclear_features field (big-endian, v3). */
static uint64_t autoclear_of(const char *name)
{
	uint64_t be = 0;
	int fd = open(path(name), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &be, 8, 88), 8);
	close(fd);
	return be64toh(be);
}

/*
 * Autoclear feature bits lkvm does not know (all of them: it keeps no
 * bitmaps) are cleared before its first write, so that QEMU no longer
 * trusts the persistent dirty bitmap a write made stale; not when the
 * image is opened read-only, nor before anything is written. A bit no
 * one knows goes the same way.
 */
static void test_autoclear_cleared(void **state)
{
	static uint8_t buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct disk d;

	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M && qemu-img bitmap --add %s b0",
			    path("bm.qcow2"), path("bm.qcow2")), 0);
	assert_int_equal(autoclear_of("bm.qcow2"), 1);	/* bit 0: bitmaps */
	assert_int_equal(sh("qemu-img info %s | grep -q 'name: b0'",
			    path("bm.qcow2")), 0);
	open_disk(&d, "bm.qcow2", true);
	assert_int_equal(disk_readv(&d, &iov, 1, 0), 0);
	disk_close(&d);
	assert_int_equal(autoclear_of("bm.qcow2"), 1);
	open_disk(&d, "bm.qcow2", false);
	assert_int_equal(disk_readv(&d, &iov, 1, 0), 0);
	assert_int_equal(autoclear_of("bm.qcow2"), 1);	/* nothing written */
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(disk_writev(&d, &iov, 1, 8192), 0);
	assert_int_equal(autoclear_of("bm.qcow2"), 0);
	disk_close(&d);
	/* QEMU sees the bitmap as stale now: not listed, its clusters leak */
	assert_int_equal(sh("qemu-img info %s 2>&1 | grep -q 'lacking bitmap support'",
			    path("bm.qcow2")), 0);
	assert_int_not_equal(sh("qemu-img info %s 2>/dev/null | grep -q 'name: b0'",
				path("bm.qcow2")), 0);
	assert_int_equal(sh("qemu-img check -q %s >/dev/null 2>&1; test $? -eq 0 -o $? -eq 3",
			    path("bm.qcow2")), 0);

	/* bit 40, which no program knows, on a discard as the first write */
	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M && printf '\\001' | dd of=%s bs=1 seek=90 conv=notrunc status=none",
			    path("ac.qcow2"), path("ac.qcow2")), 0);
	assert_int_equal(autoclear_of("ac.qcow2"), 1ULL << 40);
	open_disk(&d, "ac.qcow2", false);
	assert_int_equal(disk_discard(&d, 0, 65536), 0);
	disk_close(&d);
	assert_int_equal(autoclear_of("ac.qcow2"), 0);
	assert_int_equal(sh("qemu-img check -q %s", path("ac.qcow2")), 0);
}

/*
 * A disk handed to its device (disk_move(), as virtio-blk takes it): its
 * flush still syncs the image and writes the tables that waited for it,
 * and so does its close; QEMU then reads what was written, with no leak.
 */
static void test_moved_disk_flushes(void **state)
{
	static uint8_t buf[65536];
	struct iovec iov = { buf, sizeof(buf) };
	struct disk a, b;

	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M",
			    path("mv.qcow2")), 0);
	open_disk(&a, "mv.qcow2", false);
	disk_move(&b, &a);
	disk_close(&a);			/* moved away: nothing to do */
	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(disk_writev(&b, &iov, 1, MIB), 0);
	assert_int_equal(disk_flush(&b), 0);
	/* a copy of what is in the file now (lkvm holds its lock) */
	assert_int_equal(sh("cp %s %s && qemu-io -r -c 'read -q -P 0x3c 1M 64k' %s",
			    path("mv.qcow2"), path("mv-copy.qcow2"),
			    path("mv-copy.qcow2")), 0);
	assert_int_equal(disk_writev(&b, &iov, 1, 4 * MIB), 0);
	disk_close(&b);
	assert_int_equal(sh("qemu-img check -q %s", path("mv.qcow2")), 0);
	assert_int_equal(sh("qemu-io -r -c 'read -q -P 0x3c 4M 64k' %s",
			    path("mv.qcow2")), 0);
}

static uint64_t file_size(const char *name, uint64_t *blocks)
{
	struct stat st;

	assert_int_equal(stat(path(name), &st), 0);
	if (blocks)
		*blocks = st.st_blocks * 512;
	return st.st_size;
}

/* The highest host offset qemu-img map finds data at, plus its length. */
static uint64_t data_end(const char *name)
{
	char cmd[512];
	unsigned long long end = 0, off, len;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "qemu-img map --output=json %s | sed -n 's/.*\"length\": \\([0-9]*\\).*\"offset\": \\([0-9]*\\).*/\\1 \\2/p'",
		 path(name));
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fscanf(f, "%llu %llu", &len, &off) == 2)
		end = MAX(end, off + len);
	pclose(f);
	return end;
}

/*
 * Discard, then write again, over and over: the clusters the discards
 * free are handed out again, so the file stays the size of what the
 * guest holds (and its discarded space is punched out, not only
 * counted free). With a flush after each discard, and without any (the
 * releases then wait until the allocator needs them).
 */
static void test_freed_clusters_reused(void **state)
{
	static uint8_t buf[MIB];
	struct iovec iov = { buf, sizeof(buf) };
	uint64_t first = 0, blocks;

	for (int flush = 1; flush >= 0; flush--) {
		struct disk d;

		assert_int_equal(sh("qemu-img create -q -f qcow2 %s 64M",
				    path("re.qcow2")), 0);
		open_disk(&d, "re.qcow2", false);
		for (unsigned int round = 0; round < 12; round++) {
			for (uint64_t off = 0; off < 8 * MIB; off += MIB) {
				memset(buf, round + 1, sizeof(buf));
				/* a different place each round */
				assert_int_equal(disk_writev(&d, &iov, 1,
						 (round % 4) * 16 * MIB + off),
						 0);
			}
			if (round == 11)
				break;
			assert_int_equal(disk_discard(&d,
						      (round % 4) * 16 * MIB,
						      8 * MIB), 0);
			if (flush)
				assert_int_equal(disk_flush(&d), 0);
			if (!round)
				first = file_size("re.qcow2", NULL);
			if (flush && round) {
				/* what was discarded is a hole again */
				file_size("re.qcow2", &blocks);
				assert_true(blocks < 2 * MIB);
			}
		}
		disk_close(&d);
		/* 8 MiB of data, its tables: as large as after one round */
		assert_true(file_size("re.qcow2", NULL) <= first + 2 * MIB);
		assert_true(data_end("re.qcow2") <= first + 2 * MIB);
		assert_int_equal(sh("qemu-img check -q %s", path("re.qcow2")), 0);
		assert_int_equal(sh("qemu-io -r -c 'read -q -P 12 %llu 8M' %s",
				    (unsigned long long)(11 % 4) * 16 * MIB,
				    path("re.qcow2")), 0);
	}
}

/* One line and no disk for each thing lkvm does not do. */
static void test_refusals(void **state)
{
	FILE *f;

	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M && qemu-img snapshot -c snap %s",
			    path("snap.qcow2"), path("snap.qcow2")), 0);
	assert_true(open_fails("snap.qcow2", DISK_FORMAT_AUTO, false));
	assert_int_equal(sh("qemu-img create -q -f qcow2 -o refcount_bits=8 %s 16M",
			    path("r8.qcow2")), 0);
	assert_true(open_fails("r8.qcow2", DISK_FORMAT_AUTO, false));
	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M",
			    path("ok.qcow2")), 0);
	assert_false(open_fails("ok.qcow2", DISK_FORMAT_AUTO, false));
	assert_true(open_fails("ok.qcow2", DISK_FORMAT_AUTO, true));
	/* the dirty bit, as a crashed QEMU with lazy refcounts leaves it */
	assert_int_equal(sh("cp %s %s && printf '\\001' | dd of=%s bs=1 seek=79 conv=notrunc status=none",
			    path("ok.qcow2"), path("dirty.qcow2"),
			    path("dirty.qcow2")), 0);
	assert_true(open_fails("dirty.qcow2", DISK_FORMAT_AUTO, false));
	assert_int_equal(sh("qemu-img create -q -f qcow2 -u -b %s -F raw %s 16M",
			    path("gone.raw"), path("orphan.qcow2")), 0);
	assert_true(open_fails("orphan.qcow2", DISK_FORMAT_AUTO, false));
	/* a chain that loops back on itself */
	assert_int_equal(sh("qemu-img create -q -f qcow2 %s 16M && qemu-img create -q -f qcow2 -b l1.qcow2 -F qcow2 %s 16M && qemu-img rebase -q -u -b l2.qcow2 -F qcow2 %s",
			    path("l1.qcow2"), path("l2.qcow2"), path("l1.qcow2")), 0);
	assert_true(open_fails("l2.qcow2", DISK_FORMAT_AUTO, false));
	/* format=qcow2 on what is not one; format=raw takes a qcow2 as is */
	f = fopen(path("plain.raw"), "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), MIB), 0);
	fclose(f);
	assert_true(open_fails("plain.raw", DISK_FORMAT_QCOW2, false));
	assert_false(open_fails("ok.qcow2", DISK_FORMAT_RAW, false));
}

/*
 * A writer killed with SIGKILL at some point of its allocating writes:
 * qemu-img check finds no corruption, leaked clusters at worst.
 */
static void test_sigkill_mid_writes(void **state)
{
	for (unsigned int round = 0; round < 12; round++) {
		struct timespec t = { 0, (round % 6 + 1) * 7 * 1000 * 1000 };
		pid_t pid;
		int st, rc;

		assert_int_equal(sh("qemu-img create -q -f qcow2 -o cluster_size=4096 %s 64M",
				    path("k.qcow2")), 0);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			struct disk_params cfg = { 0 };
			static uint8_t buf[64 * 1024];
			struct disk d;
			uint64_t off;

			cfg.path = path("k.qcow2");
			if (disk_open(&d, &cfg))
				_exit(1);
			for (off = 0;; off = (off + 9 * 64 * 1024 + 4096) %
					     (SIZE - sizeof(buf))) {
				struct iovec iov = { buf, sizeof(buf) };

				fill(buf, off, sizeof(buf), round);
				disk_writev(&d, &iov, 1, off);
				disk_discard(&d, (off * 7) % (SIZE - MIB), 8192);
			}
		}
		nanosleep(&t, NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		rc = sh("qemu-img check -q %s >/dev/null 2>&1", path("k.qcow2"));
		assert_true(rc == 0 || rc == 3);
	}
}

/*
 * A user's image may be anything: bytes of its header and tables (the
 * first clusters of a small image) changed at random must end in an error
 * at open or in requests, never a crash or a read outside the buffers
 * (ASan builds run this too).
 */
static void test_corrupt_images(void **state)
{
	uint8_t *good, *bad, buf[8192];
	unsigned int seed = 12345, round;
	int fd;

	assert_int_equal(sh("qemu-img create -q -f qcow2 -o cluster_size=512 %s 4M && qemu-io -c 'write -P 7 0 1M' -c 'write -P 9 3M 4k' %s >/dev/null",
			    path("g.qcow2"), path("g.qcow2")), 0);
	good = malloc(64 * 1024);
	bad = malloc(64 * 1024);
	assert_true(good && bad);
	fd = open(path("g.qcow2"), O_RDONLY);
	assert_int_equal(pread(fd, good, 64 * 1024, 0), 64 * 1024);
	close(fd);
	enum log_level saved = log_threshold;

	log_threshold = LOG_SILENT;
	for (round = 0; round < 300; round++) {
		struct disk_params cfg = { 0 };
		struct iovec iov = { buf, sizeof(buf) };
		struct disk d;
		unsigned int i, flips = 1 + rand_r(&seed) % 8;
		uint64_t off;

		memcpy(bad, good, 64 * 1024);
		for (i = 0; i < flips; i++)
			bad[rand_r(&seed) % (round < 150 ? 4096 : 65536)] =
				rand_r(&seed);
		fd = open(path("bad.qcow2"), O_CREAT | O_TRUNC | O_RDWR, 0600);
		assert_int_equal(pwrite(fd, bad, 64 * 1024, 0), 64 * 1024);
		close(fd);
		cfg.path = path("bad.qcow2");
		if (disk_open(&d, &cfg))
			continue;
		for (off = 0; off + sizeof(buf) <= d.size && off < 8 * MIB;
		     off += 61 * 1024)
			disk_readv(&d, &iov, 1, off);
		for (off = 0; off + sizeof(buf) <= d.size && off < 8 * MIB;
		     off += 509 * 1024)
			disk_writev(&d, &iov, 1, off);
		disk_discard(&d, 0, MIN(d.size, 64 * 1024));
		disk_close(&d);
	}
	log_threshold = saved;
	free(good);
	free(bad);
}

/* ---- backing files ---- */

#define SECRET	"the host's secret, never the guest's"

/* A file of `size` bytes, `len` bytes from `from` first. */
static void make_file(const char *file, const void *from, size_t len,
		      uint64_t size)
{
	int fd = open(file, O_CREAT | O_TRUNC | O_RDWR, 0600);

	assert_true(fd >= 0);
	if (len)
		assert_int_equal(pwrite(fd, from, len, 0), len);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
}

/*
 * As an image made before backing formats: that header extension turned
 * into the end of the extensions.
 */
static void strip_backing_format(const char *name)
{
	static const uint8_t type[4] = { 0xe2, 0x79, 0x2a, 0xca };
	uint8_t buf[4096];
	int fd = open(path(name), O_RDWR);
	size_t i;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(buf));
	for (i = 72; i + 4 <= sizeof(buf) && memcmp(buf + i, type, 4); i += 8)
		;
	assert_true(i + 4 <= sizeof(buf));
	assert_int_equal(pwrite(fd, "\0\0\0\0", 4, i), 4);
	close(fd);
}

/* qcow2 image `name` over `backing` of format fmt (NULL: none named). */
static void make_overlay(const char *name, const char *backing,
			 const char *fmt, const char *compat)
{
	assert_int_equal(sh("cd %s && qemu-img create -q -f qcow2 -o compat=%s -u -b '%s' -F %s %s 16M",
			    rig_dir(), compat, backing, fmt ? fmt : "raw", name), 0);
	if (!fmt)
		strip_backing_format(name);
}

/* disk_open(), with what it said in err ("": nothing). */
static int open_said(struct disk *d, const char *name,
		     const char *backing_dir, char *err, size_t size)
{
	struct disk_params p = { .path = path(name),
				 .backing_dir = backing_dir };
	int saved = dup(STDERR_FILENO), fd, ret;
	ssize_t n;

	fd = open(path("err.txt"), O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, STDERR_FILENO);
	ret = disk_open(d, &p);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, err, size - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	close(fd);
	return ret;
}

/* It opens, and its first sector reads as `want`. */
static void assert_reads(const char *name, const char *backing_dir,
			 const void *want)
{
	uint8_t got[512];
	struct iovec iov = { got, sizeof(got) };
	char err[512];
	struct disk d;

	if (open_said(&d, name, backing_dir, err, sizeof(err)))
		fail_msg("%s did not open: %s", name, err);
	assert_int_equal(disk_readv(&d, &iov, 1, 0), 0);
	disk_close(&d);
	assert_memory_equal(got, want, sizeof(got));
}

/* Refused, in one line naming the image and the backing file's name. */
static void assert_refused(const char *name, const char *backing,
			   const char *backing_dir, const char *why)
{
	char err[1024];
	struct disk d;

	if (!open_said(&d, name, backing_dir, err, sizeof(err))) {
		disk_close(&d);
		fail_msg("%s (backing file %s) opened", name, backing);
	}
	if (!strstr(err, path(name)) || !strstr(err, backing) ||
	    !strstr(err, why) || strchr(err, '\n') != strrchr(err, '\n'))
		fail_msg("%s: expected one line naming it and %s, with \"%s\"; got \"%s\"",
			 name, backing, why, err);
}

/*
 * The attack: a raw disk whose sector 0 a guest filled with a qcow2
 * header naming a host file, under an overlay that says it is raw.
 */
static void test_backing_format_is_the_images_word(void **state)
{
	static uint8_t base[64 * 1024], secret[512] = SECRET, plain[512];
	char secret_path[128];
	int fd;

	snprintf(secret_path, sizeof(secret_path), "%s/secret", outside);
	make_file(secret_path, secret, sizeof(secret), 16 * MIB);
	assert_int_equal(sh("qemu-img create -q -f qcow2 -u -b %s -F raw %s 16M",
			    secret_path, path("evil.qcow2")), 0);
	fd = open(path("evil.qcow2"), O_RDONLY);
	assert_true(fd >= 0 && read(fd, base, sizeof(base)) > 512);
	close(fd);
	make_file(path("base.raw"), base, sizeof(base), 16 * MIB);
	memset(plain, 0x6b, sizeof(plain));
	make_file(path("plain.raw"), plain, sizeof(plain), 16 * MIB);

	/* said raw: the bytes the guest wrote, whatever they look like */
	make_overlay("raw2.qcow2", "base.raw", "raw", "0.10");
	assert_reads("raw2.qcow2", NULL, base);
	make_overlay("raw3.qcow2", "base.raw", "raw", "1.1");
	assert_reads("raw3.qcow2", NULL, base);
	/* said nothing: raw, but not something that looks like qcow2 */
	make_overlay("none.qcow2", "plain.raw", NULL, "1.1");
	assert_reads("none.qcow2", NULL, plain);
	make_overlay("none-evil.qcow2", "base.raw", NULL, "1.1");
	assert_refused("none-evil.qcow2", "base.raw", NULL, "looks like a qcow2");
	/* said qcow2 of what is not; said what lkvm does not read */
	make_overlay("q.qcow2", "plain.raw", "qcow2", "1.1");
	assert_refused("q.qcow2", "plain.raw", NULL, "not a qcow2 image");
	make_overlay("vmdk.qcow2", "plain.raw", "vmdk", "1.1");
	assert_refused("vmdk.qcow2", "plain.raw", NULL, "'vmdk' is not supported");
}

/* Absolute, `..`, a link: out of the image's directory only if allowed. */
static void test_backing_files_stay_in_the_image_directory(void **state)
{
	static uint8_t secret[512] = SECRET, mine[512];
	char secret_path[128], dotdot[128];

	snprintf(secret_path, sizeof(secret_path), "%s/secret", outside);
	make_file(secret_path, secret, sizeof(secret), 16 * MIB);
	snprintf(dotdot, sizeof(dotdot), "../%s/secret",
		 strrchr(outside, '/') + 1);
	assert_int_equal(symlink(secret_path, path("link.raw")), 0);
	make_overlay("abs.qcow2", secret_path, "raw", "1.1");
	assert_refused("abs.qcow2", secret_path, NULL,
		       "outside the image's directory");
	make_overlay("dotdot.qcow2", dotdot, "raw", "1.1");
	assert_refused("dotdot.qcow2", dotdot, NULL,
		       "outside the image's directory");
	make_overlay("link.qcow2", "link.raw", "raw", "1.1");
	assert_refused("link.qcow2", "link.raw", NULL,
		       "outside the image's directory");
	/* below the image's directory is inside it */
	assert_int_equal(mkdir(path("sub"), 0700), 0);
	memset(mine, 0x2d, sizeof(mine));
	make_file(path("sub/mine.raw"), mine, sizeof(mine), 16 * MIB);
	make_overlay("sub.qcow2", "sub/mine.raw", "raw", "1.1");
	assert_reads("sub.qcow2", NULL, mine);
	/* the user's say-so: backing-dir= */
	assert_reads("abs.qcow2", outside, secret);
	assert_reads("dotdot.qcow2", outside, secret);
	assert_reads("link.qcow2", outside, secret);
	assert_refused("abs.qcow2", "nowhere", path("nowhere"),
		       "No such file");
}

/* Devices, FIFOs, directories, kernel files: refused, even when allowed. */
static void test_backing_must_be_a_regular_file(void **state)
{
	struct stat st;

	assert_int_equal(mkfifo(path("fifo"), 0600), 0);
	make_overlay("fifo.qcow2", "fifo", "raw", "1.1");
	alarm(20);	/* opened to be read, a FIFO waits for a writer */
	assert_refused("fifo.qcow2", "fifo", NULL, "a FIFO");
	alarm(0);
	assert_int_equal(mkdir(path("adir"), 0700), 0);
	make_overlay("dir.qcow2", "adir", "raw", "1.1");
	assert_refused("dir.qcow2", "adir", NULL, "a directory");
	make_overlay("null.qcow2", "/dev/null", "raw", "1.1");
	assert_refused("null.qcow2", "/dev/null", "/dev", "a character device");
	if (!stat("/dev/loop0", &st) && S_ISBLK(st.st_mode)) {
		make_overlay("blk.qcow2", "/dev/loop0", "raw", "1.1");
		assert_refused("blk.qcow2", "/dev/loop0", "/dev",
			       "a block device");
	}
	make_overlay("proc.qcow2", "/proc/self/environ", "raw", "1.1");
	assert_refused("proc.qcow2", "/proc/self/environ", "/proc",
		       "kernel file");
	make_overlay("mem.qcow2", "/proc/self/mem", "raw", "1.1");
	assert_refused("mem.qcow2", "/proc/self/mem", "/", "kernel file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rw_versions),
		cmocka_unit_test(test_backing_file),
		cmocka_unit_test(test_compressed_clusters),
		cmocka_unit_test(test_autoclear_cleared),
		cmocka_unit_test(test_moved_disk_flushes),
		cmocka_unit_test(test_freed_clusters_reused),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_backing_format_is_the_images_word),
		cmocka_unit_test(test_backing_files_stay_in_the_image_directory),
		cmocka_unit_test(test_backing_must_be_a_regular_file),
		cmocka_unit_test(test_sigkill_mid_writes),
		cmocka_unit_test(test_corrupt_images),
	};

	if (sh("qemu-img --version >/dev/null 2>&1")) {
		fprintf(stderr, "qemu-img is missing: scripts/install-deps.sh installs qemu-utils\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
