// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 images (disk/qcow2.c) against what QEMU's own tools make and
 * check: images from qemu-img create/convert (versions 2 and 3, backing
 * files, compressed clusters), written and read through the disk API,
 * then qemu-img check must find no corruption and qemu-img convert must
 * give exactly the bytes a model of the disk expects. Also what lkvm
 * refuses, with one line naming it, and an image whose writer is killed
 * with SIGKILL in the middle of its writes.
 */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"

#define MIB		(1ULL << 20)
#define SIZE		(64 * MIB)

static char dir[64];

/* A shell command's exit status (qemu-img's); its output to /dev/null. */
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *path(const char *name)
{
	static char buf[4][128];
	static unsigned int n;
	char *p = buf[n++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

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
	snprintf(dir, sizeof(dir), "/tmp/lkvm-test-qcow2-XXXXXX");
	assert_non_null(mkdtemp(dir));
	model = calloc(1, SIZE);
	assert_non_null(model);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", dir);
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
	assert_int_equal(sh("cd %s && qemu-img create -q -f qcow2 -b base.raw -F raw -o compat=0.10 mid.qcow2 64M && qemu-img create -q -f qcow2 -b mid.qcow2 -F qcow2 top.qcow2 64M",
			    dir), 0);
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
	assert_int_equal(sh("cd %s && qemu-img create -q -f qcow2 l1.qcow2 16M && qemu-img create -q -f qcow2 -b l1.qcow2 -F qcow2 l2.qcow2 16M && qemu-img rebase -q -u -b l2.qcow2 -F qcow2 l1.qcow2",
			    dir), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rw_versions),
		cmocka_unit_test(test_backing_file),
		cmocka_unit_test(test_compressed_clusters),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_sigkill_mid_writes),
		cmocka_unit_test(test_corrupt_images),
	};

	if (sh("qemu-img --version >/dev/null 2>&1")) {
		fprintf(stderr, "qemu-img is missing: scripts/install-deps.sh installs qemu-utils\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
