// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the split virtqueue library (make fuzz-ring).
 *
 * A small fake guest memory of two adjacent regions, each allocated to its
 * exact size so that ASan sees any access beyond them. The first input
 * byte picks the queue size, the negotiated features and one of two modes:
 * raw (the rest of the input is the memory image, rings at input-chosen
 * addresses: finds parser holes) or structured (the input describes mostly
 * valid chains, sometimes corrupted: reaches deep into the chain walk).
 * A device loop then pops, reads and writes every buffer, pushes and
 * publishes, checking invariants rather than only "no crash".
 */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/guest_mem.h"
#include "lkvm/virtio/ring.h"
#include "fuzz_common.h"

#define RAM_GPA		0x10000ULL
#define RAM_SIZE	0x10000ULL
#define RAM2_GPA	(RAM_GPA + RAM_SIZE)
#define RAM2_SIZE	0x1000ULL

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

static uint8_t *ram, *ram2;
static struct guest_mem mem;

static void setup_once(void)
{
	if (ram)
		return;
	ram = malloc(RAM_SIZE);
	ram2 = malloc(RAM2_SIZE);
	CHECK(ram && ram2);
	CHECK(!guest_mem_add(&mem, RAM_GPA, RAM_SIZE, ram));
	CHECK(!guest_mem_add(&mem, RAM2_GPA, RAM2_SIZE, ram2));
}

static bool in_region(const void *p, uint32_t len, const uint8_t *base,
		      uint64_t size)
{
	uintptr_t q = (uintptr_t)p, b = (uintptr_t)base;

	return q >= b && q <= b + size && len <= b + size - q;
}

static void set_desc(void *where, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	struct vring_desc d = {
		.addr = htole64(addr), .len = htole32(len),
		.flags = htole16(flags), .next = htole16(next),
	};

	memcpy(where, &d, sizeof(d));
}

static void put16(uint64_t gpa, uint16_t val)
{
	val = htole16(val);
	guest_mem_write(&mem, gpa, &val, sizeof(val));
}

/* Rings at input-chosen addresses; the memory image is the input. */
static int raw_setup(struct virtq *vq, struct input *in, uint16_t size,
		     bool event_idx, bool indirect)
{
	uint64_t desc = RAM_GPA + take16(in);
	uint64_t avail = RAM_GPA + take16(in);
	uint64_t used = RAM_GPA + take16(in);
	size_t n = in->n < RAM_SIZE ? in->n : RAM_SIZE;

	memcpy(ram, in->p, n);
	in->p += n;
	in->n -= n;
	n = in->n < RAM2_SIZE ? in->n : RAM2_SIZE;
	memcpy(ram2, in->p, n);
	return virtq_init(vq, &mem, size, desc, avail, used, event_idx,
			  indirect);
}

struct layout {
	uint64_t desc, avail, used, data, data_end;
	uint16_t next_desc;
};

/* A buffer somewhere in RAM, now and then across or past its edges. */
static uint64_t pick_addr(struct input *in, const struct layout *l,
			  uint32_t len)
{
	uint8_t how = take8(in);
	uint64_t span = l->data_end - l->data;

	if (how == 0xff)
		return (uint64_t)take16(in) << 48 | (uint64_t)take16(in) << 32 |
		       (uint64_t)take16(in) << 16 | take16(in);
	if (how >= 0xf0)
		return RAM2_GPA - len / 2;
	if (how >= 0xe0)
		return RAM2_GPA + take16(in) % RAM2_SIZE;
	return l->data + take16(in) % span;
}

/* One corruption of a descriptor now and then, chosen by the input. */
static void maybe_corrupt(struct input *in, void *where)
{
	uint8_t c = take8(in), *b = where;

	if (c < 0xf0)
		return;
	b[c & 15] = take8(in);
}

static void add_indirect(struct input *in, struct layout *l, void *slot,
			 uint16_t size, bool writable_only)
{
	unsigned int i, n = 1 + take8(in) % (size < 8 ? size : 8);
	uint64_t table = l->data + take16(in) % (l->data_end - l->data - 128);
	uint8_t *t;

	table &= ~15ULL;
	t = guest_mem_ptr(&mem, table, n * 16);
	if (!t)
		return;
	for (i = 0; i < n; i++) {
		uint32_t len = take16(in) % 2048;
		uint16_t flags = writable_only || take8(in) % 2 ?
				 VRING_DESC_F_WRITE : 0;

		if (i + 1 < n)
			flags |= VRING_DESC_F_NEXT;
		set_desc(t + i * 16, pick_addr(in, l, len), len, flags, i + 1);
		maybe_corrupt(in, t + i * 16);
	}
	set_desc(slot, table, n * 16, VRING_DESC_F_INDIRECT, 0);
	maybe_corrupt(in, slot);
}

/* Chains of 1-4 descriptors, readable first, maybe ending indirect. */
static uint16_t add_chain(struct input *in, struct layout *l, uint16_t size,
			  bool indirect)
{
	unsigned int i, n = 1 + take8(in) % 4, nr_out = take8(in) % (n + 1);
	uint16_t head = l->next_desc % size;
	uint8_t *desc = guest_mem_ptr(&mem, l->desc, 16ULL * size);

	for (i = 0; i < n; i++) {
		uint16_t idx = (head + i) % size, next = (idx + 1) % size;
		uint8_t *slot = desc + idx * 16;
		uint32_t len = take16(in) % 4096;
		uint16_t flags = i < nr_out ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 == n && indirect && take8(in) % 2) {
			add_indirect(in, l, slot, size, i >= nr_out);
			break;
		}
		if (i + 1 < n)
			flags |= VRING_DESC_F_NEXT;
		set_desc(slot, pick_addr(in, l, len), len, flags, next);
		maybe_corrupt(in, slot);
	}
	l->next_desc = head + n;
	return head;
}

/* A driver's layout in region A, filled with chains the input describes. */
static int structured_setup(struct virtq *vq, struct input *in,
			    uint16_t size, bool event_idx, bool indirect)
{
	struct layout l = { .desc = RAM_GPA };
	uint16_t nr = 0, idx;

	l.avail = l.desc + 16ULL * size;
	l.used = (l.avail + 6 + 2ULL * size + 3) & ~3ULL;
	l.data = (l.used + 6 + 8ULL * size + 15) & ~15ULL;
	l.data_end = RAM_GPA + RAM_SIZE;
	memset(ram, 0, RAM_SIZE);
	memset(ram2, 0, RAM2_SIZE);
	if (virtq_init(vq, &mem, size, l.desc, l.avail, l.used, event_idx,
		       indirect))
		return -1;

	while (in->n > 1 && nr < size) {
		uint16_t head = add_chain(in, &l, size, indirect);

		if (take8(in) == 0xff)
			head = take16(in);
		put16(l.avail + 4 + 2 * (nr % size), head);
		nr++;
	}
	idx = take8(in) == 0xff ? take16(in) : nr;
	put16(l.avail, take8(in) & VRING_AVAIL_F_NO_INTERRUPT);
	put16(l.avail + 2, idx);
	put16(l.avail + 4 + 2 * size, take8(in));	/* used_event */
	return 0;
}

/* Read what the device may read, write what it may write. */
static uint32_t use_chain(const struct virtq *vq, const struct virtq_chain *c)
{
	uint32_t out = 0, in = 0, sum = 0, i, j;

	CHECK(c->head < vq->size);
	CHECK((unsigned int)c->nr_out + c->nr_in <= vq->max_chain);
	CHECK(c->in == c->out + c->nr_out);
	for (i = 0; i < c->nr_out + c->nr_in; i++) {
		const struct virtq_buf *b = &c->out[i];

		CHECK(b->hva);
		CHECK(in_region(b->hva, b->len, ram, RAM_SIZE) ||
		      in_region(b->hva, b->len, ram2, RAM2_SIZE));
		if (i < c->nr_out) {
			out += b->len;
			for (j = 0; j < b->len; j++)
				sum += ((const uint8_t *)b->hva)[j];
		} else {
			in += b->len;
			memset(b->hva, 0xa5, b->len);
		}
	}
	CHECK(out == c->out_len);
	CHECK(in == c->in_len);
	return sum;
}

static uint16_t guest16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static void device_loop(struct virtq *vq, struct input *in)
{
	unsigned int budget = 4U * vq->size + 16;
	uint16_t pushed = 0;
	struct virtq_chain c;
	int ret = 0;

	while (budget--) {
		uint16_t avail_idx = guest16(&vq->avail->idx);
		uint16_t last = vq->last_avail;

		if (take8(in) == 0xfe)
			virtq_enable_notify(vq, take8(in) & 1);
		ret = virtq_pop(vq, &c);
		if (ret <= 0)
			break;
		CHECK(avail_idx != last && vq->last_avail == (uint16_t)(last + 1));
		use_chain(vq, &c);
		virtq_push(vq, c.head, c.in_len ? take16(in) % (c.in_len + 1) : 0);
		pushed++;
		if (take8(in) % 2) {
			bool irq = virtq_publish(vq);

			CHECK(guest16(&vq->used->idx) == pushed);
			if (!vq->event_idx &&
			    guest16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT)
				CHECK(!irq);
		}
	}
	if (ret < 0) {
		CHECK(vq->error != VIRTQ_OK && vq->error < VIRTQ_ERR_COUNT);
		CHECK(virtq_pop(vq, &c) == -1);
		CHECK(!virtq_has_avail(vq));
	}
	virtq_publish(vq);
	CHECK(guest16(&vq->used->idx) == pushed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .n = size };
	uint8_t mode = take8(&in);
	uint16_t qsize = 1U << (mode % 11);
	bool event_idx = mode & 0x10, indirect = mode & 0x20;
	struct virtq vq;
	int ret;

	setup_once();
	if (mode & 0x40)
		ret = structured_setup(&vq, &in, qsize, event_idx, indirect);
	else
		ret = raw_setup(&vq, &in, qsize, event_idx, indirect);
	if (!ret)
		device_loop(&vq, &in);
	virtq_exit(&vq);
	return 0;
}
