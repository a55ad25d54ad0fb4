// SPDX-License-Identifier: GPL-2.0
/*
 * Device side of split virtqueues: popping descriptor chains the guest
 * driver made available, giving them back through the used ring, and the
 * notification suppression of both directions (flags and EVENT_IDX).
 *
 * The driver runs concurrently on another CPU and may rewrite any part of
 * the ring at any time, so every guest field is loaded once into a local
 * and only the local is checked and used.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/virtio/ring.h"

#define DESC_SIZE	sizeof(struct vring_desc)

static const char *const error_names[VIRTQ_ERR_COUNT] = {
	[VIRTQ_OK]		= "ok",
	[VIRTQ_ERR_RING_ADDR]	= "ring not in RAM or misaligned",
	[VIRTQ_ERR_SIZE]	= "bad queue size",
	[VIRTQ_ERR_NOMEM]	= "out of memory",
	[VIRTQ_ERR_AVAIL_IDX]	= "avail index jumped",
	[VIRTQ_ERR_DESC_INDEX]	= "descriptor index out of range",
	[VIRTQ_ERR_BUF_ADDR]	= "buffer not in RAM",
	[VIRTQ_ERR_LOOP]	= "descriptor chain loops",
	[VIRTQ_ERR_INDIRECT]	= "bad indirect descriptor",
	[VIRTQ_ERR_ORDER]	= "readable buffer after writable one",
	[VIRTQ_ERR_TOO_BIG]	= "chain longer than 4 GiB",
};

const char *virtq_error_name(enum virtq_error err)
{
	if ((unsigned int)err >= VIRTQ_ERR_COUNT)
		return "unknown";
	return error_names[err];
}

/*
 * Accesses to fields the driver shares with us: atomic so that the
 * compiler neither tears, merges nor repeats them. Virtio 1.x rings are
 * little-endian whatever the host.
 */
static inline uint16_t load16(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_RELAXED));
}

/* The spec's read barrier after reading an index the driver publishes. */
static inline uint16_t load16_acquire(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
}

static inline void store16(uint16_t *p, uint16_t val)
{
	__atomic_store_n(p, htole16(val), __ATOMIC_RELAXED);
}

static inline void store32(uint32_t *p, uint32_t val)
{
	__atomic_store_n(p, htole32(val), __ATOMIC_RELAXED);
}

/* Orders our earlier stores before our later loads (store-load). */
static inline void full_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int fail(struct virtq *vq, enum virtq_error err)
{
	if (vq->error == VIRTQ_OK)
		vq->error = err;
	return -1;
}

/*
 * Copy one descriptor out of guest memory. The compiler barrier stops it
 * from dropping the copy and re-reading the guest's (changing) table at
 * each use: every check below must see the values that are then used.
 * memcpy also copes with an indirect table at an odd address.
 */
static void read_desc(struct vring_desc *d, const void *src)
{
	memcpy(d, src, sizeof(*d));
	__asm__ __volatile__("" : : : "memory");
	d->addr = le64toh(d->addr);
	d->len = le32toh(d->len);
	d->flags = le16toh(d->flags);
	d->next = le16toh(d->next);
}

/* The chain being collected by one virtq_pop(). */
struct walk {
	unsigned int nr;		/* buffers in vq->bufs so far */
	uint16_t nr_out;
	uint16_t nr_in;
	uint32_t out_len;
	uint32_t in_len;
};

static enum virtq_error add_buf(struct virtq *vq, struct walk *w,
				const struct vring_desc *d)
{
	bool writable = d->flags & VRING_DESC_F_WRITE;
	uint32_t *total = writable ? &w->in_len : &w->out_len;
	void *hva;

	/* the walks' own caps keep within this; it guards bufs[] itself */
	if (w->nr >= vq->max_chain)
		return VIRTQ_ERR_LOOP;
	if (!writable && w->nr_in)
		return VIRTQ_ERR_ORDER;
	/* len 0 still needs an address in RAM: hva is then a valid pointer */
	hva = guest_mem_ptr(vq->mem, d->addr, d->len);
	if (!hva)
		return VIRTQ_ERR_BUF_ADDR;
	if (__builtin_add_overflow(*total, d->len, total))
		return VIRTQ_ERR_TOO_BIG;
	vq->bufs[w->nr++] = (struct virtq_buf) { .hva = hva, .len = d->len };
	if (writable)
		w->nr_in++;
	else
		w->nr_out++;
	return VIRTQ_OK;
}

/*
 * An indirect descriptor ends a chain (it may not have NEXT); its table
 * holds at most size entries, none of them indirect, and NEXT indexes
 * within the table. Its own WRITE flag means nothing (spec 2.7.5.3.2).
 */
static enum virtq_error walk_indirect(struct virtq *vq, struct walk *w,
				      const struct vring_desc *ind)
{
	unsigned int n, i = 0, count;
	enum virtq_error err;
	struct vring_desc d;
	const uint8_t *table;

	if (!vq->indirect || (ind->flags & VRING_DESC_F_NEXT) || !ind->len ||
	    ind->len % DESC_SIZE || ind->len / DESC_SIZE > vq->size)
		return VIRTQ_ERR_INDIRECT;
	table = guest_mem_ptr(vq->mem, ind->addr, ind->len);
	if (!table)
		return VIRTQ_ERR_BUF_ADDR;
	n = ind->len / DESC_SIZE;
	for (count = 0; count < n; count++) {
		read_desc(&d, table + i * DESC_SIZE);
		if (d.flags & VRING_DESC_F_INDIRECT)
			return VIRTQ_ERR_INDIRECT;
		err = add_buf(vq, w, &d);
		if (err)
			return err;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return VIRTQ_OK;
		if (d.next >= n)
			return VIRTQ_ERR_INDIRECT;
		i = d.next;
	}
	return VIRTQ_ERR_LOOP;
}

/*
 * Zero or more direct descriptors, maybe ended by an indirect one. More
 * than size direct descriptors can only be a loop.
 */
static enum virtq_error walk_chain(struct virtq *vq, uint16_t head,
				   struct walk *w)
{
	unsigned int i = head, count;
	enum virtq_error err;
	struct vring_desc d;

	for (count = 0; count < vq->size; count++) {
		read_desc(&d, &vq->desc[i]);
		if (d.flags & VRING_DESC_F_INDIRECT)
			return walk_indirect(vq, w, &d);
		err = add_buf(vq, w, &d);
		if (err)
			return err;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return VIRTQ_OK;
		if (d.next >= vq->size)
			return VIRTQ_ERR_DESC_INDEX;
		i = d.next;
	}
	return VIRTQ_ERR_LOOP;
}

/* How many chains the driver made available that we have not popped. */
static uint16_t avail_pending(struct virtq *vq)
{
	uint16_t n = load16_acquire(&vq->avail->idx) - vq->last_avail;

	if (!n && vq->event_idx && vq->notify) {
		/*
		 * The avail_event our last pop wrote must be visible before
		 * we look again: a chain added meanwhile was either kicked
		 * or is seen now, never neither (the lost-kick race).
		 */
		full_barrier();
		n = load16_acquire(&vq->avail->idx) - vq->last_avail;
	}
	return n;
}

int virtq_pop(struct virtq *vq, struct virtq_chain *chain)
{
	struct walk w = { 0 };
	enum virtq_error err;
	uint16_t n, head;

	if (vq->error || !vq->bufs)
		return -1;
	n = avail_pending(vq);
	if (!n)
		return 0;
	if (n > vq->size)
		return fail(vq, VIRTQ_ERR_AVAIL_IDX);
	head = load16(&vq->avail->ring[vq->last_avail & (vq->size - 1)]);
	if (head >= vq->size)
		return fail(vq, VIRTQ_ERR_DESC_INDEX);
	err = walk_chain(vq, head, &w);
	if (err)
		return fail(vq, err);

	*chain = (struct virtq_chain) {
		.head = head,
		.nr_out = w.nr_out,
		.nr_in = w.nr_in,
		.out_len = w.out_len,
		.in_len = w.in_len,
		.out = vq->bufs,
		.in = vq->bufs + w.nr_out,
	};
	vq->last_avail++;
	/* keep asking for a kick at the next chain while kicks are wanted */
	if (vq->event_idx && vq->notify)
		store16(vq->avail_event, vq->last_avail);
	return 1;
}

uint16_t virtq_avail_count(struct virtq *vq)
{
	if (vq->error || !vq->avail)
		return 0;
	return load16_acquire(&vq->avail->idx) - vq->last_avail;
}

uint16_t virtq_avail_idx(struct virtq *vq)
{
	if (vq->error || !vq->avail)
		return vq->last_avail;
	return load16_acquire(&vq->avail->idx);
}

void virtq_unpop(struct virtq *vq, uint16_t n)
{
	/* Only chains popped since the last push or publish can go back. */
	vq->last_avail -= n;
	if (vq->event_idx && vq->notify)
		store16(vq->avail_event, vq->last_avail);
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t written)
{
	struct vring_used_elem *elem;

	if (!vq->used)
		return;
	elem = &vq->used->ring[vq->used_idx & (vq->size - 1)];
	store32(&elem->id, head);
	store32(&elem->len, written);
	vq->used_idx++;
}

bool virtq_publish(struct virtq *vq)
{
	uint16_t old = vq->published_used, new = vq->used_idx;

	if (!vq->used || old == new)
		return false;
	/* release: the driver must see the elements before the index */
	__atomic_store_n(&vq->used->idx, htole16(new), __ATOMIC_RELEASE);
	vq->published_used = new;
	/*
	 * used->idx must be visible before we read what the driver wants:
	 * it re-enables interrupts and then re-checks used->idx, so one of
	 * us sees the other's update.
	 */
	full_barrier();
	if (vq->event_idx)
		return vring_need_event(load16(vq->used_event), new, old);
	return !(load16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
}

void virtq_enable_notify(struct virtq *vq, bool enable)
{
	if (!vq->used)
		return;
	vq->notify = enable;
	if (vq->event_idx) {
		/*
		 * Disabling writes nothing: the stale avail_event lets at most
		 * one more kick through, cheaper than a store per pop.
		 */
		if (!enable)
			return;
		store16(vq->avail_event, vq->last_avail);
	} else {
		store16(&vq->used->flags,
			enable ? 0 : VRING_USED_F_NO_NOTIFY);
	}
	/* our store before the caller's virtq_has_avail() re-check load */
	if (enable)
		full_barrier();
}

void virtq_notify_on_next(struct virtq *vq)
{
	virtq_enable_notify(vq, true);
	if (vq->event_idx && vq->avail) {
		/* The driver kicks when avail->idx moves past avail_event. */
		store16(vq->avail_event, load16_acquire(&vq->avail->idx));
		full_barrier();
	}
}

bool virtq_has_avail(struct virtq *vq)
{
	if (vq->error || !vq->bufs)
		return false;
	return load16_acquire(&vq->avail->idx) != vq->last_avail;
}

/* A ring part in RAM, aligned in guest and host address alike. */
static void *ring_part(const struct guest_mem *mem, uint64_t gpa,
		       uint64_t len, unsigned int align)
{
	void *hva = guest_mem_ptr(mem, gpa, len);

	if (!hva || gpa % align || (uintptr_t)hva % align)
		return NULL;
	return hva;
}

int virtq_init(struct virtq *vq, const struct guest_mem *mem, uint16_t size,
	       uint64_t desc, uint64_t avail, uint64_t used,
	       bool event_idx, bool indirect)
{
	void *d, *a, *u;

	memset(vq, 0, sizeof(*vq));
	vq->mem = mem;
	vq->size = size;
	vq->event_idx = event_idx;
	vq->indirect = indirect;
	vq->notify = true;
	if (!size || size > VIRTQ_MAX_SIZE || (size & (size - 1)))
		return fail(vq, VIRTQ_ERR_SIZE);

	/* avail and used include used_event / avail_event, as in the spec */
	d = ring_part(mem, desc, 16ULL * size, 16);
	a = ring_part(mem, avail, 6 + 2ULL * size, 2);
	u = ring_part(mem, used, 6 + 8ULL * size, 4);
	if (!d || !a || !u)
		return fail(vq, VIRTQ_ERR_RING_ADDR);

	/* direct descriptors, then an indirect table of up to size more */
	vq->max_chain = indirect ? 2U * size - 1 : size;
	vq->bufs = calloc(vq->max_chain, sizeof(*vq->bufs));
	if (!vq->bufs)
		return fail(vq, VIRTQ_ERR_NOMEM);

	vq->desc = d;
	vq->avail = a;
	vq->used = u;
	vq->used_event = &vq->avail->ring[size];
	vq->avail_event = (uint16_t *)&vq->used->ring[size];
	/* a queue starts after a reset: the driver sees used->idx 0 */
	store16(&vq->used->flags, 0);
	store16(&vq->used->idx, 0);
	if (event_idx)
		store16(vq->avail_event, 0);
	return 0;
}

void virtq_exit(struct virtq *vq)
{
	free(vq->bufs);
	vq->bufs = NULL;
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	vq->used_event = NULL;
	vq->avail_event = NULL;
}

bool virtq_chain_read(const struct virtq_chain *c, size_t skip, void *dst,
		      size_t len)
{
	uint8_t *out = dst;
	unsigned int i;

	for (i = 0; i < c->nr_out && len; i++) {
		size_t n;

		if (skip >= c->out[i].len) {
			skip -= c->out[i].len;
			continue;
		}
		n = MIN(len, c->out[i].len - skip);
		memcpy(out, (uint8_t *)c->out[i].hva + skip, n);
		out += n;
		len -= n;
		skip = 0;
	}
	return !len;
}

size_t virtq_chain_write(const struct virtq_chain *c, const void *src,
			 size_t len)
{
	const uint8_t *in = src;
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < c->nr_in && done < len; i++) {
		size_t n = MIN(len - done, (size_t)c->in[i].len);

		memcpy(c->in[i].hva, in + done, n);
		done += n;
	}
	return done;
}
