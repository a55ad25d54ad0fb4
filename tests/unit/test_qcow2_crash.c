// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 under host crashes (disk/qcow2*.c's write ordering). The C
 * library's file calls are interposed (this binary's pwrite, fallocate,
 * fdatasync, ... stand in front of libc's): every write lkvm makes to the
 * image while a workload of guest writes, discards, write-zeroes and
 * flushes runs is recorded, and so is every completed fdatasync. Then,
 * for every cut point N of that record, the image a host crash could
 * leave is rebuilt: what the writes before the last completed sync wrote
 * is there; of the writes issued after it, before the Nth, the disk may
 * have kept any subset (they were in the page cache only; a page holds
 * the last write to it, so the record is cut into 4 KiB pieces of pages,
 * each kept or lost by itself, the kept ones laid down in the order they
 * were written). Tried per cut: all lost, all kept, every subset when
 * there are few pieces, else random ones.
 *
 * Each such image must pass qemu-img check (leaks are allowed), open in
 * lkvm, and read back, sector by sector, what the guest's completed
 * flushes promised: what it wrote before the last flush that returned,
 * or what it wrote since (old or new, each sector on its own), never
 * anything else (every sector the guest writes says which sector and
 * which write it is, so garbage, or another cluster's data, shows).
 *
 * On a sparse image, a compressed one (qemu-img convert -c) and one over
 * a backing file; LKVM_QCOW2_CRASH=full runs a longer campaign.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "libc_next.h"
#include "qcow2_rig.h"

extern char **environ;

/* ---- the fault-injecting layer: libc's calls on the traced image ---- */

enum op_kind { OP_WRITE, OP_ZERO, OP_SYNC };

struct op {
	enum op_kind kind;
	uint64_t off, len;
	size_t data;			/* OP_WRITE: where in `arena` */
};

static struct {
	char path[256];			/* the image being traced */
	int fd;				/* its descriptor while open, or -1 */
	struct op *ops;
	size_t n, cap;
	uint8_t *arena;
	size_t arena_len, arena_cap;
	uint64_t size;			/* the file's, as the record makes it */
} tr = { .fd = -1 };

static void record(enum op_kind kind, uint64_t off, const void *buf,
		   uint64_t len)
{
	struct op *o;

	if (tr.n == tr.cap) {
		tr.cap = tr.cap ? tr.cap * 2 : 4096;
		tr.ops = realloc(tr.ops, tr.cap * sizeof(*tr.ops));
		if (!tr.ops)
			abort();
	}
	o = &tr.ops[tr.n++];
	*o = (struct op) { .kind = kind, .off = off, .len = len };
	if (kind == OP_WRITE) {
		if (tr.arena_len + len > tr.arena_cap) {
			tr.arena_cap = MAX(tr.arena_cap * 2,
					   tr.arena_len + len + (1 << 20));
			tr.arena = realloc(tr.arena, tr.arena_cap);
			if (!tr.arena)
				abort();
		}
		memcpy(tr.arena + tr.arena_len, buf, len);
		o->data = tr.arena_len;
		tr.arena_len += len;
		tr.size = MAX(tr.size, off + len);
	}
}

static bool traced(int fd)
{
	return fd >= 0 && fd == tr.fd;
}

static int note_open(const char *p, int fd)
{
	if (fd >= 0 && tr.path[0] && !strcmp(p, tr.path))
		tr.fd = fd;
	return fd;
}

int open(const char *p, int flags, ...)
{
	static int (*f)(const char *, int, ...);
	mode_t mode;

	OPEN_MODE(flags, mode);
	LIBC_NEXT(f, "open");
	return note_open(p, f(p, flags, mode));
}

int open64(const char *p, int flags, ...)
	__attribute__((alias("open")));

int openat(int dirfd, const char *p, int flags, ...)
{
	static int (*f)(int, const char *, int, ...);
	mode_t mode;

	OPEN_MODE(flags, mode);
	LIBC_NEXT(f, "openat");
	return note_open(p, f(dirfd, p, flags, mode));
}

int close(int fd)
{
	static int (*f)(int);

	LIBC_NEXT(f, "close");
	if (traced(fd))
		tr.fd = -1;
	return f(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*f)(int, const void *, size_t, off_t);
	ssize_t n;

	LIBC_NEXT(f, "pwrite");
	n = f(fd, buf, len, off);
	if (traced(fd) && n > 0)
		record(OP_WRITE, off, buf, n);
	return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
	__attribute__((alias("pwrite")));

static void record_iov(const struct iovec *iov, int cnt, uint64_t off,
		       size_t n)
{
	for (int i = 0; i < cnt && n; i++) {
		size_t k = MIN(n, iov[i].iov_len);

		record(OP_WRITE, off, iov[i].iov_base, k);
		off += k;
		n -= k;
	}
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*f)(int, const struct iovec *, int, off_t);
	ssize_t n;

	LIBC_NEXT(f, "pwritev");
	n = f(fd, iov, cnt, off);
	if (traced(fd) && n > 0)
		record_iov(iov, cnt, off, n);
	return n;
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
		 int flags)
{
	static ssize_t (*f)(int, const struct iovec *, int, off_t, int);
	ssize_t n;

	LIBC_NEXT(f, "pwritev2");
	n = f(fd, iov, cnt, off, flags);
	if (traced(fd) && n > 0)
		record_iov(iov, cnt, off, n);
	return n;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*f)(int, const void *, size_t);

	LIBC_NEXT(f, "write");
	if (traced(fd))
		abort();	/* lkvm writes images at offsets only */
	return f(fd, buf, len);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	static int (*f)(int, int, off_t, off_t);
	int ret;

	LIBC_NEXT(f, "fallocate");
	ret = f(fd, mode, off, len);
	if (traced(fd) && !ret) {
		if (!(mode & FALLOC_FL_KEEP_SIZE))
			abort();	/* a size change the model lacks */
		if ((uint64_t)off < tr.size)
			record(OP_ZERO, off, NULL,
			       MIN((uint64_t)len, tr.size - off));
	}
	return ret;
}

int fallocate64(int fd, int mode, off_t off, off_t len)
	__attribute__((alias("fallocate")));

int ftruncate(int fd, off_t len)
{
	static int (*f)(int, off_t);

	LIBC_NEXT(f, "ftruncate");
	if (traced(fd))
		abort();
	return f(fd, len);
}

static int synced(int fd, int ret)
{
	if (traced(fd) && !ret)
		record(OP_SYNC, 0, NULL, 0);
	return ret;
}

int fdatasync(int fd)
{
	static int (*f)(int);

	LIBC_NEXT(f, "fdatasync");
	return synced(fd, f(fd));
}

int fsync(int fd)
{
	static int (*f)(int);

	LIBC_NEXT(f, "fsync");
	return synced(fd, f(fd));
}

/* ---- sectors that say what they are ---- */

#define SECTOR		512
#define MAGIC		0x4c4b564d43525348ULL	/* "LKVMCRSH" */
#define GEN_ZERO	0			/* a sector of zeroes */
#define GEN_BASE	1			/* the base image's */

/*
 * Sector `s` as write `gen` leaves it: magic, sector, gen, then one byte
 * over and over (so that qemu-img convert -c compresses a base of them).
 */
static void tag(uint8_t *p, uint64_t s, uint32_t gen)
{
	uint64_t hdr[3] = { MAGIC, s, gen };

	memcpy(p, hdr, sizeof(hdr));
	memset(p + sizeof(hdr), (int)(s * 7 + gen * 13) | 1,
	       SECTOR - sizeof(hdr));
}

/* The gen a sector holds, GEN_ZERO, or -1: garbage, or another's. */
static int64_t untag(const uint8_t *p, uint64_t s)
{
	uint8_t want[SECTOR];
	uint64_t hdr[3];
	size_t i;

	for (i = 0; i < SECTOR && !p[i]; i++)
		;
	if (i == SECTOR)
		return GEN_ZERO;
	memcpy(hdr, p, sizeof(hdr));
	if (hdr[0] != MAGIC || hdr[1] != s || hdr[2] > UINT32_MAX)
		return -1;
	tag(want, s, hdr[2]);
	return memcmp(want, p, SECTOR) ? -1 : (int64_t)hdr[2];
}

/* ---- the guest's workload, and what it may read back ---- */

enum gop_kind { G_WRITE, G_ZERO, G_FLUSH };

struct gop {
	enum gop_kind kind;
	uint64_t sector, count;
	uint32_t gen;
	size_t t0, t1;			/* the record before and after it */
	uint32_t *flushed;		/* G_FLUSH: every sector's gen then */
};

struct campaign {
	const char *name;
	uint64_t sectors;		/* the virtual disk's */
	struct gop *g;
	size_t ng;
	uint32_t *cur;			/* the model: every sector's gen */
	uint32_t *at_start;
	unsigned int seed;
	/* counts */
	unsigned long cuts, images, bad_check, bad_open, bad_data;
};

static uint64_t rnd(unsigned int *seed, uint64_t n)
{
	uint64_t r = (uint64_t)rand_r(seed) << 31 | rand_r(seed);

	return n ? r % n : 0;
}

static void guest_op(struct campaign *c, struct disk *d, enum gop_kind kind,
		     uint64_t s, uint64_t n, bool unmap)
{
	struct gop *g = &c->g[c->ng++];
	static uint8_t buf[256 * SECTOR];
	struct iovec iov = { buf, n * SECTOR };
	uint32_t gen = (uint32_t)c->ng + GEN_BASE;

	*g = (struct gop) { .kind = kind, .sector = s, .count = n,
			    .gen = kind == G_WRITE ? gen : GEN_ZERO,
			    .t0 = tr.n };
	switch (kind) {
	case G_WRITE:
		for (uint64_t i = 0; i < n; i++)
			tag(buf + i * SECTOR, s + i, gen);
		assert_int_equal(disk_writev(d, &iov, 1, s * SECTOR), 0);
		break;
	case G_ZERO:
		assert_int_equal(unmap ? disk_discard(d, s * SECTOR,
						      n * SECTOR)
				       : disk_write_zeroes(d, s * SECTOR,
							   n * SECTOR, false),
				 0);
		break;
	case G_FLUSH:
		assert_int_equal(disk_flush(d), 0);
		g->flushed = malloc(c->sectors * sizeof(uint32_t));
		assert_non_null(g->flushed);
		memcpy(g->flushed, c->cur, c->sectors * sizeof(uint32_t));
		break;
	}
	g->t1 = tr.n;
	for (uint64_t i = 0; kind != G_FLUSH && i < n; i++)
		c->cur[s + i] = g->gen;
}

/*
 * Writes of all sizes (whole clusters, parts, across), zeroes, flushes:
 * often, but not in every other stretch of 30 requests, so that more L2
 * tables change between two flushes than the cache holds.
 */
static void workload(struct campaign *c, struct disk *d, unsigned int nops,
		     uint64_t cluster_sectors)
{
	unsigned int *seed = &c->seed;

	for (unsigned int i = 0; i < nops; i++) {
		unsigned int r = rnd(seed, 100);

		if (r >= 82 && i / 30 % 2)
			r = rnd(seed, 60);
		uint64_t n = 1 + rnd(seed, 32), s;

		if (r < 20)	/* whole clusters */
			n = cluster_sectors * (1 + rnd(seed, 3));
		n = MIN(n, 256);
		s = rnd(seed, c->sectors - n + 1);
		if (r >= 60 && r < 82 && c->ng && rnd(seed, 3)) {
			/* zeroes where the guest wrote: clusters freed */
			const struct gop *g = &c->g[rnd(seed, c->ng)];

			s = g->sector;
			n = MAX(n, g->count + cluster_sectors);
			n = MIN(n, c->sectors - s);
		}
		if (r < 20 || r % 3 == 0)
			s -= s % cluster_sectors;
		if (r < 60)
			guest_op(c, d, G_WRITE, s, n, false);
		else if (r < 72)
			guest_op(c, d, G_ZERO, s, n, true);
		else if (r < 82)
			guest_op(c, d, G_ZERO, s, n, false);
		else
			guest_op(c, d, G_FLUSH, 0, 0, false);
	}
	guest_op(c, d, G_FLUSH, 0, 0, false);
}

/* ---- rebuilding what a crash at a cut point leaves ---- */

#define PIECE		4096

struct piece {
	size_t op;
	uint64_t off, len;		/* within one page */
};

static struct {
	uint8_t *img;			/* durable: up to the last sync */
	uint64_t size, cap;
	size_t upto;			/* ops applied to img */
	int fd;				/* crash.qcow2, holding img */
} dur;

static void grow(uint64_t size)
{
	if (size <= dur.cap)
		return;
	dur.cap = MAX(size, dur.cap * 2);
	dur.img = realloc(dur.img, dur.cap);
	assert_non_null(dur.img);
}

static void apply_mem(const struct op *o, uint64_t off, uint64_t len)
{
	if (o->kind == OP_SYNC)
		return;
	if (o->kind == OP_ZERO) {
		if (off >= dur.size)
			return;
		len = MIN(len, dur.size - off);
	}
	grow(off + len);
	if (off > dur.size)
		memset(dur.img + dur.size, 0, off - dur.size);
	if (o->kind == OP_WRITE)
		memcpy(dur.img + off, tr.arena + o->data + (off - o->off), len);
	else
		memset(dur.img + off, 0, len);
	dur.size = MAX(dur.size, off + len);
}

/*
 * A piece onto crash.qcow2 (not into dur.img), whose size is *size: a
 * hole punched past it does nothing.
 */
static bool apply_file(const struct piece *p, uint64_t *size)
{
	static const uint8_t zero[PIECE];
	const struct op *o = &tr.ops[p->op];
	uint64_t len = p->len;

	if (o->kind == OP_ZERO) {
		if (p->off >= *size)
			return false;
		len = MIN(len, *size - p->off);
	}
	assert_int_equal(pwrite(dur.fd, o->kind == OP_WRITE ?
				tr.arena + o->data + (p->off - o->off) : zero,
				len, p->off), (ssize_t)len);
	*size = MAX(*size, p->off + len);
	return true;
}

/* crash.qcow2 back to dur.img where pieces went. */
static void restore_file(const struct piece *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t off = p[i].off;
		uint64_t have = off < dur.size ? MIN(p[i].len, dur.size - off)
					       : 0;

		if (have)
			assert_int_equal(pwrite(dur.fd, dur.img + off, have,
						off), (ssize_t)have);
	}
	assert_int_equal(ftruncate(dur.fd, dur.size), 0);
}

static size_t cut_pieces(size_t from, size_t to, struct piece **out)
{
	static struct piece *p;
	static size_t cap;
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		const struct op *o = &tr.ops[i];
		uint64_t off = o->off, end = o->off + o->len;

		if (o->kind == OP_SYNC)
			continue;
		while (off < end) {
			uint64_t next = MIN(end, ALIGN_DOWN(off, PIECE) + PIECE);

			if (n == cap) {
				cap = cap ? cap * 2 : 1024;
				p = realloc(p, cap * sizeof(*p));
				assert_non_null(p);
			}
			p[n++] = (struct piece) { i, off, next - off };
			off = next;
		}
	}
	*out = p;
	return n;
}

static int run(const char *const argv[])
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, (char **)argv, environ))
		abort();
	posix_spawn_file_actions_destroy(&fa);
	if (waitpid(pid, &st, 0) != pid)
		abort();
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The newest flush that had returned before the cut, or -1. */
static ssize_t last_flush(const struct campaign *c, size_t cut)
{
	ssize_t f = -1;

	for (size_t i = 0; i < c->ng && c->g[i].t1 <= cut; i++)
		if (c->g[i].kind == G_FLUSH)
			f = i;
	return f;
}

/* May sector s read `gen` after a crash at `cut`? */
static bool allowed(const struct campaign *c, size_t cut, ssize_t f,
		    uint64_t s, uint32_t gen)
{
	size_t i = f < 0 ? 0 : (size_t)f + 1;

	if (gen == (f < 0 ? c->at_start : c->g[f].flushed)[s])
		return true;
	for (; i < c->ng && c->g[i].t0 < cut; i++) {
		const struct gop *g = &c->g[i];

		if (g->kind != G_FLUSH && s >= g->sector &&
		    s < g->sector + g->count && g->gen == gen)
			return true;
	}
	return false;
}

static unsigned long reported;

static void bad(const struct campaign *c, size_t cut, const char *what)
{
	if (reported++ < 8)
		fprintf(stderr, "%s: cut %zu of %zu: %s\n", c->name, cut, tr.n,
			what);
}

/* The image in crash.qcow2 now: check it as the crash left it. */
static void check_image(struct campaign *c, size_t cut)
{
	static const char *const qcheck[] = {
		"qemu-img", "check", "-q", NULL, NULL,
	};
	const char *argv[5];
	struct disk_params p = { .path = path("crash.qcow2"),
				 .readonly = true };
	static uint8_t buf[256 * SECTOR];
	struct iovec iov = { buf, sizeof(buf) };
	ssize_t f = last_flush(c, cut);
	enum log_level saved = log_threshold;
	struct disk d;
	int rc;

	c->images++;
	memcpy(argv, qcheck, sizeof(argv));
	argv[3] = path("crash.qcow2");
	rc = run(argv);
	if (rc != 0 && rc != 3) {
		c->bad_check++;
		bad(c, cut, "qemu-img check finds corruption");
		return;
	}
	log_threshold = LOG_SILENT;
	rc = disk_open(&d, &p);
	log_threshold = saved;
	if (rc) {
		c->bad_open++;
		bad(c, cut, "lkvm cannot open it");
		return;
	}
	for (uint64_t s = 0; s < c->sectors; s += 256) {
		int64_t gen;

		if (disk_readv(&d, &iov, 1, s * SECTOR)) {
			c->bad_data++;
			bad(c, cut, "a read fails");
			break;
		}
		for (uint64_t i = 0; i < 256; i++) {
			gen = untag(buf + i * SECTOR, s + i);
			if (gen >= 0 && allowed(c, cut, f, s + i, gen))
				continue;
			c->bad_data++;
			bad(c, cut, gen < 0 ? "a sector holds garbage"
					    : "a flushed sector is lost");
			i = 256;
			s = c->sectors;
		}
	}
	disk_close(&d);
}

static void try_subset(struct campaign *c, size_t cut, struct piece *p,
		       size_t n, const bool *keep)
{
	static struct piece kept[4096];
	uint64_t size = dur.size;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!keep[i] || !apply_file(&p[i], &size))
			continue;
		if (k < ARRAY_SIZE(kept))
			kept[k] = p[i];
		k++;
	}
	check_image(c, cut);
	if (k > ARRAY_SIZE(kept))
		restore_file(p, n);
	else if (k)
		restore_file(kept, k);
}

static void write_durable(void)
{
	assert_int_equal(ftruncate(dur.fd, 0), 0);
	assert_int_equal(pwrite(dur.fd, dur.img, dur.size, 0),
			 (ssize_t)dur.size);
}

/* Every cut point of the record, `random` random subsets at each. */
static void crash_everywhere(struct campaign *c, const uint8_t *base,
			     uint64_t base_len, unsigned int random)
{
	size_t last_sync = 0;
	bool *keep = NULL;
	unsigned int seed = 7;

	dur.size = 0;
	grow(base_len);
	memcpy(dur.img, base, base_len);
	dur.size = base_len;
	dur.upto = 0;
	dur.fd = open(path("crash.qcow2"), O_CREAT | O_TRUNC | O_RDWR, 0600);
	assert_true(dur.fd >= 0);
	write_durable();
	for (size_t cut = 0; cut <= tr.n; cut++) {
		struct piece *p;
		size_t n;

		/* a sync the cut has passed: everything before it is there */
		if (cut && tr.ops[cut - 1].kind == OP_SYNC) {
			for (; dur.upto < cut; dur.upto++)
				apply_mem(&tr.ops[dur.upto],
					  tr.ops[dur.upto].off,
					  tr.ops[dur.upto].len);
			last_sync = cut;
			write_durable();
		}
		n = cut_pieces(last_sync, cut, &p);
		keep = realloc(keep, (n + 1) * sizeof(*keep));
		assert_non_null(keep);
		c->cuts++;
		if (n <= 4) {
			for (unsigned int m = 0; m < 1U << n; m++) {
				for (size_t i = 0; i < n; i++)
					keep[i] = m >> i & 1;
				try_subset(c, cut, p, n, keep);
			}
			continue;
		}
		for (unsigned int r = 0; r < 2 + random; r++) {
			unsigned int bias = r < 2 ? 0 : 1 + rnd(&seed, 9);

			for (size_t i = 0; i < n; i++)
				keep[i] = r == 1 || (r > 1 &&
						     rnd(&seed, 10) < bias);
			try_subset(c, cut, p, n, keep);
		}
	}
	close(dur.fd);
	free(keep);
}

/* The record, replayed whole over the base, is the file lkvm left. */
static void replay_is_exact(const uint8_t *base, uint64_t base_len)
{
	uint8_t *final;
	size_t len;

	dur.size = 0;
	grow(base_len);
	memcpy(dur.img, base, base_len);
	dur.size = base_len;
	for (size_t i = 0; i < tr.n; i++)
		apply_mem(&tr.ops[i], tr.ops[i].off, tr.ops[i].len);
	final = img_read("img.qcow2", &len);
	assert_int_equal(len, dur.size);
	assert_memory_equal(final, dur.img, len);
	free(final);
}

/* Writes of the record over a range an earlier hole punch freed. */
static size_t reuses(void)
{
	size_t n = 0;

	for (size_t i = 0; i < tr.n; i++) {
		const struct op *w = &tr.ops[i];

		for (size_t j = 0; w->kind == OP_WRITE && j < i; j++)
			if (tr.ops[j].kind == OP_ZERO &&
			    w->off < tr.ops[j].off + tr.ops[j].len &&
			    tr.ops[j].off < w->off + w->len) {
				n++;
				break;
			}
	}
	return n;
}

/* LKVM_QCOW2_CRASH=full: a workload 6 times as long, 8 random subsets. */
static bool full(void)
{
	const char *e = getenv("LKVM_QCOW2_CRASH");

	return e && !strcmp(e, "full");
}

/*
 * The campaign on img.qcow2 (already made): the workload, recorded;
 * then every cut point.
 */
static void campaign(const char *name, unsigned int nops,
		     uint64_t cluster_sectors, const uint32_t *at_start,
		     unsigned int seed)
{
	struct campaign c = { .name = name, .seed = seed };
	struct disk_params p = { .path = path("img.qcow2") };
	unsigned int random = full() ? 8 : 1;
	uint8_t *base;
	size_t base_len;
	struct disk d;

	nops *= full() ? 6 : 1;
	base = img_read("img.qcow2", &base_len);
	tr.n = tr.arena_len = 0;
	tr.size = base_len;
	snprintf(tr.path, sizeof(tr.path), "%s", p.path);
	assert_int_equal(disk_open(&d, &p), 0);
	assert_true(traced(d.file.fd));
	c.sectors = d.size / SECTOR;
	c.g = calloc(nops + 1, sizeof(*c.g));
	c.cur = malloc(c.sectors * sizeof(uint32_t));
	assert_true(c.g && c.cur);
	c.at_start = malloc(c.sectors * sizeof(uint32_t));
	assert_non_null(c.at_start);
	memcpy(c.cur, at_start, c.sectors * sizeof(uint32_t));
	memcpy(c.at_start, at_start, c.sectors * sizeof(uint32_t));
	workload(&c, &d, nops, cluster_sectors);
	disk_close(&d);
	tr.path[0] = 0;
	assert_true(tr.n > 0);
	replay_is_exact(base, base_len);
	crash_everywhere(&c, base, base_len, random);
	fprintf(stderr, "%s: %zu guest requests, %zu writes and syncs recorded (%zu into clusters punched before: reused); %lu cut points, %lu images: %lu failed qemu-img check, %lu did not open, %lu read back wrong\n",
		name, c.ng, tr.n, reuses(), c.cuts, c.images, c.bad_check,
		c.bad_open, c.bad_data);
	for (size_t i = 0; i < c.ng; i++)
		free(c.g[i].flushed);
	free(c.g);
	free(c.cur);
	free(c.at_start);
	free(base);
	assert_int_equal(c.bad_check + c.bad_open + c.bad_data, 0);
	assert_true(reuses() > 0);	/* the campaign covers reuse */
}

/* ---- the images ---- */

#define VSIZE		(4 * MIB)
#define VSECTORS	(VSIZE / SECTOR)

static uint32_t zeroes_gen[VSECTORS], base_gen[VSECTORS];

/* base.raw: tagged sectors, but for its last quarter (zeroes, a hole). */
static void make_base(void)
{
	uint8_t *buf = malloc(VSIZE);
	int fd;

	assert_non_null(buf);
	memset(buf, 0, VSIZE);
	for (uint64_t s = 0; s < VSECTORS * 3 / 4; s++) {
		tag(buf + s * SECTOR, s, GEN_BASE);
		base_gen[s] = GEN_BASE;
	}
	fd = open(path("base.raw"), O_CREAT | O_TRUNC | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, VSIZE * 3 / 4, 0), VSIZE * 3 / 4);
	assert_int_equal(ftruncate(fd, VSIZE), 0);
	close(fd);
	free(buf);
}

static void test_crash_sparse(void **state)
{
	assert_int_equal(sh("qemu-img create -q -f qcow2 -o cluster_size=4096 %s 4M",
			    path("img.qcow2")), 0);
	campaign("sparse, 4 KiB clusters", 70, 8, zeroes_gen, 1);
}

/* Tiny clusters: an L2 table per 32 KiB, so the L2 cache overflows. */
static void test_crash_small_clusters_v2(void **state)
{
	assert_int_equal(sh("qemu-img create -q -f qcow2 -o compat=0.10,cluster_size=512 %s 4M",
			    path("img.qcow2")), 0);
	campaign("sparse v2, 512-byte clusters", 70, 1, zeroes_gen, 2);
}

static void test_crash_compressed(void **state)
{
	make_base();
	assert_int_equal(sh("qemu-img convert -q -c -O qcow2 -o cluster_size=4096 %s %s",
			    path("base.raw"), path("img.qcow2")), 0);
	assert_int_equal(sh("qemu-img info %s | grep -q 'compression type'",
			    path("img.qcow2")), 0);
	campaign("compressed, 4 KiB clusters", 70, 8, base_gen, 3);
}

static void test_crash_backing(void **state)
{
	make_base();
	assert_int_equal(sh("qemu-img create -q -f qcow2 -b base.raw -F raw -o cluster_size=16384 %s 4M",
			    path("img.qcow2")), 0);
	campaign("over a backing file, 16 KiB clusters", 70, 32, base_gen, 4);
}

static int setup(void **state)
{
	return rig_setup("qcow2-crash");
}

static int teardown(void **state)
{
	rig_teardown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_sparse),
		cmocka_unit_test(test_crash_small_clusters_v2),
		cmocka_unit_test(test_crash_compressed),
		cmocka_unit_test(test_crash_backing),
	};

	if (sh("qemu-img --version >/dev/null 2>&1")) {
		fprintf(stderr, "qemu-img is missing: scripts/install-deps.sh installs qemu-utils\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
