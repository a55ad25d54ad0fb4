// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 images (versions 2 and 3, as qemu-img makes them), a format of
 * the disk layer (disk/format.h): the header, opening and closing, and
 * the guest's requests. Guest offsets are mapped through the L1/L2 tables
 * (qcow2_cache.c); clusters are allocated with their refcounts kept exact,
 * those the guest freed first (qcow2_refcount.c); unallocated clusters
 * read from the backing file (raw or qcow2, opened read-only by the
 * layer) or as zeroes; zlib-compressed clusters are read (written ones
 * are never compressed).
 * Internal snapshots, encryption, external data files and dirty images are
 * refused with a message naming them, and so are tables that overlap or
 * lie out of bounds (qcow2_meta.c); autoclear feature bits (which stand
 * for extensions lkvm does not maintain) are cleared before the first
 * write.
 *
 * Every metadata update is ordered so that a host crash at any point
 * leaves an image qemu-img check finds consistent (at worst a leaked
 * cluster) in which what the guest flushed reads back: data and refcounts
 * on the disk before the table entries that name them, tables before the
 * references they no longer hold are dropped (qcow2_cache.c).
 *
 * Nothing here knows about virtio.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "format.h"
#include "qcow2.h"

#define QCOW2_MAGIC		0x514649fbU	/* "QFI\xfb" */
#define QCOW2_MAX_L1_BYTES	(32U << 20)
#define QCOW2_V2_HEADER		72		/* bytes; v3 says its own */
#define QCOW2_EXT_END		0
#define QCOW2_EXT_BACKING_FMT	0xe2792acaU

#define INCOMPAT_DIRTY		(1ULL << 0)
#define INCOMPAT_CORRUPT	(1ULL << 1)

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

/* Does the file start with the qcow2 magic? */
static bool qcow2_probe(const uint8_t *head, size_t len)
{
	uint32_t magic;

	if (len < sizeof(magic))
		return false;
	memcpy(&magic, head, sizeof(magic));
	return be32toh(magic) == QCOW2_MAGIC;
}

/* Past the file's end, reads see zeroes. */
int qcow2_file_rw(struct qcow2 *q, void *buf, size_t len, uint64_t off,
		  bool write)
{
	while (len) {
		ssize_t n = write ? pwrite(q->fd, buf, len, off)
				  : pread(q->fd, buf, len, off);

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

/*
 * The image's data sync, as disk_file_flush() does it: on the fd, which
 * stays the same when the disk is moved (disk_move()), the disk_file
 * struct around it does not.
 */
int qcow2_sync(struct qcow2 *q)
{
	return fdatasync(q->fd) ? -errno : 0;
}

int qcow2_put_be64(struct qcow2 *q, enum qcow2_meta_kind kind, uint64_t off,
		   uint64_t v)
{
	uint64_t be = htobe64(v);

	return qcow2_write(q, kind, &be, sizeof(be), off);
}

/* ---- open ---- */

static int qcow2_err(struct qcow2 *q, const char *what)
{
	pr_err("disk '%s': %s", q->path, what);
	return -1;
}

static int check_header(struct qcow2 *q, const struct qcow2_header *h,
			uint64_t *size)
{
	unsigned int map_bits;
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
		if (be32toh(h->header_length) < sizeof(*h) ||
		    be32toh(h->header_length) % 8 ||
		    be32toh(h->header_length) > 1U << q->cluster_bits)
			return qcow2_err(q, "qcow2 image is corrupt: its header length is not a multiple of 8 between 104 bytes and a cluster");
		/* lkvm maintains none of them (bitmaps, raw external data) */
		q->autoclear = be64toh(h->autoclear_features);
	}
	q->cluster_size = 1ULL << q->cluster_bits;
	q->l2_bits = q->cluster_bits - 3;
	q->l1_size = be32toh(h->l1_size);
	q->l1_offset = be64toh(h->l1_table_offset);
	q->reftable_offset = be64toh(h->refcount_table_offset);
	q->reftable_size = (uint64_t)be32toh(h->refcount_table_clusters) *
			   q->cluster_size / 8;
	q->max_clusters = q->reftable_size * (q->cluster_size / 2);
	/* as QEMU has it: the name is in the header's cluster */
	if (be64toh(h->backing_file_offset) &&
	    (be64toh(h->backing_file_offset) > q->cluster_size ||
	     be32toh(h->backing_file_size) >
	     q->cluster_size - be64toh(h->backing_file_offset)))
		return qcow2_err(q, "qcow2 image is corrupt: its backing file name is not in its first cluster");
	*size = be64toh(h->size);
	map_bits = q->cluster_bits + q->l2_bits;	/* what an L2 maps */
	if ((uint64_t)q->l1_size * 8 > QCOW2_MAX_L1_BYTES ||
	    q->reftable_size * 8 > QCOW2_MAX_L1_BYTES || !q->reftable_size ||
	    (*size >> map_bits) + !!(*size & ((1ULL << map_bits) - 1)) >
	    q->l1_size)
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
	if (entries && qcow2_file_rw(q, *table, entries * 8, off, false))
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
	    qcow2_file_rw(q, q->backing_name, len, off, false))
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
		if (qcow2_file_rw(q, ext, sizeof(ext), off, false))
			return qcow2_err(q, "cannot read the qcow2 header extensions");
		len = be32toh(ext[1]);
		off += sizeof(ext);
		if (be32toh(ext[0]) == QCOW2_EXT_END)
			return 0;
		if (len > q->cluster_size - off)
			return qcow2_err(q, "qcow2 header extension is corrupt");
		if (be32toh(ext[0]) == QCOW2_EXT_BACKING_FMT) {
			if (!len || len >= sizeof(q->backing_format) ||
			    qcow2_file_rw(q, q->backing_format, len, off, false))
				return qcow2_err(q, "qcow2 backing file format is corrupt or unknown");
			q->backing_format[len] = 0;
			return 0;
		}
		off += ALIGN_UP((uint64_t)len, 8);
	}
	return 0;
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
	q->file_size = disk->file.size;
	if (qcow2_file_rw(q, &h, sizeof(h), 0, false)) {
		qcow2_err(q, "cannot read the qcow2 header");
		goto fail;
	}
	if (check_header(q, &h, &disk->size) || qcow2_meta_tables(q))
		goto fail;
	q->cluster_buf = malloc(q->cluster_size);
	q->zbuf = malloc(2 * q->cluster_size);
	q->dbuf = malloc(q->cluster_size);
	q->zeroes = calloc(1, q->cluster_size);
	q->refblock_buf = malloc(q->cluster_size);
	q->table_buf = malloc(q->cluster_size);
	if (!q->cluster_buf || !q->zbuf || !q->dbuf || !q->zeroes ||
	    !q->refblock_buf || !q->table_buf ||
	    load_table(q, &q->l1, q->l1_size, q->l1_offset) ||
	    load_table(q, &q->reftable, q->reftable_size, q->reftable_offset)) {
		qcow2_err(q, "cannot read the qcow2 tables");
		goto fail;
	}
	if (qcow2_meta_load(q))
		goto fail;
	/* every table lies within the file: the file grows past it */
	q->next_free = ALIGN_UP(q->file_size, q->cluster_size);
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

/* After the layer closed the backing file: what waits in memory, out. */
static void qcow2_close(struct disk *disk)
{
	struct qcow2 *q = disk->fmt_state;
	int ret;

	if (!q)
		return;
	if (disk->fmt && !disk->readonly && (ret = qcow2_flush(q)))
		pr_err("disk '%s': cannot write the qcow2 tables back: %s",
		       q->path, strerror(-ret));
	qcow2_cache_free(q);
	qcow2_refcount_free(q);
	qcow2_meta_free(q);
	free(q->l1);
	free(q->reftable);
	free(q->cluster_buf);
	free(q->zbuf);
	free(q->dbuf);
	free(q->zeroes);
	free(q->refblock_buf);
	free(q->table_buf);
	pthread_mutex_destroy(&q->lock);
	free(q);
	disk->fmt_state = NULL;
}

/* ---- data ---- */

/* A zlib-compressed cluster (raw deflate, as QEMU writes it) into out. */
static int read_compressed(struct qcow2 *q, uint64_t entry, uint8_t *out)
{
	z_stream z = { 0 };
	uint64_t off, len;
	int ret;

	qcow2_compressed_extent(q, entry, &off, &len);
	if (len > 2 * q->cluster_size)
		return -EIO;
	ret = qcow2_file_rw(q, q->zbuf, len, off, false);
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
	int ret = qcow2_l2_entry(q, gofs, &entry);

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
	return qcow2_file_rw(q, buf, len, (entry & ENTRY_OFFSET) + in,
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
	int ret = qcow2_l2_entry(q, gofs, &entry);

	if (ret)
		return ret;
	if ((entry & ENTRY_COPIED) && !(entry & ENTRY_COMPRESSED) &&
	    (entry & ENTRY_OFFSET) && !entry_reads_zero(q, entry))
		return qcow2_write(q, META_NONE, buf, len,
				   (entry & ENTRY_OFFSET) + in);
	if (len < q->cluster_size) {
		ret = read_chunk(q, gofs - in, q->cluster_buf,
				 q->cluster_size);
		if (ret)
			return ret;
	}
	memcpy(q->cluster_buf + in, buf, len);
	ret = qcow2_cluster_alloc(q, META_NONE, q->cluster_buf, &off);
	if (!ret)
		ret = qcow2_l2_update(q, gofs, off | ENTRY_COPIED);
	return ret ? ret : qcow2_release_later(q, entry);
}

/*
 * Before the image's first write: autoclear feature bits lkvm does not
 * know (it knows none) say that what they stand for (a dirty bitmap, a
 * consistent raw data file) still matches the image; the spec wants them
 * cleared, durably, before anything changes, so that QEMU stops trusting
 * it. A read-only user never gets here.
 */
static int prepare_write(struct qcow2 *q)
{
	int ret;

	if (!q->autoclear)
		return 0;
	ret = qcow2_put_be64(q, META_HEADER,
			     offsetof(struct qcow2_header, autoclear_features),
			     0);
	if (!ret)
		ret = qcow2_sync(q);
	if (ret) {
		pr_warn_ratelimited("disk '%s': cannot clear the qcow2 autoclear feature bits: %s",
				    q->path, strerror(-ret));
		return ret;
	}
	q->autoclear = 0;
	return 0;
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
	ret = write ? prepare_write(q) : 0;
	if (!ret)
		ret = for_each_chunk(q, iov, iovcnt, offset, write);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/*
 * A whole cluster to zeroes: an entry that says so (v3's zero flag; on
 * v2 an unallocated one, when no backing file shows through), the old
 * cluster's refcount dropped and its space punched out once that is on
 * the disk. False when the format cannot say it (then the caller writes
 * zeroes).
 */
static int zero_cluster(struct qcow2 *q, uint64_t gofs, bool *done)
{
	uint64_t entry;
	int ret;

	*done = false;
	if (q->version < 3 && q->backing.file.fd >= 0)
		return 0;
	ret = qcow2_l2_entry(q, gofs, &entry);
	if (!ret)
		ret = qcow2_l2_update(q, gofs, q->version == 3 ? ENTRY_ZERO : 0);
	if (!ret)
		ret = qcow2_release_later(q, entry);
	*done = !ret;
	return ret;
}

/* Does [gofs, +n) of one cluster read as zeroes already? */
static int chunk_reads_zero(struct qcow2 *q, uint64_t gofs, bool *zero)
{
	uint64_t entry;
	int ret = qcow2_l2_entry(q, gofs, &entry);

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
	int ret;

	if (u64_add_overflows(offset, len, &end) || end > disk->size)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	ret = prepare_write(q);
	while (!ret && offset < end) {
		uint64_t in = offset & (q->cluster_size - 1);
		uint64_t n = MIN(q->cluster_size - in, end - offset);
		bool done = false;

		ret = chunk_reads_zero(q, offset, &done);
		if (!ret && !done && !in && n == q->cluster_size)
			ret = zero_cluster(q, offset, &done);
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

static int qcow2_flush_op(struct disk *disk)
{
	struct qcow2 *q = disk->fmt_state;
	int ret;

	pthread_mutex_lock(&q->lock);
	ret = qcow2_flush(q);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/* Table changes or releases waiting: a bare fsync would not do. */
static bool qcow2_holds_writes(struct disk *disk)
{
	struct qcow2 *q = disk->fmt_state;
	bool held;

	pthread_mutex_lock(&q->lock);
	held = qcow2_tables_dirty(q) || q->nr_pending;
	pthread_mutex_unlock(&q->lock);
	return held;
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
	.flush = qcow2_flush_op,
	.holds_writes = qcow2_holds_writes,
};
