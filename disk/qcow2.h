/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the qcow2 format (disk/qcow2*.c): one open image's state and the
 * calls its files make of each other. qcow2.c is the format (header,
 * open, guest requests), qcow2_cache.c the L1/L2 tables and the order in
 * which changes reach the disk, qcow2_refcount.c the refcounts and cluster
 * allocation, qcow2_meta.c the overlap checks.
 * Layout facts from QEMU's docs/interop/qcow2.txt.
 */
#ifndef LKVM_DISK_QCOW2_H
#define LKVM_DISK_QCOW2_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lkvm/disk.h"

#define QCOW2_L2_CACHE		16		/* tables kept in memory */
#define QCOW2_RB_CACHE		4		/* refcount blocks, likewise */
#define QCOW2_BACKING_MAX	1023		/* a backing name's bytes */

#define ENTRY_COPIED		(1ULL << 63)	/* refcount exactly 1 */
#define ENTRY_COMPRESSED	(1ULL << 62)
#define ENTRY_ZERO		1ULL		/* v3 L2: reads as zeroes */
#define ENTRY_OFFSET		0x00fffffffffffe00ULL

/* What a cluster of the file holds, as far as the overlap checks go. */
enum qcow2_meta_kind {
	META_NONE,			/* data, or nothing */
	META_HEADER,
	META_L1,
	META_REFTABLE,
	META_REFBLOCK,
	META_L2,
};

/* The image's metadata clusters, sorted: cluster << 3 | kind. */
struct qcow2_meta {
	uint64_t *v;
	size_t n, cap;
};

struct l2_slot {
	uint64_t offset;		/* in the file; 0: empty */
	uint64_t last_use;
	uint64_t *table;		/* host byte order */
	uint32_t dirty_lo, dirty_hi;	/* entries not in the file yet */
};

struct rb_slot {
	uint64_t offset;		/* in the file; 0: empty */
	uint64_t last_use;
	uint16_t *blk;			/* as in the file: big-endian */
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
	uint32_t l1_dirty_lo, l1_dirty_hi;	/* entries not in the file yet */
	uint64_t *reftable;		/* host byte order */
	uint64_t reftable_size;		/* entries */
	uint64_t reftable_offset;
	uint64_t file_size;		/* at open */
	uint64_t max_clusters;		/* what the refcount table can count */
	uint64_t next_free;		/* the end of the file, to grow it */
	uint64_t free_cursor;		/* no free cluster below (index) */
	struct qcow2_meta meta;
	struct l2_slot l2[QCOW2_L2_CACHE];
	uint64_t l2_clock;		/* both caches' use counter */
	struct rb_slot rb[QCOW2_RB_CACHE];
	uint64_t *pending;		/* entries to release after a sync */
	size_t nr_pending, max_pending;
	uint64_t autoclear;		/* feature bits to clear ere a write */
	uint8_t *cluster_buf;		/* a cluster being written */
	uint8_t *zbuf;			/* compressed bytes */
	uint8_t *dbuf;			/* a cluster inflated */
	uint8_t *zeroes;		/* a cluster of them, never written */
	uint8_t *refblock_buf;		/* a new refcount block */
	uint8_t *table_buf;		/* table entries on their way out */
	struct disk backing;		/* file.fd < 0: none; the layer's */
	char backing_name[QCOW2_BACKING_MAX + 1];
	char backing_format[16];	/* "": the header names none */
};

/* Where a compressed cluster's bytes lie in the file: [*off, +*len). */
static inline void qcow2_compressed_extent(const struct qcow2 *q,
					   uint64_t entry, uint64_t *off,
					   uint64_t *len)
{
	unsigned int shift = 62 - (q->cluster_bits - 8);
	uint64_t sectors = ((entry & ~(ENTRY_COPIED | ENTRY_COMPRESSED)) >>
			    shift) + 1;

	*off = entry & ((1ULL << shift) - 1);
	*len = sectors * 512 - (*off & 511);
}

/*
 * qcow2.c: whole positional transfers on the image file; -errno. Writes
 * go through qcow2_write() (qcow2_meta.c), which checks where they go.
 */
int qcow2_file_rw(struct qcow2 *q, void *buf, size_t len, uint64_t off,
		  bool write);
int qcow2_put_be64(struct qcow2 *q, enum qcow2_meta_kind kind, uint64_t off,
		   uint64_t v);
int qcow2_sync(struct qcow2 *q);

/* qcow2_meta.c: the overlap checks (see there). */
int qcow2_meta_tables(struct qcow2 *q);
int qcow2_meta_load(struct qcow2 *q);
void qcow2_meta_free(struct qcow2 *q);
int qcow2_meta_add(struct qcow2 *q, uint64_t off, enum qcow2_meta_kind kind);
enum qcow2_meta_kind qcow2_meta_kind(const struct qcow2 *q, uint64_t off);
const char *qcow2_meta_name(enum qcow2_meta_kind kind);
/* 0, or -EIO (and a rate-limited line) for an entry no data can be at. */
int qcow2_check_entry(struct qcow2 *q, uint64_t gofs, uint64_t entry);
/* Every write to the file: what it is, checked against where it goes. */
int qcow2_write(struct qcow2 *q, enum qcow2_meta_kind kind, const void *buf,
		size_t len, uint64_t off);

/*
 * qcow2_cache.c: the entry that maps a guest offset, and changing it (in
 * memory until a flush); what a changed entry named, released after the
 * sync that puts the change on the disk; the flush that does it.
 */
int qcow2_l2_entry(struct qcow2 *q, uint64_t gofs, uint64_t *entry);
int qcow2_l2_update(struct qcow2 *q, uint64_t gofs, uint64_t entry);
int qcow2_release_later(struct qcow2 *q, uint64_t entry);
int qcow2_flush(struct qcow2 *q);
bool qcow2_tables_dirty(const struct qcow2 *q);
void qcow2_cache_free(struct qcow2 *q);

/* qcow2_refcount.c */
int qcow2_refcount_get(struct qcow2 *q, uint64_t cluster_off, uint16_t *v);
int qcow2_refcount_set(struct qcow2 *q, uint64_t cluster_off, uint16_t v);
/* A new cluster of `kind` holding buf (NULL: zeroes); offset in *off. */
int qcow2_cluster_alloc(struct qcow2 *q, enum qcow2_meta_kind kind,
			const void *buf, uint64_t *off);
/* What an entry the disk no longer holds pointed at: one ref less. */
int qcow2_entry_release(struct qcow2 *q, uint64_t entry);
void qcow2_refcount_free(struct qcow2 *q);

#endif
