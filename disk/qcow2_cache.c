// SPDX-License-Identifier: GPL-2.0
/*
 * qcow2's two-level map from guest offsets to the file: the L1 table, in
 * memory whole, and L2 tables, a few kept in memory (least recently used
 * goes first), made when a guest cluster first needs one. And the order
 * in which what changes reaches the disk, so that a host crash at any
 * point (the page cache lost, the disk having kept any part of what was
 * written since the last sync) leaves an image qemu-img check passes and
 * in which every flushed write reads back:
 *
 * - a new or changed table entry must not reach the disk before the
 *   cluster it names (its data, a new L2 table's zeroes) nor before that
 *   cluster's refcount: changed L1 and L2 entries wait in memory (a slot's
 *   dirty range, the L1's) for the guest's flush or the slot's eviction,
 *   and go to the file only after a sync;
 * - a cluster a table no longer names must not lose its reference before
 *   the table saying so is on the disk (else it is counted free while
 *   still named, and may be handed out again): releases wait in a list
 *   until the sync after the tables are written.
 *
 * So a write to an allocated cluster costs no sync, an allocating one
 * none either until the guest flushes; a flush costs one sync, two when
 * tables changed since the last.
 */
#include <errno.h>
#include <stdlib.h>

#include "lkvm/util.h"
#include "qcow2.h"

/* Releases held at most, before they force a flush of their own. */
#define QCOW2_MAX_PENDING	4096

static bool slot_dirty(const struct l2_slot *s)
{
	return s->dirty_lo < s->dirty_hi;
}

static void mark(uint32_t *lo, uint32_t *hi, uint32_t idx)
{
	if (*lo >= *hi) {
		*lo = idx;
		*hi = idx + 1;
		return;
	}
	*lo = MIN(*lo, idx);
	*hi = MAX(*hi, idx + 1);
}

/* Entries [lo, hi) of a table at off, from host order to the file. */
static int write_entries(struct qcow2 *q, enum qcow2_meta_kind kind,
			 uint64_t off, const uint64_t *t, uint32_t lo,
			 uint32_t hi)
{
	uint64_t *be = (uint64_t *)q->table_buf;
	uint32_t i, n;
	int ret;

	while (lo < hi) {
		n = MIN(hi - lo, (uint32_t)(q->cluster_size / 8));
		for (i = 0; i < n; i++)
			be[i] = htobe64(t[lo + i]);
		ret = qcow2_write(q, kind, be, n * 8, off + lo * 8ULL);
		if (ret)
			return ret;
		lo += n;
	}
	return 0;
}

/* A dirty slot to the file; the caller synced what it names before. */
static int slot_write(struct qcow2 *q, struct l2_slot *s)
{
	int ret;

	if (!slot_dirty(s))
		return 0;
	ret = write_entries(q, META_L2, s->offset, s->table, s->dirty_lo,
			    s->dirty_hi);
	if (!ret)
		s->dirty_lo = s->dirty_hi = 0;
	return ret;
}

/* The L2 table at off, from the cache or the file; NULL on error. */
static struct l2_slot *l2_table(struct qcow2 *q, uint64_t off)
{
	struct l2_slot *victim = &q->l2[0];
	unsigned int i;
	uint64_t n = 1ULL << q->l2_bits;

	for (i = 0; i < QCOW2_L2_CACHE; i++) {
		struct l2_slot *s = &q->l2[i];

		if (s->offset == off && s->table) {
			s->last_use = ++q->l2_clock;
			return s;
		}
		if (s->last_use < victim->last_use)
			victim = s;
	}
	if (!victim->table) {
		victim->table = malloc(q->cluster_size);
		if (!victim->table)
			return NULL;
	}
	/* what its entries name first, then the entries themselves */
	if (slot_dirty(victim) && (qcow2_sync(q) || slot_write(q, victim)))
		return NULL;
	victim->offset = 0;
	if (qcow2_file_rw(q, victim->table, q->cluster_size, off, false))
		return NULL;
	for (i = 0; i < n; i++)
		victim->table[i] = be64toh(victim->table[i]);
	victim->offset = off;
	victim->last_use = ++q->l2_clock;
	return victim;
}

/*
 * The L2 table for a guest offset, made if `make` (its zeroes written
 * and counted now, the L1 entry naming it at the next flush); 0 when
 * there is none.
 */
static int l2_for(struct qcow2 *q, uint64_t gofs, bool make, uint64_t *l2off)
{
	uint64_t idx = gofs >> (q->cluster_bits + q->l2_bits), off;
	int ret;

	if (idx >= q->l1_size)
		return -EIO;
	*l2off = q->l1[idx] & ENTRY_OFFSET;
	if (*l2off || !make)
		return 0;
	ret = qcow2_cluster_alloc(q, META_L2, NULL, &off);
	if (ret)
		return ret;
	q->l1[idx] = off | ENTRY_COPIED;
	mark(&q->l1_dirty_lo, &q->l1_dirty_hi, idx);
	*l2off = off;
	return 0;
}

static unsigned int l2_index(const struct qcow2 *q, uint64_t gofs)
{
	return (gofs >> q->cluster_bits) & ((1ULL << q->l2_bits) - 1);
}

int qcow2_l2_entry(struct qcow2 *q, uint64_t gofs, uint64_t *entry)
{
	struct l2_slot *s;
	uint64_t l2off;
	int ret = l2_for(q, gofs, false, &l2off);

	*entry = 0;
	if (ret || !l2off)
		return ret;
	s = l2_table(q, l2off);
	if (!s)
		return -EIO;
	*entry = s->table[l2_index(q, gofs)];
	return qcow2_check_entry(q, gofs, *entry);
}

/* In memory now; in the file after the next sync (see the top). */
int qcow2_l2_update(struct qcow2 *q, uint64_t gofs, uint64_t entry)
{
	unsigned int idx = l2_index(q, gofs);
	struct l2_slot *s;
	uint64_t l2off;
	int ret = l2_for(q, gofs, true, &l2off);

	if (ret)
		return ret;
	s = l2_table(q, l2off);
	if (!s)
		return -EIO;
	s->table[idx] = entry;
	mark(&s->dirty_lo, &s->dirty_hi, idx);
	return 0;
}

/*
 * What the guest cluster no longer uses (the table says so, in memory):
 * its reference goes once that is on the disk.
 */
int qcow2_release_later(struct qcow2 *q, uint64_t entry)
{
	uint64_t *p;

	if (!(entry & (ENTRY_OFFSET | ENTRY_COMPRESSED)))
		return 0;
	if (q->nr_pending == q->max_pending) {
		size_t cap = q->max_pending ? q->max_pending * 2 : 64;

		p = realloc(q->pending, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		q->pending = p;
		q->max_pending = cap;
	}
	q->pending[q->nr_pending++] = entry;
	return q->nr_pending >= QCOW2_MAX_PENDING ? qcow2_flush(q) : 0;
}

bool qcow2_tables_dirty(const struct qcow2 *q)
{
	unsigned int i;

	if (q->l1_dirty_lo < q->l1_dirty_hi)
		return true;
	for (i = 0; i < QCOW2_L2_CACHE; i++)
		if (slot_dirty(&q->l2[i]))
			return true;
	return false;
}

/*
 * Everything written so far onto the disk: data, refcounts and new
 * tables (one sync), then the table entries naming them (a second), then
 * the releases those entries allow, whose refcounts the next sync takes.
 */
int qcow2_flush(struct qcow2 *q)
{
	unsigned int i;
	int ret = 0;

	if (qcow2_tables_dirty(q)) {
		ret = qcow2_sync(q);
		for (i = 0; !ret && i < QCOW2_L2_CACHE; i++)
			ret = slot_write(q, &q->l2[i]);
		if (!ret && q->l1_dirty_lo < q->l1_dirty_hi) {
			ret = write_entries(q, META_L1, q->l1_offset, q->l1,
					    q->l1_dirty_lo, q->l1_dirty_hi);
			if (!ret)
				q->l1_dirty_lo = q->l1_dirty_hi = 0;
		}
		if (ret)
			return ret;
	}
	ret = qcow2_sync(q);
	while (!ret && q->nr_pending)
		ret = qcow2_entry_release(q, q->pending[--q->nr_pending]);
	return ret;
}

void qcow2_cache_free(struct qcow2 *q)
{
	unsigned int i;

	for (i = 0; i < QCOW2_L2_CACHE; i++)
		free(q->l2[i].table);
	free(q->pending);
}
