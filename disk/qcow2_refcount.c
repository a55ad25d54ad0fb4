// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2 refcounts (16-bit, the only width lkvm takes): reading and
 * setting them through the refcount table and its blocks (a few blocks
 * kept in memory, written through), new blocks as the image grows, and
 * clusters handed out and given back. A cluster handed out is one whose
 * refcount is 0 (and that is no metadata: a hostile image's refcounts
 * may lie), found from a cursor that a release moves back, as QEMU's
 * free_cluster_index does, so that what the guest discards is used
 * again before the file grows; else one at the end of the file.
 *
 * Every update is ordered so that a crash leaves at worst a leaked
 * cluster: a refcount goes up before any table names the cluster
 * (qcow2_cache.c holds table changes until a sync has passed), and down
 * only once no table on the disk names it (qcow2_release_later()).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/util.h"
#include "qcow2.h"

/* Releases waiting that make a flush worth it before the file grows. */
#define QCOW2_REUSE_PENDING	32

static uint64_t refs_per_block(const struct qcow2 *q)
{
	return q->cluster_size / 2;
}

/* The refcount block at off (big-endian), cached; NULL on error. */
static uint16_t *refblock(struct qcow2 *q, uint64_t off)
{
	struct rb_slot *victim = &q->rb[0];
	unsigned int i;

	for (i = 0; i < QCOW2_RB_CACHE; i++) {
		struct rb_slot *s = &q->rb[i];

		if (s->offset == off && s->blk) {
			s->last_use = ++q->l2_clock;
			return s->blk;
		}
		if (s->last_use < victim->last_use)
			victim = s;
	}
	if (!victim->blk) {
		victim->blk = malloc(q->cluster_size);
		if (!victim->blk)
			return NULL;
	}
	victim->offset = 0;
	if (qcow2_file_rw(q, victim->blk, q->cluster_size, off, false))
		return NULL;
	victim->offset = off;
	victim->last_use = ++q->l2_clock;
	return victim->blk;
}

/*
 * A new refcount block for reftable[idx], at the end of the file: on the
 * disk, counted, before the refcount table names it (one sync: a block
 * covers cluster_size / 2 clusters, so this is rare).
 */
static int refblock_alloc(struct qcow2 *q, uint64_t idx)
{
	uint64_t off = q->next_free, per = refs_per_block(q);
	uint16_t *blk = (uint16_t *)q->refblock_buf;
	bool self = (off >> q->cluster_bits) / per == idx;
	int ret;

	if (off + q->cluster_size > ENTRY_OFFSET ||
	    off >> q->cluster_bits >= q->max_clusters)
		return -ENOSPC;
	ret = qcow2_meta_add(q, off, META_REFBLOCK);
	if (ret)
		return ret;
	q->next_free += q->cluster_size;
	memset(blk, 0, q->cluster_size);
	if (self)	/* it counts itself */
		blk[(off >> q->cluster_bits) % per] = htobe16(1);
	ret = qcow2_write(q, META_REFBLOCK, blk, q->cluster_size, off);
	if (!ret && !self)
		ret = qcow2_refcount_set(q, off, 1);
	if (!ret)
		ret = qcow2_sync(q);
	if (!ret)
		ret = qcow2_put_be64(q, META_REFTABLE,
				     q->reftable_offset + idx * 8, off);
	if (!ret)
		q->reftable[idx] = off;
	return ret;
}

int qcow2_refcount_set(struct qcow2 *q, uint64_t cluster_off, uint16_t v)
{
	uint64_t cluster = cluster_off >> q->cluster_bits;
	uint64_t per = refs_per_block(q), idx = cluster / per, off;
	uint16_t be = htobe16(v), *blk;
	int ret;

	if (idx >= q->reftable_size)
		return -ENOSPC;	/* the refcount table would have to grow */
	if (!(q->reftable[idx] & ENTRY_OFFSET)) {
		ret = refblock_alloc(q, idx);
		if (ret)
			return ret;
	}
	off = q->reftable[idx] & ENTRY_OFFSET;
	blk = refblock(q, off);
	if (!blk)
		return -EIO;
	ret = qcow2_write(q, META_REFBLOCK, &be, 2, off + (cluster % per) * 2);
	if (!ret)
		blk[cluster % per] = be;
	return ret;
}

int qcow2_refcount_get(struct qcow2 *q, uint64_t cluster_off, uint16_t *v)
{
	uint64_t cluster = cluster_off >> q->cluster_bits;
	uint64_t per = refs_per_block(q), idx = cluster / per;
	uint16_t *blk;

	*v = 0;
	if (idx >= q->reftable_size || !(q->reftable[idx] & ENTRY_OFFSET))
		return 0;
	blk = refblock(q, q->reftable[idx] & ENTRY_OFFSET);
	if (!blk)
		return -EIO;
	*v = be16toh(blk[cluster % per]);
	return 0;
}

/*
 * What `entry` pointed at, which no table on the disk names any more:
 * one reference less on each host cluster it held, and a cluster nobody
 * holds any more punched out of the file and free to be handed out.
 */
int qcow2_entry_release(struct qcow2 *q, uint64_t entry)
{
	uint64_t first, last, c;
	uint16_t v;
	int ret = 0;

	if (entry & ENTRY_COMPRESSED) {
		uint64_t off, len;

		qcow2_compressed_extent(q, entry, &off, &len);
		first = off & ~(q->cluster_size - 1);
		last = (off + len - 1) & ~(q->cluster_size - 1);
	} else {
		first = last = entry & ENTRY_OFFSET;
		if (!first)
			return 0;
	}
	for (c = first; !ret && c <= last; c += q->cluster_size) {
		ret = qcow2_refcount_get(q, c, &v);
		if (ret || !v)
			continue;	/* already free: leave it */
		ret = qcow2_refcount_set(q, c, v - 1);
		if (ret || v > 1 || qcow2_meta_kind(q, c) != META_NONE)
			continue;
		fallocate(q->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  c, q->cluster_size);
		q->free_cursor = MIN(q->free_cursor, c >> q->cluster_bits);
	}
	return ret;
}

/*
 * A cluster below the end of the file that nothing holds: refcount 0 and
 * no metadata. 1 and its offset, 0 when there is none, or -errno.
 */
static int find_free(struct qcow2 *q, uint64_t *off)
{
	uint64_t per = refs_per_block(q), end = q->next_free >> q->cluster_bits;
	uint64_t c = q->free_cursor;

	while (c < end) {
		uint64_t idx = c / per, stop = MIN(end, (idx + 1) * per);
		uint16_t *blk = NULL;

		if (idx >= q->reftable_size)
			break;
		if (q->reftable[idx] & ENTRY_OFFSET) {
			blk = refblock(q, q->reftable[idx] & ENTRY_OFFSET);
			if (!blk)
				return -EIO;
		}
		for (; c < stop; c++) {
			if ((blk && blk[c % per]) ||
			    qcow2_meta_kind(q, c << q->cluster_bits) != META_NONE)
				continue;
			q->free_cursor = c + 1;
			*off = c << q->cluster_bits;
			return 1;
		}
	}
	q->free_cursor = end;
	return 0;
}

/* Where a new cluster goes: a free one, else the end of the file. */
static int place_cluster(struct qcow2 *q, uint64_t *off)
{
	int ret = find_free(q, off);

	/* what waits to be released is worth a flush before growing */
	if (!ret && q->nr_pending >= QCOW2_REUSE_PENDING) {
		ret = qcow2_flush(q);
		if (!ret)
			ret = find_free(q, off);
	}
	if (ret)
		return ret < 0 ? ret : 0;
	/* past what a table entry can hold, or the refcounts count */
	if (q->next_free + q->cluster_size > ENTRY_OFFSET ||
	    q->next_free >> q->cluster_bits >= q->max_clusters)
		return -ENOSPC;
	*off = q->next_free;
	q->next_free += q->cluster_size;
	q->free_cursor = q->next_free >> q->cluster_bits;
	return 0;
}

/* Written, then counted: nothing names it before the next sync. */
int qcow2_cluster_alloc(struct qcow2 *q, enum qcow2_meta_kind kind,
			const void *buf, uint64_t *off)
{
	int ret = place_cluster(q, off);

	if (!ret && kind != META_NONE)
		ret = qcow2_meta_add(q, *off, kind);
	if (ret)
		return ret;
	if (!buf)
		buf = q->zeroes;
	ret = qcow2_write(q, kind, buf, q->cluster_size, *off);
	return ret ? ret : qcow2_refcount_set(q, *off, 1);
}

void qcow2_refcount_free(struct qcow2 *q)
{
	unsigned int i;

	for (i = 0; i < QCOW2_RB_CACHE; i++)
		free(q->rb[i].blk);
}
