// SPDX-License-Identifier: GPL-2.0
/*
 * Where a qcow2 image keeps its metadata, and the checks that keep a
 * hostile image from turning lkvm against its own tables (QEMU's overlap
 * checks, in spirit): the clusters of the header, the L1 table, the
 * refcount table, every refcount block and every L2 table, each in one
 * sorted set. At open, tables that are misaligned, past the end of the
 * file, past what the refcount table can count, or on top of each other
 * refuse the image with one line; at run time an L2 entry that points at
 * metadata or out of bounds fails its request (EIO, a rate-limited line);
 * and before any write, what is written where is checked against the set,
 * so that data never lands on metadata nor one table on another.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/util.h"
#include "qcow2.h"

#define KIND_BITS	3		/* set entries: cluster << 3 | kind */

static const char *const kind_names[] = {
	[META_NONE] = "data",
	[META_HEADER] = "the header",
	[META_L1] = "the L1 table",
	[META_REFTABLE] = "the refcount table",
	[META_REFBLOCK] = "a refcount block",
	[META_L2] = "an L2 table",
};

const char *qcow2_meta_name(enum qcow2_meta_kind kind)
{
	return kind_names[kind];
}

/* The slot of the first entry whose cluster is >= cluster. */
static size_t meta_find(const struct qcow2_meta *m, uint64_t cluster)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid] >> KIND_BITS < cluster)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum qcow2_meta_kind qcow2_meta_kind(const struct qcow2 *q, uint64_t off)
{
	uint64_t cluster = off >> q->cluster_bits;
	size_t i = meta_find(&q->meta, cluster);

	if (i < q->meta.n && q->meta.v[i] >> KIND_BITS == cluster)
		return q->meta.v[i] & ((1 << KIND_BITS) - 1);
	return META_NONE;
}

/* The kind of the first metadata cluster [off, +len) touches, if any. */
static enum qcow2_meta_kind meta_overlap(const struct qcow2 *q, uint64_t off,
					 uint64_t len, uint64_t *where)
{
	uint64_t first = off >> q->cluster_bits;
	uint64_t last = (off + len - 1) >> q->cluster_bits;
	size_t i = meta_find(&q->meta, first);

	if (!len || i == q->meta.n || q->meta.v[i] >> KIND_BITS > last)
		return META_NONE;
	*where = (q->meta.v[i] >> KIND_BITS) << q->cluster_bits;
	return q->meta.v[i] & ((1 << KIND_BITS) - 1);
}

static int meta_reserve(struct qcow2_meta *m, size_t more)
{
	size_t cap = m->cap ? m->cap : 64;
	uint64_t *v;

	if (m->n + more <= m->cap)
		return 0;
	while (cap < m->n + more)
		cap *= 2;
	v = realloc(m->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	m->cap = cap;
	return 0;
}

/* A cluster lkvm just made metadata of (a new L2 table, refcount block). */
int qcow2_meta_add(struct qcow2 *q, uint64_t off, enum qcow2_meta_kind kind)
{
	struct qcow2_meta *m = &q->meta;
	uint64_t cluster = off >> q->cluster_bits;
	size_t i;

	if (qcow2_meta_kind(q, off) != META_NONE)
		return -EEXIST;
	if (meta_reserve(m, 1))
		return -ENOMEM;
	i = meta_find(m, cluster);
	memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
	m->v[i] = cluster << KIND_BITS | kind;
	m->n++;
	return 0;
}

void qcow2_meta_free(struct qcow2 *q)
{
	free(q->meta.v);
	q->meta = (struct qcow2_meta) { 0 };
}

/* ---- at open ---- */

static int meta_err(struct qcow2 *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int meta_err(struct qcow2 *q, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pr_err("disk '%s': qcow2 image is corrupt: %s", q->path, msg);
	return -1;
}

/* Does the cluster at off lie where the image can hold it? 0, or -1. */
static int place_ok(struct qcow2 *q, const char *what, uint64_t off,
		    uint64_t len)
{
	uint64_t end;

	if (off & (q->cluster_size - 1))
		return meta_err(q, "%s at %#" PRIx64 " is not cluster-aligned",
				what, off);
	if (u64_add_overflows(off, len, &end) || end > q->file_size)
		return meta_err(q, "%s at %#" PRIx64 " is past the end of the file",
				what, off);
	if ((end - 1) >> q->cluster_bits >= q->max_clusters)
		return meta_err(q, "%s at %#" PRIx64 " is past what the refcount table can count",
				what, off);
	return 0;
}

/* Every cluster of [off, +len) into the set, unsorted yet. */
static int meta_push(struct qcow2 *q, uint64_t off, uint64_t len,
		     enum qcow2_meta_kind kind)
{
	uint64_t c, last = (off + len - 1) >> q->cluster_bits;

	if (meta_reserve(&q->meta, last - (off >> q->cluster_bits) + 1))
		return meta_err(q, "no memory for its table of metadata");
	for (c = off >> q->cluster_bits; c <= last; c++)
		q->meta.v[q->meta.n++] = c << KIND_BITS | kind;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted; two entries for one cluster: two things in one place. */
static int meta_sort(struct qcow2 *q)
{
	struct qcow2_meta *m = &q->meta;
	size_t i;

	qsort(m->v, m->n, sizeof(*m->v), cmp_u64);
	for (i = 1; i < m->n; i++) {
		uint64_t c = m->v[i] >> KIND_BITS;

		if (c != m->v[i - 1] >> KIND_BITS)
			continue;
		if (m->v[i] == m->v[i - 1])
			return meta_err(q, "%s at %#" PRIx64 " is named twice",
					kind_names[m->v[i] & 7],
					c << q->cluster_bits);
		return meta_err(q, "%s and %s overlap at %#" PRIx64,
				kind_names[m->v[i - 1] & 7],
				kind_names[m->v[i] & 7], c << q->cluster_bits);
	}
	return 0;
}

/*
 * The header's own tables, where it says they are: checked before they
 * are read (so that nothing is read from where no table can be), into
 * the set. -1 with one line naming the first thing wrong.
 */
int qcow2_meta_tables(struct qcow2 *q)
{
	if (meta_push(q, 0, q->cluster_size, META_HEADER))
		return -1;
	if (place_ok(q, "the refcount table", q->reftable_offset,
		     q->reftable_size * 8) ||
	    meta_push(q, q->reftable_offset, q->reftable_size * 8,
		      META_REFTABLE))
		return -1;
	if (q->l1_size &&
	    (place_ok(q, "the L1 table", q->l1_offset,
		      (uint64_t)q->l1_size * 8) ||
	     meta_push(q, q->l1_offset, (uint64_t)q->l1_size * 8, META_L1)))
		return -1;
	return meta_sort(q);
}

/*
 * The tables those tables name (read into q), each checked on the way,
 * into the set: -1 with one line naming the first thing wrong.
 */
int qcow2_meta_load(struct qcow2 *q)
{
	char what[64];
	uint64_t i, off;

	for (i = 0; i < q->reftable_size; i++) {
		off = q->reftable[i];
		if (off & 511)
			return meta_err(q, "refcount table entry %" PRIu64 " has reserved bits set",
					i);
		if (!off)
			continue;
		snprintf(what, sizeof(what), "refcount block %" PRIu64, i);
		if (place_ok(q, what, off, q->cluster_size) ||
		    meta_push(q, off, q->cluster_size, META_REFBLOCK))
			return -1;
	}
	for (i = 0; i < q->l1_size; i++) {
		off = q->l1[i] & ENTRY_OFFSET;
		if (q->l1[i] & ~(ENTRY_OFFSET | ENTRY_COPIED))
			return meta_err(q, "L1 entry %" PRIu64 " has reserved bits set",
					i);
		if (!off)
			continue;
		snprintf(what, sizeof(what), "the L2 table of L1 entry %" PRIu64,
			 i);
		if (place_ok(q, what, off, q->cluster_size) ||
		    meta_push(q, off, q->cluster_size, META_L2))
			return -1;
	}
	return meta_sort(q);
}

/* ---- at run time ---- */

/*
 * Can the guest's data live where `entry` (which maps gofs) says? 0, or
 * -EIO with a rate-limited line naming the problem.
 */
int qcow2_check_entry(struct qcow2 *q, uint64_t gofs, uint64_t entry)
{
	const char *why = NULL;
	enum qcow2_meta_kind kind;
	uint64_t off, len, end, where = 0;

	if (entry & ENTRY_COMPRESSED) {
		qcow2_compressed_extent(q, entry, &off, &len);
	} else {
		off = entry & ENTRY_OFFSET;
		len = q->cluster_size;
		if (!off)
			return 0;	/* unallocated (or zero, unallocated) */
		if (off & (q->cluster_size - 1))
			why = "is not cluster-aligned";
	}
	if (!why && (u64_add_overflows(off, len, &end) || end > q->next_free))
		why = "is past the end of the file";
	if (!why && (end - 1) >> q->cluster_bits >= q->max_clusters)
		why = "is past what the refcount table can count";
	kind = why ? META_NONE : meta_overlap(q, off, len, &where);
	if (!why && kind == META_NONE)
		return 0;
	if (why)
		pr_warn_ratelimited("disk '%s': qcow2 L2 entry %#" PRIx64 " of guest offset %#" PRIx64 ": its cluster %s; request failed",
				    q->path, entry, gofs, why);
	else
		pr_warn_ratelimited("disk '%s': qcow2 L2 entry %#" PRIx64 " of guest offset %#" PRIx64 ": its data is %s at %#" PRIx64 "; request failed",
				    q->path, entry, gofs, kind_names[kind],
				    where);
	return -EIO;
}

/* May lkvm write [off, +len) as `kind`? The tables only over themselves. */
static bool write_ok(const struct qcow2 *q, enum qcow2_meta_kind kind,
		     uint64_t off, uint64_t len)
{
	uint64_t c, end;

	if (!len || u64_add_overflows(off, len, &end))
		return false;
	switch (kind) {
	case META_L1:
		return range_within(off, len, q->l1_offset,
				    (uint64_t)q->l1_size * 8);
	case META_REFTABLE:
		return range_within(off, len, q->reftable_offset,
				    q->reftable_size * 8);
	case META_HEADER:
		return end <= q->cluster_size;
	default:
		break;
	}
	for (c = off & ~(q->cluster_size - 1); c < end; c += q->cluster_size)
		if (qcow2_meta_kind(q, c) != kind)
			return false;
	return true;
}

int qcow2_write(struct qcow2 *q, enum qcow2_meta_kind kind, const void *buf,
		size_t len, uint64_t off)
{
	uint64_t where = off;
	enum qcow2_meta_kind there;

	if (!write_ok(q, kind, off, len)) {
		there = meta_overlap(q, off, len, &where);
		pr_warn_ratelimited("disk '%s': qcow2: refusing to write %s at %#" PRIx64 " over %s at %#" PRIx64,
				    q->path, kind_names[kind], off,
				    kind_names[there], where);
		return -EIO;
	}
	return qcow2_file_rw(q, (void *)buf, len, off, true);
}
