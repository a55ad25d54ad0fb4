// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for qcow2 images (make fuzz-qcow2): a user's image
 * may be anything. The input's first byte picks how the image is made:
 *
 *   0: raw: a 16-bit length, that many bytes of image file;
 *   1: built: the fuzzer's bytes choose a qcow2 (cluster size, version,
 *      L1 size, which L2 tables exist, each L2 entry: unallocated, data,
 *      zero, compressed (real deflate streams), or hostile (into a table,
 *      misaligned, past the end), autoclear bits, a backing file name
 *      from a list of tricky ones or raw bytes), with refcounts that match
 *      unless it was told otherwise, then a few bytes patched.
 *
 * Then requests: read, write, discard, write-zeroes, flush. The image goes
 * through a file into disk_open(), as `lkvm run -d` does, and the disk is
 * closed at the end (its tables written back).
 *
 * Either it is refused, or every request fails or succeeds: never a
 * crash, never a read or write outside our buffers (ASan). And, checked
 * on every call lkvm makes to the C library (this binary's open, pread,
 * pwrite, ... stand in front of libc's):
 *
 * - lkvm opens the image, and read-only the backing files its chain
 *   names (resolved next to the naming image, or as given when
 *   absolute), nothing else; what lies outside the fuzzer's folder is not
 *   really opened (ENOENT) so that no name reaches the rest of the host;
 * - it reads and writes only those files, writes only the image, and
 *   never past its end by more than the cluster it is adding;
 * - the image it accepted has no two tables in one place (the header, the
 *   L1 and refcount tables, refcount blocks and L2 tables, as the fuzzer
 *   reads them from the file), and what it writes keeps it so: a table
 *   grows only over clusters that are no table, the header changes only
 *   in its autoclear field, and no guest data (the fuzzer's sectors carry
 *   a marker word no image byte may hold) lands on a table;
 * - on an image whose refcounts match its tables (built, unpatched), what
 *   a successful read returns is what the last successful write there
 *   wrote (or zeroes after a discard): two guest sectors never share a
 *   cluster.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "fuzz_common.h"
#include "../unit/libc_next.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

#define MAX_REQS	32
#define MAX_BYTES	(64 * 1024)
#define MAX_IMAGE	(1 << 20)
#define MARK		0xa5c35a3c0f1e2d4bULL	/* in every guest sector */
#define COPIED		(1ULL << 63)
#define COMPRESSED	(1ULL << 62)
#define OFFSET_MASK	0x00fffffffffffe00ULL

static char dir[64], img[96];
static uint8_t wbuf[MAX_BYTES], rbuf[MAX_BYTES];

/* ---- what lkvm may open, read and write ---- */

#define MAX_FILES	16
#define MAX_META	4096

struct file {
	int fd;
	char path[PATH_MAX];
	bool image;			/* the one lkvm may write */
	uint64_t size;			/* as its writes make it */
	uint64_t cluster;		/* its header's (qcow2), else 512 */
};

static struct {
	bool on;			/* lkvm is running: check */
	struct file files[MAX_FILES];
	unsigned int nr_files;
	/* the paths lkvm may open: the image, the backing names seen */
	char allowed[MAX_FILES][PATH_MAX];
	unsigned int nr_allowed;
	/* the image's tables, as read from its file (cluster << 3 | kind) */
	bool shadow;
	uint64_t l1_off, l1_len, rt_off, rt_len, cs;
	uint64_t meta[MAX_META];
	unsigned int nr_meta;
} w;

enum { K_HEADER = 1, K_L1, K_RT, K_RB, K_L2 };

static ssize_t real_pread(int fd, void *buf, size_t len, off_t off)
{
	static ssize_t (*f)(int, void *, size_t, off_t);

	LIBC_NEXT(f, "pread");
	return f(fd, buf, len, off);
}

static struct file *file_of(int fd)
{
	for (unsigned int i = 0; i < w.nr_files; i++)
		if (w.files[i].fd == fd)
			return &w.files[i];
	return NULL;
}

static uint64_t be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/*
 * A file lkvm opened: if it is a qcow2, the backing file its header names
 * is allowed next, resolved as lkvm's rule says (next to the naming file
 * unless absolute; up to the name's first NUL).
 */
static void note_file(int fd, const char *path, bool image)
{
	uint8_t h[104] = { 0 }, name[1024] = { 0 };
	struct file *f;
	struct stat st;
	uint64_t boff;
	uint32_t blen;
	const char *slash;

	CHECK(w.nr_files < MAX_FILES);
	f = &w.files[w.nr_files++];
	f->fd = fd;
	f->image = image;
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->size = fstat(fd, &st) ? 0 : st.st_size;
	f->cluster = 512;
	if (real_pread(fd, h, sizeof(h), 0) < 32 || be(h, 4) != 0x514649fb)
		return;
	if (be(h + 20, 4) >= 9 && be(h + 20, 4) <= 21)
		f->cluster = 1ULL << be(h + 20, 4);
	boff = be(h + 8, 8);
	blen = be(h + 16, 4);
	if (!boff || !blen || blen > 1023 ||
	    real_pread(fd, name, blen, boff) != (ssize_t)blen ||
	    w.nr_allowed == MAX_FILES)
		return;
	slash = strrchr(path, '/');
	if (name[0] == '/' || !slash)
		snprintf(w.allowed[w.nr_allowed++], PATH_MAX, "%s", name);
	else
		snprintf(w.allowed[w.nr_allowed++], PATH_MAX, "%.*s%s",
			 (int)(slash - path + 1), path, name);
}

static bool inside(const char *p)
{
	size_t n = strlen(dir);

	return !strncmp(p, dir, n) && p[n] == '/' && !strstr(p, "/..");
}

/* Check an open lkvm makes; -2: refuse it (outside the folder). */
static int open_check(const char *p, int flags)
{
	bool image = !strcmp(p, img);
	unsigned int i;

	if (!w.on)
		return 0;
	for (i = 0; !image && i < w.nr_allowed; i++)
		if (!strcmp(p, w.allowed[i]))
			break;
	CHECK(image || i < w.nr_allowed);	/* nothing unnamed */
	CHECK(!(flags & (O_CREAT | O_TRUNC)));
	CHECK(image || (flags & O_ACCMODE) == O_RDONLY);
	return inside(p) ? 0 : -2;
}

static int opened(const char *p, int fd)
{
	if (w.on && fd >= 0)
		note_file(fd, p, !strcmp(p, img));
	return fd;
}

int open(const char *p, int flags, ...)
{
	static int (*f)(const char *, int, ...);
	mode_t mode;

	OPEN_MODE(flags, mode);
	LIBC_NEXT(f, "open");
	if (open_check(p, flags) == -2) {
		errno = ENOENT;
		return -1;
	}
	return opened(p, f(p, flags, mode));
}

int open64(const char *p, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *p, int flags, ...)
{
	static int (*f)(int, const char *, int, ...);
	char full[PATH_MAX * 2], link[64], at[PATH_MAX];
	mode_t mode;
	ssize_t n;

	OPEN_MODE(flags, mode);
	LIBC_NEXT(f, "openat");
	snprintf(full, sizeof(full), "%s", p);
	if (w.on && p[0] != '/') {
		CHECK(dirfd != AT_FDCWD);	/* relative to what? */
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = readlink(link, at, sizeof(at) - 1);
		CHECK(n > 0);
		at[n] = 0;
		snprintf(full, sizeof(full), "%s/%s", at, p);
	}
	if (open_check(full, flags) == -2) {
		errno = ENOENT;
		return -1;
	}
	return opened(full, f(dirfd, p, flags, mode));
}

int openat64(int dirfd, const char *p, int flags, ...)
	__attribute__((alias("openat")));

int close(int fd)
{
	static int (*f)(int);
	struct file *file = file_of(fd);

	LIBC_NEXT(f, "close");
	if (file)
		*file = w.files[--w.nr_files];
	return f(fd);
}

/* ---- the image's tables, as its file says ---- */

static bool meta_has(uint64_t cluster, unsigned int *kind)
{
	for (unsigned int i = 0; i < w.nr_meta; i++)
		if (w.meta[i] >> 3 == cluster) {
			*kind = w.meta[i] & 7;
			return true;
		}
	return false;
}

/* A new table at off: on no other one, aligned, or lkvm broke the image. */
static void meta_add(uint64_t off, uint64_t len, unsigned int kind)
{
	unsigned int k;

	CHECK(!(off & (w.cs - 1)));
	for (uint64_t c = off / w.cs; c <= (off + len - 1) / w.cs; c++) {
		CHECK(!meta_has(c, &k));
		CHECK(w.nr_meta < MAX_META);
		w.meta[w.nr_meta++] = c << 3 | kind;
	}
}

static uint64_t read_be64(int fd, uint64_t off)
{
	uint8_t b[8] = { 0 };

	CHECK(real_pread(fd, b, 8, off) >= 0);
	return be(b, 8);
}

/* The tables a table's entries (masked) name: within the file. */
static void shadow_table(const struct file *f, uint64_t off, uint64_t len,
			 uint64_t mask, unsigned int kind)
{
	uint8_t *t = malloc(len ? len : 1);

	CHECK(t && real_pread(f->fd, t, len, off) == (ssize_t)len);
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t e = be(t + i, 8) & mask;

		if (e) {
			CHECK(e + w.cs <= f->size);
			meta_add(e, w.cs, kind);
		}
	}
	free(t);
}

/*
 * After lkvm accepted the image: its tables, read from the file, lie on
 * no one else and within the file; else the open should have refused.
 */
static void shadow_load(const struct file *f)
{
	uint8_t h[104] = { 0 };

	CHECK(real_pread(f->fd, h, sizeof(h), 0) >= 72);
	w.cs = f->cluster;
	w.nr_meta = 0;
	w.l1_len = be(h + 36, 4) * 8;
	w.l1_off = be(h + 40, 8);
	w.rt_off = be(h + 48, 8);
	w.rt_len = be(h + 56, 4) * w.cs;
	meta_add(0, w.cs, K_HEADER);
	CHECK(w.rt_off + w.rt_len <= f->size && w.rt_len);
	meta_add(w.rt_off, w.rt_len, K_RT);
	if (w.l1_len) {
		CHECK(w.l1_off + w.l1_len <= f->size);
		meta_add(w.l1_off, w.l1_len, K_L1);
	}
	shadow_table(f, w.rt_off, w.rt_len, ~0ULL, K_RB);
	shadow_table(f, w.l1_off, w.l1_len, OFFSET_MASK, K_L2);
	w.shadow = true;
}

static bool marked(const uint8_t *p, size_t len, uint64_t off)
{
	size_t i = (8 - off % 8) % 8;

	for (; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		if (v == MARK)
			return true;
	}
	return false;
}

/* New entries of the L1 or refcount table name new tables. */
static void table_entries(const struct file *f, const uint8_t *p, size_t len,
			  uint64_t off, unsigned int kind)
{
	unsigned int k;

	CHECK(!(off % 8) && !(len % 8));
	for (size_t i = 0; i < len; i += 8) {
		uint64_t e = be(p + i, 8), old, t;

		old = read_be64(f->fd, off + i);
		if (e == old)
			continue;	/* written back as it was */
		if (kind == K_L1) {
			CHECK(!(e & ~(OFFSET_MASK | COPIED)));
			t = e & OFFSET_MASK;
			old &= OFFSET_MASK;
		} else {
			CHECK(!(e & 511));
			t = e;
		}
		if (!t || t == old)
			continue;
		CHECK(!old);		/* lkvm never moves a table */
		if (meta_has(t / w.cs, &k))
			CHECK(0);	/* a new table over an old one */
		meta_add(t, w.cs, kind == K_L1 ? K_L2 : K_RB);
	}
}

/* A write lkvm makes to the image, before it happens. */
static void check_write(struct file *f, const void *buf, size_t len,
			uint64_t off)
{
	uint64_t end = ALIGN_UP(f->size, f->cluster), c;
	unsigned int kind;

	CHECK(f->image);
	CHECK(off <= end && off + len <= end + f->cluster);
	if (!w.shadow || !len)
		return;
	for (c = off / w.cs; c <= (off + len - 1) / w.cs; c++) {
		if (!meta_has(c, &kind))
			continue;
		switch (kind) {
		case K_HEADER:
			CHECK(off == 88 && len == 8);	/* autoclear */
			break;
		case K_L1:
			CHECK(range_within(off, len, w.l1_off, w.l1_len));
			table_entries(f, buf, len, off, K_L1);
			break;
		case K_RT:
			CHECK(range_within(off, len, w.rt_off, w.rt_len));
			table_entries(f, buf, len, off, K_RT);
			break;
		default:	/* a block or L2 table: itself, no guest data */
			CHECK(off / w.cs == (off + len - 1) / w.cs);
			CHECK(!marked(buf, len, off));
			break;
		}
	}
}

static void wrote(struct file *f, uint64_t off, size_t n)
{
	f->size = MAX(f->size, off + n);
}

static void check_read(int fd, uint64_t off)
{
	struct file *f = file_of(fd);

	if (!w.on)
		return;
	CHECK(f);	/* lkvm reads nothing it did not open */
	CHECK(off <= MAX(ALIGN_UP(f->size, f->cluster), 65536));
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	check_read(fd, off);
	return real_pread(fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
	__attribute__((alias("pread")));

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*f)(int, const struct iovec *, int, off_t);

	LIBC_NEXT(f, "preadv");
	check_read(fd, off);
	return f(fd, iov, cnt, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
	__attribute__((alias("preadv")));

static struct file *write_file(int fd)
{
	struct file *f = file_of(fd);

	if (w.on)
		CHECK(f);	/* lkvm writes nothing it did not open */
	return w.on ? f : NULL;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*f)(int, const void *, size_t, off_t);
	struct file *file = write_file(fd);
	ssize_t n;

	LIBC_NEXT(f, "pwrite");
	if (file)
		check_write(file, buf, len, off);
	n = f(fd, buf, len, off);
	if (file && n > 0)
		wrote(file, off, n);
	return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
	__attribute__((alias("pwrite")));

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	static ssize_t (*f)(int, const struct iovec *, int, off_t);
	struct file *file = write_file(fd);
	uint64_t at = off;
	ssize_t n;

	LIBC_NEXT(f, "pwritev");
	for (int i = 0; file && i < cnt; at += iov[i].iov_len, i++)
		check_write(file, iov[i].iov_base, iov[i].iov_len, at);
	n = f(fd, iov, cnt, off);
	if (file && n > 0)
		wrote(file, off, n);
	return n;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
	__attribute__((alias("pwritev")));

int fallocate(int fd, int mode, off_t off, off_t len)
{
	static int (*f)(int, int, off_t, off_t);
	struct file *file = write_file(fd);
	unsigned int kind;

	LIBC_NEXT(f, "fallocate");
	if (file) {
		CHECK(file->image && (mode & FALLOC_FL_KEEP_SIZE));
		/* only what holds no table is punched out */
		for (uint64_t c = off / w.cs; w.shadow && c <= (off + len - 1) / w.cs;
		     c++)
			CHECK(!meta_has(c, &kind));
	}
	return f(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len)
	__attribute__((alias("fallocate")));

/* ---- a qcow2, built from the fuzzer's bytes ---- */

struct build {
	uint8_t *p;
	size_t len;
	unsigned int cb;		/* cluster bits */
	uint64_t cs;
	bool consistent;		/* refcounts match, nothing patched */
};

static void put_be(uint8_t *p, unsigned int n, uint64_t v)
{
	while (n--) {
		p[n] = v;
		v >>= 8;
	}
}

static const char *const backing_names[] = {
	"backing.raw", "backing.qcow2", "missing.raw", "image", "/etc/passwd",
	"../outside.raw", "sub/../backing.raw", "/dev/zero", ".",
	"backing.raw\0tail",
};

/* The refcount of cluster c, one more. */
static void ref(struct build *b, uint64_t c)
{
	uint64_t at = 2 * b->cs + c * 2;

	if (c < b->cs / 2)
		put_be(b->p + at, 2, be(b->p + at, 2) + 1);
	else
		b->consistent = false;
}

/* A deflate stream of one cluster of a simple pattern at *at; its entry. */
static uint64_t compressed(struct build *b, uint64_t *at, uint8_t seed)
{
	static uint8_t plain[1 << 16], out[1 << 17];
	unsigned int shift = 62 - (b->cb - 8);
	uint64_t sectors, c, start = *at;
	z_stream z = { 0 };

	for (uint64_t i = 0; i < b->cs; i++)
		plain[i] = seed + i / 512;
	if (deflateInit2(&z, 6, Z_DEFLATED, -12, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	z.next_in = plain;
	z.avail_in = b->cs;
	z.next_out = out;
	z.avail_out = sizeof(out);
	deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (start + z.total_out > MAX_IMAGE)
		return 0;
	memcpy(b->p + start, out, z.total_out);
	sectors = (start % 512 + z.total_out + 511) / 512;
	for (c = start / b->cs; c <= (start + z.total_out - 1) / b->cs; c++)
		ref(b, c);
	b->len = MAX(b->len, start + z.total_out);
	*at = start - start % 512 + sectors * 512;
	return COMPRESSED | (sectors - 1) << shift | start;
}

/* An entry that must not be followed: into a table, misaligned, past. */
static uint64_t hostile(struct build *b, struct input *in, uint64_t l1,
			uint64_t l2)
{
	switch (take8(in) % 8) {
	case 0:
		return COPIED | l1;
	case 1:
		return COPIED | l2;
	case 2:
		return COPIED | 2 * b->cs;		/* the refcount block */
	case 3:
		return COPIED | b->cs;			/* the refcount table */
	case 4:
		return COPIED | ((l2 + 512) & OFFSET_MASK);
	case 5:
		return COPIED | (1ULL << 40);
	case 6:
		return COMPRESSED | (uint64_t)(take8(in) % 4) << (62 - (b->cb - 8)) |
		       take16(in);
	default:
		return take64(in);
	}
}

/*
 * Header in cluster 0, refcount table in 1, refcount block in 2, the L1
 * table from 3, then L2 tables, data clusters and compressed data.
 */
static void build_image(struct build *b, struct input *in)
{
	unsigned int version = 2 + take8(in) % 2, nr_l1 = 1 + take8(in) % 4;
	uint64_t l1 = 3, next, data_at, i, j, l2s[4] = { 0 };
	uint64_t per_l2, vsize;

	b->cb = 9 + take8(in) % 8;
	b->cs = 1ULL << b->cb;
	b->consistent = true;
	per_l2 = b->cs / 8;
	l1 *= b->cs;
	next = l1 + ALIGN_UP(nr_l1 * 8, b->cs);
	vsize = MIN(nr_l1 * per_l2 * b->cs, 1ULL << 30);
	memset(b->p, 0, MAX_IMAGE);
	put_be(b->p, 4, 0x514649fb);
	put_be(b->p + 4, 4, version);
	put_be(b->p + 20, 4, b->cb);
	put_be(b->p + 24, 8, take8(in) % 4 ? vsize : take64(in) % (vsize * 2));
	put_be(b->p + 36, 4, nr_l1);
	put_be(b->p + 40, 8, l1);
	put_be(b->p + 48, 8, b->cs);
	put_be(b->p + 56, 4, 1);
	if (version == 3) {
		put_be(b->p + 88, 8, take8(in) % 4 ? 0 : 1);	/* bitmaps */
		put_be(b->p + 96, 4, 4);
		put_be(b->p + 100, 4, 104);
	}
	put_be(b->p + b->cs, 8, 2 * b->cs);		/* refcount block 0 */
	b->len = next;
	for (i = 0; i < l1 / b->cs + ALIGN_UP(nr_l1 * 8, b->cs) / b->cs; i++)
		ref(b, i);
	/* the L2 tables */
	for (i = 0; i < nr_l1; i++) {
		if (!(take8(in) % 3))
			continue;
		l2s[i] = next;
		put_be(b->p + l1 + i * 8, 8, COPIED | next);
		ref(b, next / b->cs);
		next += b->cs;
	}
	data_at = next + 4 * b->cs;	/* data clusters, then compressed */
	for (i = 0; i < nr_l1; i++) {
		unsigned int n = l2s[i] ? take8(in) % 16 : 0;

		for (j = 0; j < n && next + b->cs <= MAX_IMAGE; j++) {
			uint8_t kind = take8(in) % 8;
			uint64_t e = 0;

			if (kind <= 2 && next < data_at) {
				e = COPIED | next;
				memset(b->p + next, 0x40 + j, b->cs);
				ref(b, next / b->cs);
				next += b->cs;
				if (kind == 2)
					e |= version == 3;	/* zero flag */
			} else if (kind == 3 && version == 3) {
				e = 1;			/* zeroes, unallocated */
			} else if (kind <= 5) {
				e = compressed(b, &data_at, take8(in));
			} else if (kind == 6) {
				e = hostile(b, in, l1, l2s[i]);
				b->consistent = false;
			}
			put_be(b->p + l2s[i] + j * 8, 8, e);
		}
	}
	b->len = MAX(b->len, MAX(next, data_at));
	/* a backing file, named in cluster 0 after the header */
	if (b->cs >= 1024 && !(take8(in) % 3)) {
		uint8_t pick = take8(in);
		const char *name = backing_names[pick % ARRAY_SIZE(backing_names)];
		size_t n = pick % ARRAY_SIZE(backing_names) ==
			   ARRAY_SIZE(backing_names) - 1 ? 16 : strlen(name);

		if (pick >= 0xc0) {	/* raw bytes */
			n = 1 + take8(in) % 64;
			for (i = 0; i < n; i++)
				b->p[512 + i] = take8(in);
		} else {
			memcpy(b->p + 512, name, n);
		}
		put_be(b->p + 8, 8, 512);
		put_be(b->p + 16, 4, n);
	}
	/* and a few bytes anywhere */
	for (i = take8(in) % 4; i; i--) {
		b->p[take16(in) % b->len] = take8(in);
		b->consistent = false;
	}
}

/* ---- the requests, and what they must read back ---- */

#define MODEL_SECTORS	2048		/* the first MiB */

static uint32_t model[MODEL_SECTORS];	/* 0: unknown, 1: zeroes, else id */

static void fill(uint32_t id, uint64_t sector, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = i % 512 == 8 ? (sector + i / 512) << 32 | id : MARK;

		memcpy(wbuf + i, &v, 8);
	}
}

static void model_set(uint64_t sector, size_t len, uint32_t v)
{
	for (uint64_t s = sector; s < sector + len / 512 && s < MODEL_SECTORS;
	     s++)
		model[s] = v;
}

static void model_check(uint64_t sector, size_t len)
{
	static uint8_t want[512];

	for (uint64_t s = sector; s < sector + len / 512 && s < MODEL_SECTORS;
	     s++) {
		if (!model[s])
			continue;
		if (model[s] == 1) {
			memset(want, 0, 512);
		} else {
			for (size_t i = 0; i < 512; i += 8) {
				uint64_t v = i == 8 ? s << 32 | model[s] : MARK;

				memcpy(want + i, &v, 8);
			}
		}
		CHECK(!memcmp(rbuf + (s - sector) * 512, want, 512));
	}
}

static void request(struct disk *d, struct input *in, uint32_t id,
		    bool model_on)
{
	uint8_t kind = take8(in) % 5;
	uint64_t sectors = d->size / 512;
	uint64_t sector = take16(in) % MIN(sectors, (uint64_t)MODEL_SECTORS * 2);
	size_t len = (size_t)(take16(in) % (MAX_BYTES / 512) + 1) * 512;
	struct iovec iov = { kind ? wbuf : rbuf, len };
	int ret;

	if (sector * 512 + len > d->size)
		return;
	switch (kind) {
	case 0:
		ret = disk_readv(d, &iov, 1, sector * 512);
		if (!ret && model_on)
			model_check(sector, len);
		break;
	case 1:
		fill(id, sector, len);
		ret = disk_writev(d, &iov, 1, sector * 512);
		model_set(sector, len, ret ? 0 : id);
		break;
	case 2:
	case 3:
		ret = kind == 2 ? disk_discard(d, sector * 512, len)
				: disk_write_zeroes(d, sector * 512, len, true);
		model_set(sector, len, ret ? 0 : 1);
		break;
	default:
		ret = disk_flush(d);
		break;
	}
	CHECK(ret <= 0);
}

/* No 8-byte word of the image (or its backing file) is a guest mark. */
static void scrub(uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		if (v == MARK)
			memset(p + i, 0, 8);
	}
}

static void write_file_at(const char *name, const void *p, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, p, len) == (ssize_t)len);
	close(fd);
}

static void setup_once(void)
{
	static uint8_t base[256 * 1024];
	char cmd[256];

	if (dir[0])
		return;
	log_threshold = LOG_SILENT;
	/*
	 * A folder of its own: backing file names resolve in here only. In
	 * memory, where it can be: every close syncs the image.
	 */
	snprintf(dir, sizeof(dir), "/dev/shm/lkvm-fuzz-qcow2-%d", getpid());
	if (mkdir(dir, 0700)) {
		snprintf(dir, sizeof(dir), "/tmp/lkvm-fuzz-qcow2-%d", getpid());
		CHECK(!mkdir(dir, 0700));
	}
	snprintf(img, sizeof(img), "%s/image", dir);
	for (size_t i = 0; i < sizeof(base); i++)
		base[i] = i / 512 * 3 + 1;
	write_file_at("backing.raw", base, sizeof(base));
	snprintf(cmd, sizeof(cmd),
		 "qemu-img create -q -f qcow2 -o cluster_size=4096 -b backing.raw -F raw %s/backing.qcow2 >/dev/null 2>&1",
		 dir);
	if (system(cmd))	/* without qemu-img: a raw one by that name */
		write_file_at("backing.qcow2", base, 4096);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t image[MAX_IMAGE];
	struct input in = { data, size };
	struct disk_params cfg = { 0 };
	struct build b = { .p = image };
	uint32_t id = 2;
	struct disk d;
	unsigned int i;
	int ret;

	setup_once();
	if (take8(&in) & 1) {
		build_image(&b, &in);
	} else {
		b.len = take16(&in);
		b.len = MIN(b.len, in.n);
		memcpy(image, in.p, b.len);
		in.p += b.len;
		in.n -= b.len;
	}
	scrub(image, b.len);
	write_file_at("image", image, b.len);
	memset(model, 0, sizeof(model));
	cfg.path = img;
	cfg.format = DISK_FORMAT_QCOW2;
	w = (typeof(w)) { .on = true };
	snprintf(w.allowed[w.nr_allowed++], PATH_MAX, "%s", img);
	ret = disk_open(&d, &cfg);
	if (!ret) {
		shadow_load(file_of(d.file.fd));
		for (i = 0; i < MAX_REQS && in.n && d.size >= 512; i++)
			request(&d, &in, id++, b.consistent);
		disk_close(&d);
	}
	w.on = false;
	CHECK(!w.nr_files);	/* every file lkvm opened, closed */
	return 0;
}
