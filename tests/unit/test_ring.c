// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the split virtqueue library: a fake guest memory, a tiny
 * driver that lays out rings and chains in it, well-formed traffic and
 * notification suppression, every malformed ring we know of, and a
 * randomized ring soup checked against the library's invariants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "lkvm/guest_mem.h"
#include "lkvm/util.h"
#include "lkvm/virtio/ring.h"

/* Region A holds the rings and most buffers; B follows it without a gap. */
#define RAM_GPA		0x100000ULL
#define RAM_SIZE	(4 * MiB)
#define RAM2_GPA	(RAM_GPA + RAM_SIZE)
#define RAM2_SIZE	(1 * MiB)
/* A large reservation never touched: for chains of many gigabytes. */
#define BIG_GPA		(4 * GiB)
#define BIG_SIZE	(1 * GiB)

#define DESC_OFF	0x0		/* room for 32768 descriptors */
#define AVAIL_OFF	0x80000
#define USED_OFF	0xa0000
#define DATA_OFF	0x100000	/* buffers and indirect tables */
#define DATA_GPA	(RAM_GPA + DATA_OFF)

struct drv {
	struct guest_mem mem;
	uint8_t *ram;
	uint8_t *ram2;
	void *big;
	uint16_t size;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx;		/* the driver's shadow of avail->idx */
	uint16_t next_desc;		/* next free descriptor, round robin */
	uint64_t next_data;		/* next free buffer gpa */
	struct virtq vq;
	bool vq_live;
};

static struct drv drv;

static void *gpa_to_host(uint64_t gpa)
{
	return guest_mem_ptr(&drv.mem, gpa, 1);
}

static int group_setup(void **state)
{
	drv.ram = aligned_alloc(4096, RAM_SIZE);
	drv.ram2 = aligned_alloc(4096, RAM2_SIZE);
	drv.big = mmap(NULL, BIG_SIZE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!drv.ram || !drv.ram2 || drv.big == MAP_FAILED)
		return -1;
	if (guest_mem_add(&drv.mem, RAM_GPA, RAM_SIZE, drv.ram) ||
	    guest_mem_add(&drv.mem, RAM2_GPA, RAM2_SIZE, drv.ram2) ||
	    guest_mem_add(&drv.mem, BIG_GPA, BIG_SIZE, drv.big))
		return -1;
	drv.desc = gpa_to_host(RAM_GPA + DESC_OFF);
	drv.avail = gpa_to_host(RAM_GPA + AVAIL_OFF);
	drv.used = gpa_to_host(RAM_GPA + USED_OFF);
	return 0;
}

static int group_teardown(void **state)
{
	free(drv.ram);
	free(drv.ram2);
	munmap(drv.big, BIG_SIZE);
	return 0;
}

static void drv_stop(void)
{
	if (drv.vq_live)
		virtq_exit(&drv.vq);
	drv.vq_live = false;
}

/* A fresh ring of `size` entries, as a driver sets it up after reset. */
static void drv_start(uint16_t size, bool event_idx, bool indirect)
{
	drv_stop();
	memset(drv.ram, 0, DATA_OFF);
	drv.size = size;
	drv.avail_idx = 0;
	drv.next_desc = 0;
	drv.next_data = DATA_GPA;
	assert_int_equal(virtq_init(&drv.vq, &drv.mem, size,
				    RAM_GPA + DESC_OFF, RAM_GPA + AVAIL_OFF,
				    RAM_GPA + USED_OFF, event_idx, indirect), 0);
	drv.vq_live = true;
}

static int test_setup(void **state)
{
	drv_start(16, false, false);
	return 0;
}

static int test_teardown(void **state)
{
	drv_stop();
	return 0;
}

static void set_desc(struct vring_desc *d, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->flags = htole16(flags);
	d->next = htole16(next);
}

static void make_avail(uint16_t head)
{
	drv.avail->ring[drv.avail_idx % drv.size] = htole16(head);
	drv.avail_idx++;
	__atomic_store_n(&drv.avail->idx, htole16(drv.avail_idx),
			 __ATOMIC_RELEASE);
}

static uint64_t alloc_data(uint32_t len)
{
	uint64_t gpa = drv.next_data;

	drv.next_data += ALIGN_UP(len ? len : 1, 16);
	if (drv.next_data > RAM_GPA + RAM_SIZE) {
		drv.next_data = DATA_GPA + ALIGN_UP(len ? len : 1, 16);
		gpa = DATA_GPA;
	}
	return gpa;
}

/* A chain of nr_out readable then nr_in writable buffers of len bytes. */
static uint16_t add_chain(unsigned int nr_out, unsigned int nr_in,
			  uint32_t len)
{
	unsigned int i, nr = nr_out + nr_in;
	uint16_t head = drv.next_desc;

	for (i = 0; i < nr; i++) {
		uint16_t idx = (head + i) % drv.size;
		uint16_t flags = i < nr_out ? 0 : VRING_DESC_F_WRITE;

		if (i + 1 < nr)
			flags |= VRING_DESC_F_NEXT;
		set_desc(&drv.desc[idx], alloc_data(len), len, flags,
			 (idx + 1) % drv.size);
	}
	drv.next_desc = (head + nr) % drv.size;
	make_avail(head);
	return head;
}

static uint16_t used_idx(void)
{
	return le16toh(__atomic_load_n(&drv.used->idx, __ATOMIC_ACQUIRE));
}

static bool used_ring_untouched(void)
{
	static const uint8_t zero[6 + 8 * 16];

	return !memcmp(drv.used, zero, MIN(sizeof(zero),
					   6 + 8ULL * drv.size));
}

/* Pop fails with err, keeps failing, and nothing reached the used ring. */
static void expect_error(enum virtq_error err)
{
	struct virtq_chain chain;

	assert_int_equal(virtq_pop(&drv.vq, &chain), -1);
	assert_string_equal(virtq_error_name(drv.vq.error),
			    virtq_error_name(err));
	assert_int_equal(drv.vq.error, err);
	assert_int_equal(virtq_pop(&drv.vq, &chain), -1);
	assert_int_equal(drv.vq.error, err);
	assert_false(virtq_has_avail(&drv.vq));
	assert_false(virtq_publish(&drv.vq));
	assert_true(used_ring_untouched());
}

static void expect_pop(struct virtq_chain *chain, uint16_t head)
{
	assert_int_equal(virtq_pop(&drv.vq, chain), 1);
	assert_int_equal(chain->head, head);
}

/* ---- well-formed traffic ---- */

static void test_simple_chain(void **state)
{
	struct virtq_chain chain;
	uint16_t head = add_chain(1, 1, 512);
	uint8_t *out = gpa_to_host(DATA_GPA);

	memcpy(out, "request", 8);
	assert_true(virtq_has_avail(&drv.vq));
	expect_pop(&chain, head);
	assert_int_equal(chain.nr_out, 1);
	assert_int_equal(chain.nr_in, 1);
	assert_int_equal(chain.out_len, 512);
	assert_int_equal(chain.in_len, 512);
	assert_ptr_equal(chain.out[0].hva, out);
	assert_ptr_equal(chain.in, chain.out + 1);
	assert_ptr_equal(chain.in[0].hva, gpa_to_host(DATA_GPA + 512));
	assert_string_equal(chain.out[0].hva, "request");
	memcpy(chain.in[0].hva, "reply", 6);
	assert_false(virtq_has_avail(&drv.vq));
	assert_int_equal(virtq_pop(&drv.vq, &chain), 0);

	virtq_push(&drv.vq, head, 6);
	assert_int_equal(used_idx(), 0);	/* not before publish */
	assert_true(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), 1);
	assert_int_equal(le32toh(drv.used->ring[0].id), head);
	assert_int_equal(le32toh(drv.used->ring[0].len), 6);
	assert_string_equal(gpa_to_host(DATA_GPA + 512), "reply");
	assert_int_equal(drv.vq.error, VIRTQ_OK);
}

static void test_many_chains(void **state)
{
	struct virtq_chain chain;
	uint16_t heads[16];
	unsigned int i;

	for (i = 0; i < 8; i++)
		heads[i] = add_chain(1, 1, 64);
	for (i = 0; i < 8; i++) {
		expect_pop(&chain, heads[i]);
		assert_int_equal(chain.nr_out + chain.nr_in, 2);
		virtq_push(&drv.vq, heads[i], i);
	}
	assert_int_equal(virtq_pop(&drv.vq, &chain), 0);
	assert_true(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), 8);
	for (i = 0; i < 8; i++) {
		assert_int_equal(le32toh(drv.used->ring[i].id), heads[i]);
		assert_int_equal(le32toh(drv.used->ring[i].len), i);
	}
}

/* A full ring: size chains of one descriptor each, all outstanding. */
static void test_full_ring(void **state)
{
	struct virtq_chain chain;
	unsigned int i;

	for (i = 0; i < drv.size; i++)
		add_chain(0, 1, 32);
	for (i = 0; i < drv.size; i++)
		expect_pop(&chain, i);
	assert_int_equal(virtq_pop(&drv.vq, &chain), 0);
	for (i = 0; i < drv.size; i++)
		virtq_push(&drv.vq, i, 32);
	assert_true(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), drv.size);
}

/* Both free-running indices wrap at 65536 without a hiccup. */
static void test_index_wrap(void **state)
{
	struct virtq_chain chain;
	unsigned int i;

	for (i = 0; i < 65536 + 40; i++) {
		uint16_t head = add_chain(1, 1, 16);

		expect_pop(&chain, head);
		assert_int_equal(virtq_pop(&drv.vq, &chain), 0);
		virtq_push(&drv.vq, head, 16);
		if (i % 3 == 2 || i >= 65530) {
			assert_true(virtq_publish(&drv.vq));
			assert_int_equal(used_idx(), (uint16_t)(i + 1));
		}
	}
	assert_int_equal(drv.vq.last_avail, 40);
	assert_int_equal(used_idx(), 40);
	assert_int_equal(drv.vq.error, VIRTQ_OK);
}

static void test_batching(void **state)
{
	struct virtq_chain chain;
	uint16_t heads[3];
	unsigned int i;

	for (i = 0; i < 3; i++)
		heads[i] = add_chain(1, 0, 8);
	for (i = 0; i < 3; i++)
		expect_pop(&chain, heads[i]);
	/* completions out of order, one publish */
	virtq_push(&drv.vq, heads[2], 0);
	virtq_push(&drv.vq, heads[0], 0);
	assert_int_equal(used_idx(), 0);
	assert_true(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), 2);
	assert_int_equal(le32toh(drv.used->ring[0].id), heads[2]);
	assert_int_equal(le32toh(drv.used->ring[1].id), heads[0]);
	/* nothing new: no store, no interrupt */
	assert_false(virtq_publish(&drv.vq));
	virtq_push(&drv.vq, heads[1], 0);
	assert_true(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), 3);
}

static void test_no_interrupt_flag(void **state)
{
	struct virtq_chain chain;
	uint16_t head;

	drv.avail->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	head = add_chain(1, 0, 8);
	expect_pop(&chain, head);
	virtq_push(&drv.vq, head, 0);
	assert_false(virtq_publish(&drv.vq));
	assert_int_equal(used_idx(), 1);	/* published all the same */

	drv.avail->flags = 0;
	head = add_chain(1, 0, 8);
	expect_pop(&chain, head);
	virtq_push(&drv.vq, head, 0);
	assert_true(virtq_publish(&drv.vq));
}

/* One chain through the ring: pop, push, publish; did it interrupt? */
static bool one_round(void)
{
	struct virtq_chain chain;
	uint16_t head = add_chain(1, 0, 8);

	expect_pop(&chain, head);
	virtq_push(&drv.vq, head, 0);
	return virtq_publish(&drv.vq);
}

static void set_used_event(uint16_t val)
{
	drv.avail->ring[drv.size] = htole16(val);
}

static uint16_t avail_event(void)
{
	uint16_t val;

	memcpy(&val, &drv.used->ring[drv.size], sizeof(val));
	return le16toh(val);
}

static void test_event_idx_interrupts(void **state)
{
	struct virtq_chain chain;
	unsigned int i;
	uint16_t heads[3];

	drv_start(16, true, false);
	/* used_event 0: interrupt when used->idx goes 0 -> 1 */
	assert_true(one_round());
	/* driver wants one when the 5th completion (idx 4 -> 5) lands */
	set_used_event(4);
	for (i = 1; i < 4; i++)
		assert_false(one_round());
	assert_true(one_round());		/* 4 -> 5 */
	assert_false(one_round());		/* 5 -> 6: already past */

	/* a batch crossing used_event interrupts once */
	set_used_event(7);
	for (i = 0; i < 3; i++)
		heads[i] = add_chain(1, 0, 8);
	for (i = 0; i < 3; i++) {
		expect_pop(&chain, heads[i]);
		virtq_push(&drv.vq, heads[i], 0);
	}
	assert_true(virtq_publish(&drv.vq));	/* 6 -> 9 covers 7 */
	assert_int_equal(used_idx(), 9);
	assert_false(one_round());		/* 9 -> 10 */

	/* the flag means nothing with EVENT_IDX */
	drv.avail->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	set_used_event(10);
	assert_true(one_round());
}

static void test_enable_notify_flags(void **state)
{
	struct virtq_chain chain;

	assert_int_equal(le16toh(drv.used->flags), 0);
	virtq_enable_notify(&drv.vq, false);
	assert_int_equal(le16toh(drv.used->flags), VRING_USED_F_NO_NOTIFY);
	add_chain(1, 0, 8);
	expect_pop(&chain, 0);
	virtq_enable_notify(&drv.vq, true);
	assert_int_equal(le16toh(drv.used->flags), 0);
	assert_false(virtq_has_avail(&drv.vq));
	/* a chain that came in while kicks were off is seen by the re-check */
	virtq_enable_notify(&drv.vq, false);
	add_chain(1, 0, 8);
	virtq_enable_notify(&drv.vq, true);
	assert_true(virtq_has_avail(&drv.vq));
	/* the avail_event slot is not ours without EVENT_IDX */
	assert_int_equal(avail_event(), 0);
}

static void test_enable_notify_event_idx(void **state)
{
	struct virtq_chain chain;

	drv_start(16, true, false);
	assert_int_equal(avail_event(), 0);
	add_chain(1, 0, 8);
	add_chain(1, 0, 8);
	/* while kicks are wanted, each pop asks for the next one */
	expect_pop(&chain, 0);
	assert_int_equal(avail_event(), 1);

	virtq_enable_notify(&drv.vq, false);
	expect_pop(&chain, 1);
	assert_int_equal(avail_event(), 1);	/* stale on purpose */
	assert_int_equal(le16toh(drv.used->flags), 0);

	virtq_enable_notify(&drv.vq, true);
	assert_int_equal(avail_event(), 2);
	assert_int_equal(le16toh(drv.used->flags), 0);
	assert_int_equal(virtq_pop(&drv.vq, &chain), 0);
}

/* Linux never sends them, but the spec allows zero-length buffers. */
static void test_zero_length(void **state)
{
	struct virtq_chain chain;

	set_desc(&drv.desc[0], DATA_GPA, 0, VRING_DESC_F_NEXT, 1);
	set_desc(&drv.desc[1], DATA_GPA + 16, 0, VRING_DESC_F_WRITE, 0);
	make_avail(0);
	expect_pop(&chain, 0);
	assert_int_equal(chain.nr_out, 1);
	assert_int_equal(chain.nr_in, 1);
	assert_int_equal(chain.out_len, 0);
	assert_int_equal(chain.in_len, 0);
	assert_ptr_equal(chain.out[0].hva, gpa_to_host(DATA_GPA));
	assert_int_equal(chain.in[0].len, 0);

	/* one past the end of a region is still an address in RAM */
	set_desc(&drv.desc[2], RAM2_GPA + RAM2_SIZE, 0, 0, 0);
	make_avail(2);
	expect_pop(&chain, 2);
	assert_ptr_equal(chain.out[0].hva, drv.ram2 + RAM2_SIZE);

	/* but an address nowhere is not */
	set_desc(&drv.desc[3], 0x10, 0, 0, 0);
	make_avail(3);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

static void test_buffer_in_second_region(void **state)
{
	struct virtq_chain chain;

	set_desc(&drv.desc[0], RAM2_GPA + 100, 200, VRING_DESC_F_WRITE, 0);
	make_avail(0);
	expect_pop(&chain, 0);
	assert_ptr_equal(chain.in[0].hva, drv.ram2 + 100);
	assert_int_equal(chain.in_len, 200);
}

static void write_indirect(uint64_t gpa, unsigned int i, uint64_t addr,
			   uint32_t len, uint16_t flags, uint16_t next)
{
	set_desc((struct vring_desc *)gpa_to_host(gpa) + i, addr, len, flags,
		 next);
}

#define TABLE_GPA	(RAM_GPA + RAM_SIZE - 64 * KiB)

static void test_indirect(void **state)
{
	struct virtq_chain chain;

	drv_start(16, false, true);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 2);
	write_indirect(TABLE_GPA, 2, DATA_GPA + 16, 100,
		       VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	write_indirect(TABLE_GPA, 1, DATA_GPA + 116, 1,
		       VRING_DESC_F_WRITE, 0);
	/* the WRITE flag of the indirect descriptor itself is ignored */
	set_desc(&drv.desc[5], TABLE_GPA, 3 * 16,
		 VRING_DESC_F_INDIRECT | VRING_DESC_F_WRITE, 0);
	make_avail(5);
	expect_pop(&chain, 5);
	assert_int_equal(chain.nr_out, 1);
	assert_int_equal(chain.nr_in, 2);
	assert_int_equal(chain.out_len, 16);
	assert_int_equal(chain.in_len, 101);
	assert_ptr_equal(chain.in[1].hva, gpa_to_host(DATA_GPA + 116));
}

/* Spec 2.7.5.3.2: direct descriptors followed by one indirect. */
static void test_indirect_after_direct(void **state)
{
	struct virtq_chain chain;
	unsigned int i;

	drv_start(16, false, true);
	for (i = 0; i < 15; i++)
		set_desc(&drv.desc[i], DATA_GPA, 8, VRING_DESC_F_NEXT, i + 1);
	for (i = 0; i < 16; i++)
		write_indirect(TABLE_GPA, i, DATA_GPA + 64, 4,
			       VRING_DESC_F_WRITE |
			       (i < 15 ? VRING_DESC_F_NEXT : 0), i + 1);
	set_desc(&drv.desc[15], TABLE_GPA, 16 * 16, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_pop(&chain, 0);
	assert_int_equal(chain.nr_out, 15);
	assert_int_equal(chain.nr_in, 16);
	assert_int_equal(chain.out_len, 15 * 8);
	assert_int_equal(chain.in_len, 16 * 4);
	assert_true(chain.nr_out + chain.nr_in <= drv.vq.max_chain);
}

/* ---- hostile rings ---- */

static void test_head_out_of_range(void **state)
{
	make_avail(16);
	expect_error(VIRTQ_ERR_DESC_INDEX);
}

static void test_next_out_of_range(void **state)
{
	set_desc(&drv.desc[0], DATA_GPA, 8, VRING_DESC_F_NEXT, 16);
	make_avail(0);
	expect_error(VIRTQ_ERR_DESC_INDEX);
}

static void test_two_desc_loop(void **state)
{
	set_desc(&drv.desc[0], DATA_GPA, 8, VRING_DESC_F_NEXT, 1);
	set_desc(&drv.desc[1], DATA_GPA, 8, VRING_DESC_F_NEXT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_LOOP);
}

static void test_self_loop(void **state)
{
	set_desc(&drv.desc[3], DATA_GPA, 8, VRING_DESC_F_NEXT, 3);
	make_avail(3);
	expect_error(VIRTQ_ERR_LOOP);
}

static void test_chain_of_size(void **state)
{
	struct virtq_chain chain;

	add_chain(8, 8, 16);
	expect_pop(&chain, 0);
	assert_int_equal(chain.nr_out, 8);
	assert_int_equal(chain.nr_in, 8);
	assert_int_equal(chain.in_len, 8 * 16);
}

static void test_chain_of_size_plus_one(void **state)
{
	unsigned int i;

	/* every descriptor once, and then the first one again */
	for (i = 0; i < 16; i++)
		set_desc(&drv.desc[i], DATA_GPA, 8, VRING_DESC_F_NEXT,
			 (i + 1) % 16);
	make_avail(0);
	expect_error(VIRTQ_ERR_LOOP);
}

static void test_buffer_past_ram(void **state)
{
	set_desc(&drv.desc[0], RAM2_GPA + RAM2_SIZE - 8, 16, 0, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

static void test_buffer_below_ram(void **state)
{
	set_desc(&drv.desc[0], RAM_GPA - 8, 16, 0, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

static void test_buffer_addr_overflow(void **state)
{
	set_desc(&drv.desc[0], UINT64_MAX - 4, 16, VRING_DESC_F_WRITE, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

/* Contiguous in the guest, two separate host allocations: refused. */
static void test_buffer_spanning_regions(void **state)
{
	set_desc(&drv.desc[0], RAM2_GPA - 8, 16, 0, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

static void test_indirect_not_negotiated(void **state)
{
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, 0, 0);
	set_desc(&drv.desc[0], TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_INDIRECT);
}

static void indirect_len_case(uint32_t len, enum virtq_error err)
{
	unsigned int i;

	drv_start(16, false, true);
	for (i = 0; i < 17; i++)
		write_indirect(TABLE_GPA, i, DATA_GPA, 16, 0, 0);
	set_desc(&drv.desc[0], TABLE_GPA, len, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	if (err == VIRTQ_OK) {
		struct virtq_chain chain;

		expect_pop(&chain, 0);
		return;
	}
	expect_error(err);
}

static void test_indirect_bad_len(void **state)
{
	indirect_len_case(0, VIRTQ_ERR_INDIRECT);
	indirect_len_case(24, VIRTQ_ERR_INDIRECT);
	indirect_len_case(15, VIRTQ_ERR_INDIRECT);
	indirect_len_case(17 * 16, VIRTQ_ERR_INDIRECT);
	indirect_len_case(16 * 16, VIRTQ_OK);		/* size entries: fine */
	indirect_len_case(16, VIRTQ_OK);
}

static void test_indirect_table_outside_ram(void **state)
{
	drv_start(16, false, true);
	set_desc(&drv.desc[0], RAM2_GPA + RAM2_SIZE - 16, 32,
		 VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_BUF_ADDR);
}

static void test_indirect_nested(void **state)
{
	drv_start(16, false, true);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 1);
	write_indirect(TABLE_GPA, 1, TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0);
	set_desc(&drv.desc[0], TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_INDIRECT);
}

static void test_indirect_with_next(void **state)
{
	drv_start(16, false, true);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, 0, 0);
	set_desc(&drv.desc[0], TABLE_GPA, 16,
		 VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	set_desc(&drv.desc[1], DATA_GPA, 16, 0, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_INDIRECT);
}

static void test_indirect_next_outside_table(void **state)
{
	drv_start(16, false, true);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 1);
	write_indirect(TABLE_GPA, 1, DATA_GPA, 16, VRING_DESC_F_NEXT, 2);
	write_indirect(TABLE_GPA, 2, DATA_GPA, 16, 0, 0);	/* not in it */
	set_desc(&drv.desc[0], TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_INDIRECT);
}

static void test_indirect_loop(void **state)
{
	drv_start(16, false, true);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 1);
	write_indirect(TABLE_GPA, 1, DATA_GPA, 16, VRING_DESC_F_NEXT, 0);
	set_desc(&drv.desc[0], TABLE_GPA, 32, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_LOOP);
}

static void test_writable_then_readable(void **state)
{
	set_desc(&drv.desc[0], DATA_GPA, 8,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(&drv.desc[1], DATA_GPA, 8, 0, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_ORDER);
}

static void test_order_across_indirect(void **state)
{
	drv_start(16, false, true);
	set_desc(&drv.desc[0], DATA_GPA, 8,
		 VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	write_indirect(TABLE_GPA, 0, DATA_GPA, 16, 0, 0);
	set_desc(&drv.desc[1], TABLE_GPA, 16, VRING_DESC_F_INDIRECT, 0);
	make_avail(0);
	expect_error(VIRTQ_ERR_ORDER);
}

static void test_avail_idx_jump(void **state)
{
	struct virtq_chain chain;
	unsigned int i;

	/* exactly size outstanding is fine */
	for (i = 0; i < 16; i++)
		add_chain(1, 0, 8);
	expect_pop(&chain, 0);
	/* 17 ahead of us, one more than the ring can hold: a lie */
	drv.avail_idx += 2;
	drv.avail->idx = htole16(drv.avail_idx);
	expect_error(VIRTQ_ERR_AVAIL_IDX);
}

static void test_avail_idx_backwards(void **state)
{
	struct virtq_chain chain;

	add_chain(1, 0, 8);
	expect_pop(&chain, 0);
	drv.avail->idx = htole16(0);	/* 65535 chains ahead, as we see it */
	expect_error(VIRTQ_ERR_AVAIL_IDX);
}

/* The same gigabyte of guest memory, listed again and again. */
static void big_chain(unsigned int nr, uint16_t flags)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		set_desc(&drv.desc[i], BIG_GPA, BIG_SIZE,
			 flags | (i + 1 < nr ? VRING_DESC_F_NEXT : 0), i + 1);
	make_avail(0);
}

static void test_total_len_overflow(void **state)
{
	struct virtq_chain chain;

	big_chain(3, 0);
	expect_pop(&chain, 0);
	assert_int_equal(chain.out_len, 3 * GiB);

	drv_start(16, false, false);
	big_chain(4, VRING_DESC_F_WRITE);		/* exactly 4 GiB */
	expect_error(VIRTQ_ERR_TOO_BIG);

	drv_start(16, false, false);
	big_chain(5, 0);
	expect_error(VIRTQ_ERR_TOO_BIG);
}

static void expect_init_error(uint16_t size, uint64_t desc, uint64_t avail,
			      uint64_t used, enum virtq_error err)
{
	struct virtq vq;
	struct virtq_chain chain;

	assert_int_equal(virtq_init(&vq, &drv.mem, size, desc, avail, used,
				    true, true), -1);
	assert_int_equal(vq.error, err);
	assert_int_equal(virtq_pop(&vq, &chain), -1);
	assert_false(virtq_has_avail(&vq));
	virtq_push(&vq, 0, 0);
	assert_false(virtq_publish(&vq));
	virtq_enable_notify(&vq, true);
	virtq_exit(&vq);
}

static void test_init_errors(void **state)
{
	const uint64_t d = RAM_GPA + DESC_OFF, a = RAM_GPA + AVAIL_OFF;
	const uint64_t u = RAM_GPA + USED_OFF, end = RAM2_GPA + RAM2_SIZE;

	drv_stop();
	expect_init_error(0, d, a, u, VIRTQ_ERR_SIZE);
	expect_init_error(3, d, a, u, VIRTQ_ERR_SIZE);
	expect_init_error(48, d, a, u, VIRTQ_ERR_SIZE);
	expect_init_error(65535, d, a, u, VIRTQ_ERR_SIZE);
	expect_init_error(16, d + 8, a, u, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, d, a + 1, u, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, d, a, u + 2, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, 0, a, u, VIRTQ_ERR_RING_ADDR);
	/*
	 * Parts that start in RAM and run off its end; for avail and used,
	 * only used_event / avail_event (the last 2 bytes) stick out.
	 */
	expect_init_error(16, end - 16 * 16 + 16, a, u, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, d, end - 4 - 2 * 16, u, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, d, a, end - 4 - 8 * 16, VIRTQ_ERR_RING_ADDR);
	expect_init_error(16, UINT64_MAX - 15, a, u, VIRTQ_ERR_RING_ADDR);
}

static void init_ok(uint64_t desc, uint64_t avail, uint64_t used)
{
	struct virtq vq;

	assert_int_equal(virtq_init(&vq, &drv.mem, 16, desc, avail, used,
				    false, false), 0);
	virtq_exit(&vq);
}

static void test_init_limits(void **state)
{
	const uint64_t end = RAM2_GPA + RAM2_SIZE;
	struct virtq_chain chain;

	drv_start(VIRTQ_MAX_SIZE, true, true);
	assert_int_equal(drv.vq.max_chain, 2 * VIRTQ_MAX_SIZE - 1);
	add_chain(1, 1, 4096);
	expect_pop(&chain, 0);
	drv_start(1, false, false);
	add_chain(0, 1, 4096);
	expect_pop(&chain, 0);
	virtq_push(&drv.vq, 0, 1);
	assert_true(virtq_publish(&drv.vq));
	drv_stop();

	/* each part ending as late as it can in the second region */
	init_ok(end - 16 * 16, RAM_GPA + AVAIL_OFF, RAM_GPA + USED_OFF);
	init_ok(RAM_GPA + DESC_OFF, end - 6 - 2 * 16, RAM_GPA + USED_OFF);
	init_ok(RAM_GPA + DESC_OFF, RAM_GPA + AVAIL_OFF, end - 8 - 8 * 16);
}

static void test_reinit_resets(void **state)
{
	struct virtq_chain chain;

	add_chain(1, 0, 8);
	expect_pop(&chain, 0);
	virtq_push(&drv.vq, 0, 0);
	assert_true(virtq_publish(&drv.vq));
	/* a reset: the driver zeroes its side and enables the queue again */
	drv_start(16, false, false);
	assert_int_equal(drv.vq.last_avail, 0);
	assert_int_equal(used_idx(), 0);
	add_chain(1, 0, 8);
	expect_pop(&chain, 0);
}

static void test_error_names(void **state)
{
	unsigned int i, j;

	for (i = 0; i < VIRTQ_ERR_COUNT; i++) {
		assert_non_null(virtq_error_name(i));
		assert_string_not_equal(virtq_error_name(i), "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(virtq_error_name(i),
						virtq_error_name(j));
	}
	assert_string_equal(virtq_error_name(VIRTQ_ERR_COUNT), "unknown");
	assert_string_equal(virtq_error_name(-1), "unknown");
}

/* ---- random rings ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the printed seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static bool host_range_in_ram(const void *p, uint32_t len)
{
	unsigned int i;

	for (i = 0; i < drv.mem.nr_regions; i++) {
		const struct guest_mem_region *r = &drv.mem.regions[i];
		uintptr_t start = (uintptr_t)r->hva, q = (uintptr_t)p;

		if (q >= start && q <= start + r->size &&
		    len <= start + r->size - q)
			return true;
	}
	return false;
}

/* Mostly plausible values, so that chains get past the first check. */
static uint64_t random_addr(void)
{
	switch (rnd() % 8) {
	case 0:
		return rnd();
	case 1:
		return RAM2_GPA + rnd() % (RAM2_SIZE + 64) - 32;
	case 2:
		return TABLE_GPA + rnd() % 64 * 16;
	default:
		return DATA_GPA + rnd() % (RAM_SIZE - DATA_OFF);
	}
}

static void random_desc(struct vring_desc *d, uint16_t size)
{
	uint32_t len;

	switch (rnd() % 8) {
	case 0:
		len = rnd();
		break;
	case 1:
		len = rnd() % 4 * 16 + rnd() % 2 * (rnd() % 16);
		break;
	default:
		len = rnd() % 4096;
		break;
	}
	if (rnd() % 16 == 0) {
		uint64_t raw[2] = { rnd(), rnd() };

		memcpy(d, raw, sizeof(*d));
		return;
	}
	set_desc(d, random_addr(), len, rnd() % (rnd() % 4 ? 4 : 8),
		 rnd() % 8 ? rnd() % size : rnd());
}

static void random_round(void)
{
	uint16_t size = 1U << (rnd() % 9), pending, pushes = 0;
	struct virtq_chain chain;
	unsigned int i, pops = 0;
	int ret;

	drv_start(size, rnd() % 2, rnd() % 2);
	for (i = 0; i < size; i++)
		random_desc(&drv.desc[i], size);
	for (i = 0; i < 64; i++)
		random_desc((struct vring_desc *)gpa_to_host(TABLE_GPA) + i,
			    rnd() % 2 ? size : 64);
	for (i = 0; i <= size; i++)
		drv.avail->ring[i] = rnd() % 8 ? rnd() % size : rnd();
	drv.avail->flags = rnd();
	pending = rnd() % 4 ? rnd() % (size + 1) : rnd();
	drv.avail->idx = htole16(pending);

	while ((ret = virtq_pop(&drv.vq, &chain)) == 1) {
		uint32_t out = 0, in = 0;

		pops++;
		assert_true(pops <= pending);
		assert_true(chain.head < size);
		assert_true(chain.nr_out + chain.nr_in <= drv.vq.max_chain);
		assert_ptr_equal(chain.in, chain.out + chain.nr_out);
		for (i = 0; i < chain.nr_out; i++) {
			assert_true(host_range_in_ram(chain.out[i].hva,
						      chain.out[i].len));
			out += chain.out[i].len;
		}
		for (i = 0; i < chain.nr_in; i++) {
			assert_true(host_range_in_ram(chain.in[i].hva,
						      chain.in[i].len));
			in += chain.in[i].len;
		}
		assert_int_equal(out, chain.out_len);
		assert_int_equal(in, chain.in_len);
		if (rnd() % 2) {
			virtq_push(&drv.vq, chain.head,
				   chain.in_len ? rnd() % chain.in_len : 0);
			pushes++;
		}
		if (rnd() % 4 == 0)
			virtq_publish(&drv.vq);
	}
	assert_true(ret == 0 || ret == -1);
	if (ret == 0) {
		assert_int_equal(pops, pending);
		assert_int_equal(drv.vq.error, VIRTQ_OK);
	} else {
		assert_int_not_equal(drv.vq.error, VIRTQ_OK);
		assert_int_equal(virtq_pop(&drv.vq, &chain), -1);
	}
	virtq_publish(&drv.vq);
	assert_int_equal(used_idx(), pushes);
}

static void test_random_rings(void **state)
{
	const char *env = getenv("RING_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed1e55;
	unsigned int i;

	print_message("random rings: seed %#llx (RING_SEED=...)\n",
		      (unsigned long long)seed);
	rng_state = seed | 1;
	for (i = 0; i < 20000; i++)
		random_round();
}

#define T(fn)	cmocka_unit_test_setup_teardown(fn, test_setup, test_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_simple_chain),
		T(test_many_chains),
		T(test_full_ring),
		T(test_index_wrap),
		T(test_batching),
		T(test_no_interrupt_flag),
		T(test_event_idx_interrupts),
		T(test_enable_notify_flags),
		T(test_enable_notify_event_idx),
		T(test_zero_length),
		T(test_buffer_in_second_region),
		T(test_indirect),
		T(test_indirect_after_direct),
		T(test_head_out_of_range),
		T(test_next_out_of_range),
		T(test_two_desc_loop),
		T(test_self_loop),
		T(test_chain_of_size),
		T(test_chain_of_size_plus_one),
		T(test_buffer_past_ram),
		T(test_buffer_below_ram),
		T(test_buffer_addr_overflow),
		T(test_buffer_spanning_regions),
		T(test_indirect_not_negotiated),
		T(test_indirect_bad_len),
		T(test_indirect_table_outside_ram),
		T(test_indirect_nested),
		T(test_indirect_with_next),
		T(test_indirect_next_outside_table),
		T(test_indirect_loop),
		T(test_writable_then_readable),
		T(test_order_across_indirect),
		T(test_avail_idx_jump),
		T(test_avail_idx_backwards),
		T(test_total_len_overflow),
		T(test_init_errors),
		T(test_init_limits),
		T(test_reinit_resets),
		T(test_error_names),
		T(test_random_rings),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
