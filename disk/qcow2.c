// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 images (versions 2 and 3, as qemu-img makes them), a format of
 * the disk layer (disk/format.h). Guest offsets are mapped through the
 * L1/L2 tables; clusters are allocated at the end of the file with their
 * refcounts kept exact; unallocated clusters read from the backing file
 * (raw or qcow2, opened read-only by the layer) or as zeroes;
 * zlib-compressed clusters are read (written ones are never compressed).
 * Internal snapshots, encryption, external data files and dirty images are
 * refused with a message naming them.
 *
 * Every metadata update is ordered so that a process killed between any
 * two writes leaves an image qemu-img check finds consistent (at worst a
 * leaked cluster): data before the refcount that owns it, the refcount
 * before the table entry that points at it.
 *
 * Layout facts from QEMU's docs/interop/qcow2.txt; nothing here knows
 * about virtio.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "format.h"

#define QCOW2_MAGIC		0x514649fbU	/* "QFI\xfb" */
#define QCOW2_MAX_L1_BYTES	(32U << 20)
#define QCOW2_L2_CACHE		16		/* tables kept in memory */
#define QCOW2_BACKING_MAX	1023
#define QCOW2_V2_HEADER		72		/* bytes; v3 says its own */
#define QCOW2_EXT_END		0
#define QCOW2_EXT_BACKING_FMT	0xe2792acaU

#define INCOMPAT_DIRTY		(1ULL << 0)
#define INCOMPAT_CORRUPT	(1ULL << 1)

#define ENTRY_COPIED		(1ULL << 63)	/* refcount exactly 1 */
#define ENTRY_COMPRESSED	(1ULL << 62)
#define ENTRY_ZERO		1ULL		/* v3 L2: reads as zeroes */
#define ENTRY_OFFSET		0x00fffffffffffe00ULL

/* Big-endian on disk: the header as the spec lays it out (v3 part last). */
struct qcow2_header {
	uint32_t magic;
	uint32_t version;
	uint64_t backing_file_offset;
	uint32_t backing_file_size;
	uint32_t cluster_bits;
	uint64_t size;
	uint32_t crypt_method;
	uint32_t l1_size;
	uint64_t l1_table_offset;
	uint64_t refcount_table_offset;
	uint32_t refcount_table_clusters;
	uint32_t nb_snapshots;
	uint64_t snapshots_offset;
	/* version 3 */
	uint64_t incompatible_features;
	uint64_t compatible_features;
	uint64_t autoclear_features;
	uint32_t refcount_order;
	uint32_t header_length;
} __attribute__((packed));

struct l2_slot {
	uint64_t offset;		/* in the file; 0: empty */
	uint64_t last_use;
	uint64_t *table;		/* host byte order */
};

/*
 * One open image. `lock` guards everything below and the file's
 * metadata: whichever thread serves a queue takes it for the whole
 * request, so requests to one image are served one at a time.
 */
struct qcow2 {
	pthread_mutex_t lock;
	int fd;				/* the disk's, which owns it */
	const char *path;
	unsigned int version;
	unsigned int cluster_bits;
	uint64_t cluster_size;
	unsigned int l2_bits;		/* entries per L2 table, log2 */
	uint64_t *l1;			/* host byte order */
	uint32_t l1_size;
	uint64_t l1_offset;
	uint64_t *reftable;		/* host byte order */
	uint64_t reftable_size;		/* entries */
	uint64_t reftable_offset;
	uint64_t next_free;		/* where the next cluster goes */
	struct l2_slot l2[QCOW2_L2_CACHE];
	uint64_t l2_clock;
	uint8_t *cluster_buf;		/* a cluster being written */
	uint8_t *zbuf;			/* compressed bytes */
	uint8_t *dbuf;			/* a cluster inflated */
	uint8_t *zeroes;		/* a cluster of them, never written */
	uint8_t *refblock_buf;		/* a new refcount block */
	struct disk backing;		/* file.fd < 0: none; the layer's */
	char backing_name[QCOW2_BACKING_MAX + 1];
	char backing_format[16];	/* "": the header names none */
};

/* Does the file start with the qcow2 magic? */
static bool qcow2_probe(const uint8_t *head, size_t len)
{
	uint32_t magic;

	if (len < sizeof(magic))
		return false;
	memcpy(&magic, head, sizeof(magic));
	return be32toh(magic) == QCOW2_MAGIC;
}

/* Whole positional transfers on the image file; -errno. */
static int file_rw(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, buf, len, off)
				  : pread(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n) {
			if (write)
				return -EIO;
			memset(buf, 0, len);	/* past the end: zeroes */
			return 0;
		}
		buf = (uint8_t *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

static int put_be64(struct qcow2 *q, uint64_t off, uint64_t v)
{
	uint64_t be = htobe64(v);

	return file_rw(q->fd, &be, sizeof(be), off, true);
}

/* ---- open ---- */

static int qcow2_err(struct qcow2 *q, const char *what)
{
	pr_err("disk '%s': %s", q->path, what);
	return -1;
}

static int check_header(struct qcow2 *q, const struct qcow2_header *h,
			uint64_t file_size, uint64_t *size)
{
	char msg[160];

	q->version = be32toh(h->version);
	if (q->version != 2 && q->version != 3)
		return qcow2_err(q, "qcow2 version not 2 or 3");
	q->cluster_bits = be32toh(h->cluster_bits);
	if (q->cluster_bits < 9 || q->cluster_bits > 21)
		return qcow2_err(q, "qcow2 cluster size out of range");
	if (be32toh(h->crypt_method))
		return qcow2_err(q, "encrypted qcow2 images are not supported");
	if (be32toh(h->nb_snapshots)) {
		snprintf(msg, sizeof(msg),
			 "qcow2 image has %u internal snapshots, which lkvm does not support (qemu-img snapshot -d, or convert it)",
			 be32toh(h->nb_snapshots));
		return qcow2_err(q, msg);
	}
	if (q->version == 3) {
		uint64_t incompat = be64toh(h->incompatible_features);

		if (incompat & INCOMPAT_DIRTY)
			return qcow2_err(q, "qcow2 image is dirty (not closed cleanly): run qemu-img check -r all");
		if (incompat & INCOMPAT_CORRUPT)
			return qcow2_err(q, "qcow2 image is marked corrupt: run qemu-img check -r all");
		if (incompat) {
			snprintf(msg, sizeof(msg),
				 "qcow2 incompatible features %#llx (external data file, compression type or extended L2) are not supported",
				 (unsigned long long)incompat);
			return qcow2_err(q, msg);
		}
		if (be32toh(h->refcount_order) != 4)
			return qcow2_err(q, "qcow2 refcounts other than 16 bits are not supported");
	}
	q->cluster_size = 1ULL << q->cluster_bits;
	q->l2_bits = q->cluster_bits - 3;
	q->l1_size = be32toh(h->l1_size);
	q->l1_offset = be64toh(h->l1_table_offset);
	q->reftable_offset = be64toh(h->refcount_table_offset);
	q->reftable_size = (uint64_t)be32toh(h->refcount_table_clusters) *
			   q->cluster_size / 8;
	*size = be64toh(h->size);
	if ((uint64_t)q->l1_size * 8 > QCOW2_MAX_L1_BYTES ||
	    q->reftable_size * 8 > QCOW2_MAX_L1_BYTES || !q->reftable_size ||
	    (q->l1_offset | q->reftable_offset) & (q->cluster_size - 1) ||
	    q->l1_offset > file_size || q->reftable_offset > file_size ||
	    *size >> (q->cluster_bits + q->l2_bits) > q->l1_size)
		return qcow2_err(q, "qcow2 header is corrupt (tables out of bounds)");
	return 0;
}

static int load_table(struct qcow2 *q, uint64_t **table, uint64_t entries,
		      uint64_t off)
{
	uint64_t i;

	*table = calloc(entries ? entries : 1, sizeof(uint64_t));
	if (!*table)
		return -ENOMEM;
	if (entries && file_rw(q->fd, *table, entries * 8, off, false))
		return -EIO;
	for (i = 0; i < entries; i++)
		(*table)[i] = be64toh((*table)[i]);
	return 0;
}

/* The backing file's name, as the header has it (the layer finds it). */
static int backing_name(struct qcow2 *q, const struct qcow2_header *h)
{
	uint64_t off = be64toh(h->backing_file_offset);
	uint32_t len = be32toh(h->backing_file_size);

	if (!off)
		return 0;
	if (!len || len > QCOW2_BACKING_MAX ||
	    file_rw(q->fd, q->backing_name, len, off, false))
		return qcow2_err(q, "qcow2 backing file name is corrupt");
	q->backing_name[len] = 0;
	return 1;
}

/*
 * The backing file's format, from the header extension that names it
 * (the extensions follow the header, within its cluster); none: "".
 */
static int backing_format(struct qcow2 *q, const struct qcow2_header *h)
{
	uint64_t off = q->version == 3 ? be32toh(h->header_length)
				       : QCOW2_V2_HEADER;
	uint32_t ext[2], len;

	while (off + sizeof(ext) <= q->cluster_size) {
		if (file_rw(q->fd, ext, sizeof(ext), off, false))
			return qcow2_err(q, "cannot read the qcow2 header extensions");
		len = be32toh(ext[1]);
		off += sizeof(ext);
		if (be32toh(ext[0]) == QCOW2_EXT_END)
			return 0;
		if (len > q->cluster_size - off)
			return qcow2_err(q, "qcow2 header extension is corrupt");
		if (be32toh(ext[0]) == QCOW2_EXT_BACKING_FMT) {
			if (!len || len >= sizeof(q->backing_format) ||
			    file_rw(q->fd, q->backing_format, len, off, false))
				return qcow2_err(q, "qcow2 backing file format is corrupt or unknown");
			q->backing_format[len] = 0;
			return 0;
		}
		off += ALIGN_UP((uint64_t)len, 8);
	}
	return 0;
}

/*
 * Where new clusters go: past the file's end and past every table the
 * image points at, so that a truncated image's tables (past its end,
 * reading as zeroes) are never handed out as data.
 */
static uint64_t first_free(const struct qcow2 *q, uint64_t file_size)
{
	uint64_t end = MAX(file_size, q->l1_offset + (uint64_t)q->l1_size * 8);
	uint64_t i;

	end = MAX(end, q->reftable_offset + q->reftable_size * 8);
	for (i = 0; i < q->l1_size; i++)
		if (q->l1[i] & ENTRY_OFFSET)
			end = MAX(end, (q->l1[i] & ENTRY_OFFSET) +
				       q->cluster_size);
	for (i = 0; i < q->reftable_size; i++)
		if (q->reftable[i] & ENTRY_OFFSET)
			end = MAX(end, (q->reftable[i] & ENTRY_OFFSET) +
				       q->cluster_size);
	return ALIGN_UP(end, q->cluster_size);
}

static void qcow2_close(struct disk *disk);

/*
 * Take over disk (its file open and locked): check the header, load the
 * tables, name the backing file for the layer to open; disk->size becomes
 * the virtual size. -1 with one error line naming the problem.
 */
static int qcow2_open(struct disk *disk, struct disk_open_ctx *ctx)
{
	struct qcow2 *q = calloc(1, sizeof(*q));
	struct qcow2_header h = { 0 };
	struct stat st;
	int ret;

	if (!q)
		return -1;
	q->fd = disk->file.fd;
	q->path = disk->path;
	q->backing.file.fd = -1;
	disk->fmt_state = q;
	pthread_mutex_init(&q->lock, NULL);
	if (disk->file.direct) {
		/* its metadata is read and written a few bytes at a time */
		qcow2_err(q, "direct is for raw images only");
		goto fail;
	}
	if (fstat(q->fd, &st) || file_rw(q->fd, &h, sizeof(h), 0, false)) {
		qcow2_err(q, "cannot read the qcow2 header");
		goto fail;
	}
	if (check_header(q, &h, st.st_size, &disk->size))
		goto fail;
	q->cluster_buf = malloc(q->cluster_size);
	q->zbuf = malloc(2 * q->cluster_size);
	q->dbuf = malloc(q->cluster_size);
	q->zeroes = calloc(1, q->cluster_size);
	q->refblock_buf = malloc(q->cluster_size);
	if (!q->cluster_buf || !q->zbuf || !q->dbuf || !q->zeroes ||
	    !q->refblock_buf ||
	    load_table(q, &q->l1, q->l1_size, q->l1_offset) ||
	    load_table(q, &q->reftable, q->reftable_size, q->reftable_offset)) {
		qcow2_err(q, "cannot read the qcow2 tables");
		goto fail;
	}
	q->next_free = first_free(q, st.st_size);
	ret = backing_name(q, &h);
	if (ret < 0 || (ret > 0 && backing_format(q, &h)))
		goto fail;
	if (ret > 0)
		ctx->backing = (struct disk_backing) {
			.disk = &q->backing, .name = q->backing_name,
			.format = q->backing_format[0] ? q->backing_format : NULL,
		};
	return 0;
fail:
	qcow2_close(disk);
	return -1;
}

/* After the layer closed the backing file. */
static void qcow2_close(struct disk *disk)
{
	struct qcow2 *q = disk->fmt_state;
	unsigned int i;

	if (!q)
		return;
	for (i = 0; i < QCOW2_L2_CACHE; i++)
		free(q->l2[i].table);
	free(q->l1);
	free(q->reftable);
	free(q->cluster_buf);
	free(q->zbuf);
	free(q->dbuf);
	free(q->zeroes);
	free(q->refblock_buf);
	pthread_mutex_destroy(&q->lock);
	free(q);
	disk->fmt_state = NULL;
}

/* ---- tables ---- */

/* The L2 table at off, from the cache or the file; NULL on error. */
static uint64_t *l2_table(struct qcow2 *q, uint64_t off)
{
	struct l2_slot *victim = &q->l2[0];
	unsigned int i;
	uint64_t n = 1ULL << q->l2_bits;

	for (i = 0; i < QCOW2_L2_CACHE; i++) {
		struct l2_slot *s = &q->l2[i];

		if (s->offset == off && s->table) {
			s->last_use = ++q->l2_clock;
			return s->table;
		}
		if (s->last_use < victim->last_use)
			victim = s;
	}
	if (!victim->table) {
		victim->table = malloc(q->cluster_size);
		if (!victim->table)
			return NULL;
	}
	victim->offset = 0;
	if (file_rw(q->fd, victim->table, q->cluster_size, off, false))
		return NULL;
	for (i = 0; i < n; i++)
		victim->table[i] = be64toh(victim->table[i]);
	victim->offset = off;
	victim->last_use = ++q->l2_clock;
	return victim->table;
}

/* Refcount entries are 16 bits: a block holds cluster_size / 2. */
static int refcount_set(struct qcow2 *q, uint64_t cluster_off, uint16_t v);

/* A new refcount block for reftable[idx], at the end of the file. */
static int refblock_alloc(struct qcow2 *q, uint64_t idx)
{
	uint64_t off = q->next_free, per = q->cluster_size / 2;
	uint16_t *blk = (uint16_t *)q->refblock_buf;
	bool self = (off >> q->cluster_bits) / per == idx;
	int ret;

	if (off + q->cluster_size > ENTRY_OFFSET)
		return -ENOSPC;
	q->next_free += q->cluster_size;
	memset(blk, 0, q->cluster_size);
	if (self)	/* it counts itself */
		blk[(off >> q->cluster_bits) % per] = htobe16(1);
	ret = file_rw(q->fd, blk, q->cluster_size, off, true);
	if (!ret)
		ret = put_be64(q, q->reftable_offset + idx * 8, off);
	if (ret)
		return ret;
	q->reftable[idx] = off;
	return self ? 0 : refcount_set(q, off, 1);
}

static int refcount_set(struct qcow2 *q, uint64_t cluster_off, uint16_t v)
{
	uint64_t cluster = cluster_off >> q->cluster_bits;
	uint64_t per = q->cluster_size / 2, idx = cluster / per;
	uint16_t be = htobe16(v);
	int ret;

	if (idx >= q->reftable_size)
		return -ENOSPC;	/* the refcount table would have to grow */
	if (!(q->reftable[idx] & ENTRY_OFFSET)) {
		ret = refblock_alloc(q, idx);
		if (ret)
			return ret;
	}
	return file_rw(q->fd, &be, 2,
		       (q->reftable[idx] & ENTRY_OFFSET) + (cluster % per) * 2,
		       true);
}

static int refcount_get(struct qcow2 *q, uint64_t cluster_off, uint16_t *v)
{
	uint64_t cluster = cluster_off >> q->cluster_bits;
	uint64_t per = q->cluster_size / 2, idx = cluster / per;
	uint16_t be;
	int ret;

	*v = 0;
	if (idx >= q->reftable_size || !(q->reftable[idx] & ENTRY_OFFSET))
		return 0;
	ret = file_rw(q->fd, &be, 2,
		      (q->reftable[idx] & ENTRY_OFFSET) + (cluster % per) * 2,
		      false);
	*v = be16toh(be);
	return ret;
}

/*
 * The guest cluster no longer uses what `entry` pointed at (the table
 * already says so): one reference less on each host cluster it held, and
 * a cluster nobody holds any more punched out of the file.
 */
static int entry_release(struct qcow2 *q, uint64_t entry)
{
	uint64_t first, last, c;
	uint16_t v;
	int ret = 0;

	if (entry & ENTRY_COMPRESSED) {
		unsigned int shift = 62 - (q->cluster_bits - 8);
		uint64_t off = entry & ((1ULL << shift) - 1);
		uint64_t sectors = ((entry & ~(ENTRY_COPIED | ENTRY_COMPRESSED))
				    >> shift) + 1;

		first = off & ~(q->cluster_size - 1);
		last = (off + sectors * 512 - (off & 511) - 1) &
		       ~(q->cluster_size - 1);
	} else {
		first = last = entry & ENTRY_OFFSET;
		if (!first)
			return 0;
	}
	for (c = first; !ret && c <= last; c += q->cluster_size) {
		ret = refcount_get(q, c, &v);
		if (ret || !v)
			continue;	/* already free: leave it */
		ret = refcount_set(q, c, v - 1);
		if (!ret && v == 1)
			fallocate(q->fd, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, c, q->cluster_size);
	}
	return ret;
}

/*
 * A new cluster holding buf (NULL: zeroes) at the end of the file:
 * written, then counted. Its offset in *off.
 */
static int cluster_alloc(struct qcow2 *q, const void *buf, uint64_t *off)
{
	int ret;

	if (q->next_free + q->cluster_size > ENTRY_OFFSET)
		return -ENOSPC;	/* past what a table entry can hold */
	*off = q->next_free;
	q->next_free += q->cluster_size;
	if (!buf)
		buf = q->zeroes;
	ret = file_rw(q->fd, (void *)buf, q->cluster_size, *off, true);
	return ret ? ret : refcount_set(q, *off, 1);
}

/* The L2 table for a guest offset, made if `make`; 0 when there is none. */
static int l2_for(struct qcow2 *q, uint64_t gofs, bool make, uint64_t *l2off)
{
	uint64_t idx = gofs >> (q->cluster_bits + q->l2_bits), off;
	int ret;

	if (idx >= q->l1_size)
		return -EIO;
	*l2off = q->l1[idx] & ENTRY_OFFSET;
	if (*l2off || !make)
		return 0;
	ret = cluster_alloc(q, NULL, &off);
	if (!ret)
		ret = put_be64(q, q->l1_offset + idx * 8, off | ENTRY_COPIED);
	if (ret)
		return ret;
	q->l1[idx] = off | ENTRY_COPIED;
	*l2off = off;
	return 0;
}

static int l2_entry(struct qcow2 *q, uint64_t gofs, uint64_t *entry)
{
	uint64_t l2off, *t;
	int ret = l2_for(q, gofs, false, &l2off);

	*entry = 0;
	if (ret || !l2off)
		return ret;
	t = l2_table(q, l2off);
	if (!t)
		return -EIO;
	*entry = t[(gofs >> q->cluster_bits) & ((1ULL << q->l2_bits) - 1)];
	return 0;
}

static int l2_update(struct qcow2 *q, uint64_t gofs, uint64_t entry)
{
	uint64_t idx = (gofs >> q->cluster_bits) & ((1ULL << q->l2_bits) - 1);
	uint64_t l2off, *t;
	int ret = l2_for(q, gofs, true, &l2off);

	if (ret)
		return ret;
	t = l2_table(q, l2off);
	if (!t)
		return -EIO;
	ret = put_be64(q, l2off + idx * 8, entry);
	if (!ret)
		t[idx] = entry;
	return ret;
}

/* ---- data ---- */

/* A zlib-compressed cluster (raw deflate, as QEMU writes it) into out. */
static int read_compressed(struct qcow2 *q, uint64_t entry, uint8_t *out)
{
	unsigned int shift = 62 - (q->cluster_bits - 8);
	uint64_t off = entry & ((1ULL << shift) - 1);
	uint64_t sectors = ((entry & ~ENTRY_COPIED & ~ENTRY_COMPRESSED) >> shift)
			   + 1;
	uint64_t len = sectors * 512 - (off & 511);
	z_stream z = { 0 };
	int ret;

	if (len > 2 * q->cluster_size)
		return -EIO;
	ret = file_rw(q->fd, q->zbuf, len, off, false);
	if (ret)
		return ret;
	if (inflateInit2(&z, -12) != Z_OK)
		return -ENOMEM;
	z.next_in = q->zbuf;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = q->cluster_size;
	ret = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	/* the sectors' tail is padding: a full cluster out is what counts */
	return (ret == Z_STREAM_END || ret == Z_BUF_ERROR || ret == Z_OK) &&
	       !z.avail_out ? 0 : -EIO;
}

/* Unallocated: the backing file's bytes (zeroes past its end), or zeroes. */
static int read_backing(struct qcow2 *q, uint64_t gofs, uint8_t *buf,
			size_t len)
{
	struct iovec one = { buf, len };

	if (q->backing.file.fd < 0 || gofs >= q->backing.size) {
		memset(buf, 0, len);
		return 0;
	}
	if (gofs + len > q->backing.size) {
		one.iov_len = q->backing.size - gofs;
		memset(buf + one.iov_len, 0, len - one.iov_len);
	}
	return disk_readv(&q->backing, &one, 1, gofs);
}

static bool entry_reads_zero(const struct qcow2 *q, uint64_t entry)
{
	return q->version == 3 && !(entry & ENTRY_COMPRESSED) &&
	       (entry & ENTRY_ZERO);
}

/* [gofs, gofs + len), within one cluster, read into buf. */
static int read_chunk(struct qcow2 *q, uint64_t gofs, uint8_t *buf,
		      size_t len)
{
	uint64_t in = gofs & (q->cluster_size - 1), entry;
	int ret = l2_entry(q, gofs, &entry);

	if (ret)
		return ret;
	if (entry & ENTRY_COMPRESSED) {
		ret = read_compressed(q, entry, q->dbuf);
		if (!ret)
			memcpy(buf, q->dbuf + in, len);
		return ret;
	}
	if (entry_reads_zero(q, entry)) {
		memset(buf, 0, len);
		return 0;
	}
	if (!(entry & ENTRY_OFFSET))
		return read_backing(q, gofs, buf, len);
	return file_rw(q->fd, buf, len, (entry & ENTRY_OFFSET) + in,
		       false);
}

/*
 * [gofs, gofs + len), within one cluster, from buf. In place when the
 * cluster is ours alone (COPIED); else a new cluster with what the guest
 * saw there before (backing file, compressed data, zeroes) around it,
 * and the old one's reference dropped once the table points away.
 */
static int write_chunk(struct qcow2 *q, uint64_t gofs, const uint8_t *buf,
		       size_t len)
{
	uint64_t in = gofs & (q->cluster_size - 1), entry, off;
	int ret = l2_entry(q, gofs, &entry);

	if (ret)
		return ret;
	if ((entry & ENTRY_COPIED) && !(entry & ENTRY_COMPRESSED) &&
	    (entry & ENTRY_OFFSET) && !entry_reads_zero(q, entry))
		return file_rw(q->fd, (void *)buf, len,
			       (entry & ENTRY_OFFSET) + in, true);
	if (len < q->cluster_size) {
		ret = read_chunk(q, gofs - in, q->cluster_buf,
				 q->cluster_size);
		if (ret)
			return ret;
	}
	memcpy(q->cluster_buf + in, buf, len);
	ret = cluster_alloc(q, q->cluster_buf, &off);
	if (!ret)
		ret = l2_update(q, gofs, off | ENTRY_COPIED);
	return ret ? ret : entry_release(q, entry);
}

/* Call fn on each piece of the request that lies within one cluster. */
static int for_each_chunk(struct qcow2 *q, const struct iovec *iov,
			  int iovcnt, uint64_t gofs, bool write)
{
	int i;

	for (i = 0; i < iovcnt; i++) {
		uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			uint64_t room = q->cluster_size -
					(gofs & (q->cluster_size - 1));
			size_t n = MIN((uint64_t)left, room);
			int ret = write ? write_chunk(q, gofs, p, n)
					: read_chunk(q, gofs, p, n);

			if (ret)
				return ret;
			p += n;
			gofs += n;
			left -= n;
		}
	}
	return 0;
}

/* As disk_readv()/disk_writev(): whole transfers, -errno on failure. */
static int qcow2_rw(struct disk *disk, const struct iovec *iov, int iovcnt,
		    uint64_t offset, bool write)
{
	struct qcow2 *q = disk->fmt_state;
	uint64_t len = 0, end;
	int i, ret;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (u64_add_overflows(offset, len, &end) || end > disk->size)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	ret = for_each_chunk(q, iov, iovcnt, offset, write);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/*
 * A whole cluster to zeroes: an entry that says so (v3's zero flag; on
 * v2 an unallocated one, when no backing file shows through), the old
 * cluster's refcount dropped and its space punched out. False when the
 * format cannot say it (then the caller writes zeroes, or for a discard
 * does nothing).
 */
static int zero_cluster(struct qcow2 *q, uint64_t gofs, bool *done)
{
	uint64_t entry;
	int ret;

	*done = false;
	if (q->version < 3 && q->backing.file.fd >= 0)
		return 0;
	ret = l2_entry(q, gofs, &entry);
	if (!ret)
		ret = l2_update(q, gofs, q->version == 3 ? ENTRY_ZERO : 0);
	if (!ret)
		ret = entry_release(q, entry);
	*done = !ret;
	return ret;
}

/* Does [gofs, +n) of one cluster read as zeroes already? */
static int chunk_reads_zero(struct qcow2 *q, uint64_t gofs, bool *zero)
{
	uint64_t entry;
	int ret = l2_entry(q, gofs, &entry);

	*zero = !ret && (entry_reads_zero(q, entry) ||
			 (!(entry & (ENTRY_OFFSET | ENTRY_COMPRESSED)) &&
			  (q->backing.file.fd < 0 || gofs >= q->backing.size)));
	return ret;
}

/*
 * Discard and write-zeroes alike (a discarded range reads back as zeroes,
 * as on raw images): whole clusters through their table entries, the
 * edges written with zeroes unless they read as zeroes already.
 */
static int qcow2_zero(struct disk *disk, uint64_t offset, uint64_t len)
{
	struct qcow2 *q = disk->fmt_state;
	uint64_t end;
	int ret = 0;

	if (u64_add_overflows(offset, len, &end) || end > disk->size)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	while (!ret && offset < end) {
		uint64_t in = offset & (q->cluster_size - 1);
		uint64_t n = MIN(q->cluster_size - in, end - offset);
		bool done = false;

		if (!in && n == q->cluster_size)
			ret = zero_cluster(q, offset, &done);
		if (!ret && !done)
			ret = chunk_reads_zero(q, offset, &done);
		if (!ret && !done)
			ret = write_chunk(q, offset, q->zeroes, n);
		offset += n;
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static int qcow2_write_zeroes(struct disk *disk, uint64_t offset,
			      uint64_t len, bool may_unmap)
{
	return qcow2_zero(disk, offset, len);
}

/* Requests are served under the image's lock, one at a time: no rw_try. */
const struct disk_format disk_qcow2_format = {
	.name = "qcow2",
	.probe = qcow2_probe,
	.open = qcow2_open,
	.close = qcow2_close,
	.rw = qcow2_rw,
	.discard = qcow2_zero,
	.write_zeroes = qcow2_write_zeroes,
};
