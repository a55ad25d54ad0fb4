// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net's receive path when the driver mixes buffers no frame fits
 * (here: readable instead of writable) in with good ones: each bad buffer
 * goes back empty exactly once, no buffer is used twice, and frames still
 * land whole, merged over the good buffers around the bad one; and a
 * backend whose other end closed is left alone, not read for ever. The
 * device runs on its own I/O thread (net_rig.c); frames come from the
 * socket pair's other end, as from a tap.
 */
#include <linux/virtio_net.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "../../virtio/net_internal.h"
#include "net_rig.h"

#define RXQ		0
#define HDR_LEN		12		/* virtio_net_hdr_mrg_rxbuf */
#define BUF_OFF		(4 * RING_AREA)
#define SLOT		4096
#define MEM_SIZE	(BUF_OFF + 16 * SLOT)
#define FRAME		60		/* bytes after the header */
#define GUARD_MS	5000
#define SETTLE_MS	200

static int setup(void **state)
{
	struct net_rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	net_rig_start(r, MEM_SIZE, 64 * 1024,
		      (1u << VIRTIO_RING_F_EVENT_IDX) |
		      (1u << VIRTIO_NET_F_MRG_RXBUF), GUARD_MS);
	ring_driver_use(&r->rd, RXQ);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct net_rig *r = *state;

	net_rig_stop(r);
	free(r);
	return 0;
}

/* Buffer `head` of len bytes at its slot: writable, or readable (bad). */
static void post(struct net_rig *r, uint16_t head, uint32_t len, bool bad)
{
	r->rd.desc[head] = (struct vring_desc) {
		.addr = ring_gpa(BUF_OFF + (size_t)head * SLOT), .len = len,
		.flags = bad ? 0 : VRING_DESC_F_WRITE,
	};
	ring_driver_add(&r->rd, head);
}

static void send_frame(struct net_rig *r, uint8_t fill)
{
	uint8_t buf[HDR_LEN + FRAME];

	memset(buf, 0, HDR_LEN);
	memset(buf + HDR_LEN, fill, FRAME);
	/* a broadcast frame: any receive filter takes it */
	memset(buf + HDR_LEN, 0xff, 6);
	assert_int_equal(write(r->peer, buf, sizeof(buf)), sizeof(buf));
}

static uint16_t used_idx(struct net_rig *r)
{
	return __atomic_load_n(&r->rd.used->idx, __ATOMIC_ACQUIRE);
}

/* used->idx once it has reached want and not moved for SETTLE_MS. */
static uint16_t settle(struct net_rig *r, uint16_t want)
{
	unsigned int waited = 0, still = 0;
	uint16_t last = used_idx(r);

	while ((last != want || still < SETTLE_MS) && waited < GUARD_MS) {
		usleep(5000);
		waited += 5;
		if (used_idx(r) == last) {
			still += 5;
		} else {
			last = used_idx(r);
			still = 0;
		}
	}
	return last;
}

static struct vring_used_elem used_elem(struct net_rig *r, unsigned int i)
{
	return r->rd.used->ring[i % RING_QSIZE];
}

static uint8_t *slot(struct net_rig *r, uint16_t head)
{
	return r->rd.mem + BUF_OFF + (size_t)head * SLOT;
}

static void test_bad_buffer_between_good_ones(void **state)
{
	struct net_rig *r = *state;
	uint16_t old = r->rd.avail_idx, nbufs;

	/* 64 bytes (too small for a frame), bad, then two roomy ones */
	post(r, 0, 64, false);
	post(r, 1, 512, true);
	post(r, 2, 2048, false);
	post(r, 3, 2048, false);
	ring_driver_publish(&r->rd, old);
	/* nothing to receive yet: the device looked and gave all back */
	usleep(SETTLE_MS * 1000);
	assert_int_equal(used_idx(r), 0);
	send_frame(r, 0xa1);
	send_frame(r, 0xb2);
	/* A over buffers 0 and 2, the bad one given back, B in 3 */
	assert_int_equal(settle(r, 4), 4);
	assert_int_equal(used_elem(r, 0).id, 0);
	assert_int_equal(used_elem(r, 0).len, 64);
	assert_int_equal(used_elem(r, 1).id, 2);
	assert_int_equal(used_elem(r, 1).len, HDR_LEN + FRAME - 64);
	assert_int_equal(used_elem(r, 2).id, 1);
	assert_int_equal(used_elem(r, 2).len, 0);
	assert_int_equal(used_elem(r, 3).id, 3);
	assert_int_equal(used_elem(r, 3).len, HDR_LEN + FRAME);
	memcpy(&nbufs, slot(r, 0) + 10, sizeof(nbufs));
	assert_int_equal(nbufs, 2);
	assert_int_equal(slot(r, 0)[63], 0xa1);
	assert_int_equal(slot(r, 2)[HDR_LEN + FRAME - 64 - 1], 0xa1);
	assert_int_equal(slot(r, 3)[HDR_LEN + FRAME - 1], 0xb2);
	assert_int_equal(r->net->pairs[0]->rx_bad_buffers, 1);
	assert_int_equal(r->net->pairs[0]->rx_dropped, 0);
}

/*
 * Bad buffers first and last: the first goes back as soon as the device
 * looks, the frame takes the good one, the last ones go back after it.
 */
static void test_bad_buffers_around_a_frame(void **state)
{
	struct net_rig *r = *state;
	uint16_t old = r->rd.avail_idx;
	static const uint32_t id[] = { 0, 1, 2, 3 };
	static const uint32_t len[] = { 0, HDR_LEN + FRAME, 0, 0 };
	unsigned int i;

	post(r, 0, 512, true);
	post(r, 1, 2048, false);
	post(r, 2, 512, true);
	post(r, 3, 512, true);
	ring_driver_publish(&r->rd, old);
	assert_int_equal(settle(r, 1), 1);
	send_frame(r, 0xc3);
	assert_int_equal(settle(r, 4), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(used_elem(r, i).id, id[i]);
		assert_int_equal(used_elem(r, i).len, len[i]);
	}
	assert_int_equal(slot(r, 1)[HDR_LEN + FRAME - 1], 0xc3);
	assert_int_equal(r->net->pairs[0]->rx_bad_buffers, 3);
}

/* The backend's other end goes: no frame, and no thread spinning on EOF. */
static void test_backend_eof(void **state)
{
	struct net_rig *r = *state;
	uint16_t old = r->rd.avail_idx;

	post(r, 0, 2048, false);
	ring_driver_publish(&r->rd, old);
	usleep(50000);
	close(r->peer);
	r->peer = -1;
	usleep(SETTLE_MS * 1000);
	assert_int_equal(used_idx(r), 0);
	assert_int_equal(r->net->pairs[0]->rx_dropped, 0);
	assert_false(__atomic_load_n(&r->net->pairs[0]->backend_watched,
				     __ATOMIC_ACQUIRE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_bad_buffer_between_good_ones, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_bad_buffers_around_a_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_eof, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
