// SPDX-License-Identifier: GPL-2.0
/*
 * Virtqueue polling (virtio/poll.c): the --poll option; the per-queue mode
 * and window on a clock of the test's own; the hand-back from polling to
 * kicks, where a chain the driver posts just before kicks come back on
 * must still be served without one; and lkvm's virtio-blk on its own I/O
 * thread, driven from this thread (tests/bench/ring_driver.c) through
 * thousands of mode switches, every request checked: its data, and that
 * it came back exactly once.
 */
#include <errno.h>
#include <linux/virtio_blk.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/guest_mem.h"
#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/poll.h"
#include "blk_rig.h"

#define US		1000ULL
#define MS		1000000ULL

/* ---- the option ---- */

static void test_parse_modes_and_settings(void **state)
{
	struct virtio_poll_config c;

	virtio_poll_config_default(&c);
	assert_int_equal(c.mode, VIRTIO_POLL_AUTO);
	assert_int_equal(virtio_poll_parse("off", &c), 0);
	assert_int_equal(c.mode, VIRTIO_POLL_OFF);
	assert_int_equal(virtio_poll_parse("on,max_us=50,start_rate=20,stop_idle_ms=7",
					   &c), 0);
	assert_int_equal(c.mode, VIRTIO_POLL_ON);
	assert_int_equal(c.max_us, 50);
	assert_int_equal(c.start_rate, 20);
	assert_int_equal(c.stop_idle_ms, 7);
	/* settings alone keep the mode */
	assert_int_equal(virtio_poll_parse("max_us=8", &c), 0);
	assert_int_equal(c.mode, VIRTIO_POLL_ON);
	assert_int_equal(c.max_us, 8);
}

static void test_parse_rejects_junk(void **state)
{
	static const char *const bad[] = {
		"", "fast", "on,", "on,max_us=0", "on,max_us=x", "on,max_us=",
		"on,max_us=10001", "auto,start_rate=-1", "auto,foo=1",
		"auto,on", "on,max_us=99999999999999999999",
	};
	struct virtio_poll_config c;
	unsigned int i;

	log_threshold = LOG_SILENT;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		virtio_poll_config_default(&c);
		assert_int_equal(virtio_poll_parse(bad[i], &c), -1);
	}
	log_threshold = LOG_WARN;
}

/* ---- the policy, on a clock of our own ---- */

static struct virtio_poll_config cfg_of(enum virtio_poll_mode mode)
{
	struct virtio_poll_config c;

	virtio_poll_config_default(&c);
	c.mode = mode;
	c.max_us = 32;
	c.start_rate = 1000;		/* 10 kicks in 10 ms */
	c.stop_idle_ms = 100;
	return c;
}

static void test_auto_starts_at_the_kick_rate(void **state)
{
	struct virtio_poll_config c = cfg_of(VIRTIO_POLL_AUTO);
	struct virtio_queue_poll vp = { 0 };
	uint64_t t = 1000 * MS;
	unsigned int i;

	/* 9 kicks in a 10 ms period: not yet; the 10th does it */
	for (i = 0; i < 9; i++)
		virtio_poll_account_kick(&c, &vp, 1, 1, t + i * MS);
	assert_false(vp.polling);
	/* a new period starts the count again */
	virtio_poll_account_kick(&c, &vp, 1, 1, t + 20 * MS);
	assert_false(vp.polling);
	virtio_poll_account_kick(&c, &vp, 9, 1, t + 21 * MS);
	assert_true(vp.polling);
	assert_int_equal(vp.switches, 1);
	assert_int_equal(vp.window_ns, 4 * US);
}

static void enter_auto(const struct virtio_poll_config *c,
		       struct virtio_queue_poll *vp, uint64_t t)
{
	virtio_poll_account_kick(c, vp, 10, 1, t);
	assert_true(vp->polling);
}

static void test_window_grows_on_near_misses(void **state)
{
	struct virtio_poll_config c = cfg_of(VIRTIO_POLL_AUTO);
	struct virtio_queue_poll vp = { 0 };
	uint64_t t = 1000 * MS;
	static const uint64_t want[] = { 8, 16, 32, 32 };
	unsigned int i;

	enter_auto(&c, &vp, t);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		/* work at t, the next kick 40 us later: past the window,
		 * within twice the cap */
		vp.last_active_ns = t;
		t += 40 * US;
		virtio_poll_account_kick(&c, &vp, 1, 1, t);
		assert_int_equal(vp.window_ns, want[i] * US);
	}
	/* a kick the window would have caught changes nothing */
	vp.last_active_ns = t;
	virtio_poll_account_kick(&c, &vp, 1, 1, t + 20 * US);
	assert_int_equal(vp.window_ns, 32 * US);
}

static void test_window_halves_on_long_waits(void **state)
{
	struct virtio_poll_config c = cfg_of(VIRTIO_POLL_AUTO);
	struct virtio_queue_poll vp = { 0 };
	uint64_t t = 1000 * MS;
	static const uint64_t want[] = { 16, 8, 4, 0, 0 };
	unsigned int i;

	enter_auto(&c, &vp, t);
	vp.window_ns = 32 * US;
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		vp.last_active_ns = t;
		t += 500 * US;		/* > 2 x 32 us, < stop_idle */
		virtio_poll_account_kick(&c, &vp, 1, 1, t);
		assert_int_equal(vp.window_ns, want[i] * US);
		assert_true(vp.polling);
	}
	/* and near misses bring it back */
	vp.last_active_ns = t;
	virtio_poll_account_kick(&c, &vp, 1, 1, t + 50 * US);
	assert_int_equal(vp.window_ns, 4 * US);
}

/* A driver that kicks once for a batch it posted over the gap. */
static void test_batched_kick_is_a_near_miss(void **state)
{
	struct virtio_poll_config c = cfg_of(VIRTIO_POLL_AUTO);
	struct virtio_queue_poll vp = { 0 };
	uint64_t t = 1000 * MS;

	enter_auto(&c, &vp, t);
	vp.window_ns = 8 * US;
	/* 400 us after the last work, one chain: a long wait, halve */
	vp.last_active_ns = t;
	virtio_poll_account_kick(&c, &vp, 1, 1, t + 400 * US);
	assert_int_equal(vp.window_ns, 4 * US);
	/* the same wait with 16 chains waiting: the first came ~25 us in */
	t += 400 * US;
	vp.last_active_ns = t;
	virtio_poll_account_kick(&c, &vp, 1, 16, t + 400 * US);
	assert_int_equal(vp.window_ns, 8 * US);
}

static void test_idle_queue_goes_back_to_kicks(void **state)
{
	struct virtio_poll_config c = cfg_of(VIRTIO_POLL_AUTO);
	struct virtio_queue_poll vp = { 0 };
	uint64_t t = 1000 * MS;

	enter_auto(&c, &vp, t);
	vp.last_active_ns = t + 5 * MS;
	/* a lone kick after stop_idle_ms: notify mode, counted from when
	 * the queue went idle, not from the kick */
	virtio_poll_account_kick(&c, &vp, 1, 1, t + 400 * MS);
	assert_false(vp.polling);
	assert_int_equal(vp.switches, 2);
	assert_int_equal(vp.poll_ns, 105 * MS);
	/* a burst brings it back */
	virtio_poll_account_kick(&c, &vp, 10, 1, t + 401 * MS);
	assert_true(vp.polling);
	assert_int_equal(vp.switches, 3);
}

static void test_on_and_off(void **state)
{
	struct virtio_poll_config on = cfg_of(VIRTIO_POLL_ON);
	struct virtio_poll_config off = cfg_of(VIRTIO_POLL_OFF);
	struct virtio_queue_poll vp = { 0 }, vp_off = { 0 };
	uint64_t t = 1000 * MS;

	virtio_poll_account_kick(&on, &vp, 1, 1, t);
	assert_true(vp.polling);
	assert_int_equal(vp.window_ns, 32 * US);
	/* fixed: neither long waits nor idle time change it */
	vp.last_active_ns = t;
	virtio_poll_account_kick(&on, &vp, 1, 1, t + 10 * 1000 * MS);
	assert_true(vp.polling);
	assert_int_equal(vp.window_ns, 32 * US);
	virtio_poll_account_kick(&off, &vp_off, 1000, 1, t);
	assert_false(vp_off.polling);
	assert_int_equal(vp_off.switches, 0);
}

/* ---- the hand-back to kicks, on one thread ---- */

#define RAM_GPA		0x10000ULL
#define RAM_SIZE	(256 * 1024)
#define QSIZE		8
#define DESC_GPA	RAM_GPA
#define AVAIL_GPA	(RAM_GPA + 0x1000)
#define USED_GPA	(RAM_GPA + 0x2000)
#define DATA_GPA	(RAM_GPA + 0x4000)

struct ring_fixture {
	struct guest_mem mem;
	uint8_t *ram;
	struct virtio_device vdev;
	struct virtio_queue *q;
	uint16_t avail_idx;
	unsigned int handled;
};

static enum virtio_chain_result handle(struct virtio_queue *q,
				       const struct virtq_chain *c,
				       void *opaque, uint32_t *written)
{
	struct ring_fixture *f = opaque;

	f->handled++;
	*written = 1;
	return VIRTIO_CHAIN_USED;
}

static void serve_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	virtio_queue_serve(vdev, q, handle, vdev->priv);
}

static void no_signal(struct virtio_transport *t, struct virtio_queue *q)
{
}

static void no_config_signal(struct virtio_transport *t)
{
}

static const struct virtio_transport_ops quiet_ops = {
	.signal_queue = no_signal,
	.signal_config = no_config_signal,
};
static struct virtio_transport quiet_transport = { .ops = &quiet_ops };

static const struct virtio_device_ops ring_ops = {
	.name = "test", .queue_kick = serve_kick,
};

static void *ring_host(struct ring_fixture *f, uint64_t gpa)
{
	return guest_mem_ptr(&f->mem, gpa, 1);
}

static void ring_post(struct ring_fixture *f)
{
	struct vring_desc *desc = ring_host(f, DESC_GPA);
	struct vring_avail *avail = ring_host(f, AVAIL_GPA);
	uint16_t slot = f->avail_idx % QSIZE;

	desc[slot] = (struct vring_desc) {
		.addr = DATA_GPA + slot * 64, .len = 64,
		.flags = VRING_DESC_F_WRITE,
	};
	avail->ring[slot] = slot;
	__atomic_store_n(&avail->idx, ++f->avail_idx, __ATOMIC_RELEASE);
}

static uint16_t ring_used_idx(struct ring_fixture *f)
{
	return ((struct vring_used *)ring_host(f, USED_GPA))->idx;
}

static uint16_t ring_used_flags(struct ring_fixture *f)
{
	return ((struct vring_used *)ring_host(f, USED_GPA))->flags;
}

static int ring_setup(void **state)
{
	struct ring_fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->ram = aligned_alloc(4096, RAM_SIZE);
	assert_non_null(f->ram);
	memset(f->ram, 0, RAM_SIZE);
	assert_int_equal(guest_mem_add(&f->mem, RAM_GPA, RAM_SIZE, f->ram), 0);
	f->vdev.ops = &ring_ops;
	f->vdev.priv = f;
	virtio_device_attach(&f->vdev, &quiet_transport);
	f->q = &f->vdev.queues[0];
	f->q->vdev = &f->vdev;
	pthread_mutex_init(&f->q->lock, NULL);
	virtio_poll_init(f->q);
	assert_int_equal(virtq_init(&f->q->ring, &f->mem, QSIZE, DESC_GPA,
				    AVAIL_GPA, USED_GPA, false, false), 0);
	f->q->live = true;
	/* as a poll-mode pass leaves it: kicks off, the thread polling */
	virtq_enable_notify(&f->q->ring, false);
	f->q->poll.polled = true;
	*state = f;
	return 0;
}

static int ring_teardown(void **state)
{
	struct ring_fixture *f = *state;

	virtq_exit(&f->q->ring);
	free(f->ram);
	free(f);
	return 0;
}

static void test_chain_posted_as_polling_stops_is_served(void **state)
{
	struct ring_fixture *f = *state;
	struct io_poller *p = &f->q->poll.poller;

	/* kicks are off: the driver posts and does not kick */
	assert_int_equal(ring_used_flags(f), VRING_USED_F_NO_NOTIFY);
	ring_post(f);
	/* the window ends: the look after kicks come back finds the chain,
	 * so the thread polls on with kicks off again */
	assert_true(p->stop(p));
	assert_int_equal(ring_used_flags(f), VRING_USED_F_NO_NOTIFY);
	assert_true(f->q->poll.polled);
	/* and serves it, no kick needed */
	assert_int_not_equal(p->poll(p), IO_POLL_IDLE);
	assert_int_equal(f->handled, 1);
	assert_int_equal(ring_used_idx(f), 1);
	assert_int_equal(f->q->poll.hits, 1);
}

static void test_empty_ring_turns_kicks_back_on(void **state)
{
	struct ring_fixture *f = *state;
	struct io_poller *p = &f->q->poll.poller;

	assert_int_equal(p->poll(p), IO_POLL_IDLE);
	assert_int_equal(f->q->poll.misses, 1);
	assert_false(p->stop(p));
	assert_false(f->q->poll.polled);
	assert_int_equal(ring_used_flags(f), 0);
	/* no longer polled: the thread drops it */
	assert_int_equal(p->poll(p), IO_POLL_GONE);
}

static void ignore_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
}

static const struct virtio_device_ops ignoring_ops = {
	.name = "test", .queue_kick = ignore_kick,
};

/*
 * A handler that does not reach the serve loop (a net queue whose role
 * the driver changed under it) ends the polling, kicks back on: the ring
 * is not empty and nobody consumes it, so polling on would spin forever.
 */
static void test_handler_that_does_not_serve_ends_polling(void **state)
{
	struct ring_fixture *f = *state;
	struct io_poller *p = &f->q->poll.poller;

	f->vdev.ops = &ignoring_ops;
	ring_post(f);
	assert_int_equal(p->poll(p), IO_POLL_GONE);
	assert_false(f->q->poll.polled);
	assert_int_equal(ring_used_flags(f), 0);
	assert_int_equal(f->q->poll.hits, 0);
}

static void test_stopped_queue_is_dropped(void **state)
{
	struct ring_fixture *f = *state;
	struct io_poller *p = &f->q->poll.poller;

	ring_post(f);
	f->q->live = false;	/* a reset got in first */
	assert_int_equal(p->poll(p), IO_POLL_GONE);
	assert_false(p->stop(p));
	assert_int_equal(f->handled, 0);
}

/* ---- virtio-blk on its I/O thread, every request checked ---- */

#define BLK_BLOCKS	1024		/* 4 MiB image */
#define BLK_BS		4096
#define BLK_QD		16
#define HDR_OFF		RING_AREA
#define STATUS_OFF	(HDR_OFF + 0x1000)
#define DATA_OFF	(HDR_OFF + 0x2000)
#define BLK_MEM		(DATA_OFF + 16 * 65536)
#define GUARD_MS	5000

struct blk_fixture {
	struct blk_rig rig;
	uint64_t seed;
	uint32_t bs;			/* bytes a request reads */
	uint32_t block[BLK_QD];		/* what slot i asked for */
	uint64_t done, dupes, bad;
	/* the queue's counters, kept when the device goes */
	uint64_t requests;
	struct virtio_queue_poll poll;
};

static uint64_t rnd(struct blk_fixture *f)
{
	f->seed ^= f->seed << 13;
	f->seed ^= f->seed >> 7;
	f->seed ^= f->seed << 17;
	return f->seed;
}

static void blk_start(struct blk_fixture *f,
		      const struct virtio_poll_config *poll, bool event_idx,
		      uint32_t bs)
{
	f->seed = 0x9e3779b97f4a7c15ULL;
	f->bs = bs;
	blk_rig_start(&f->rig, BLK_BLOCKS, BLK_MEM, poll,
		      event_idx ? 1u << VIRTIO_RING_F_EVENT_IDX : 0, GUARD_MS);
}

static void blk_stop(struct blk_fixture *f)
{
	f->requests = f->rig.q->requests;
	f->poll = f->rig.q->poll;
	blk_rig_stop(&f->rig);
}

/* Slot i reads a random run of bs bytes into its own buffer. */
static void blk_post(struct blk_fixture *f, unsigned int i)
{
	struct ring_driver *rd = &f->rig.rd;
	struct virtio_blk_outhdr *hdr = (void *)(rd->mem + HDR_OFF + i * 16);
	uint16_t head = i * 3;

	f->block[i] = rnd(f) % (BLK_BLOCKS - f->bs / BLK_BS + 1);
	*hdr = (struct virtio_blk_outhdr) {
		.type = VIRTIO_BLK_T_IN, .sector = f->block[i] * (BLK_BS / 512),
	};
	rd->mem[STATUS_OFF + i] = 0xff;
	memset(rd->mem + DATA_OFF + (size_t)i * 65536, 0xee, f->bs);
	rd->desc[head] = (struct vring_desc) {
		.addr = ring_gpa(HDR_OFF + i * 16), .len = 16,
		.flags = VRING_DESC_F_NEXT, .next = head + 1,
	};
	rd->desc[head + 1] = (struct vring_desc) {
		.addr = ring_gpa(DATA_OFF + (size_t)i * 65536), .len = f->bs,
		.flags = VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, .next = head + 2,
	};
	rd->desc[head + 2] = (struct vring_desc) {
		.addr = ring_gpa(STATUS_OFF + i), .len = 1,
		.flags = VRING_DESC_F_WRITE,
	};
	ring_driver_add(rd, head);
}

/* Did slot i read what its blocks hold? */
static bool blk_check(struct blk_fixture *f, unsigned int i)
{
	const uint32_t *w = (const void *)(f->rig.rd.mem + DATA_OFF + (size_t)i * 65536);
	unsigned int k;

	if (f->rig.rd.mem[STATUS_OFF + i] != VIRTIO_BLK_S_OK)
		return false;
	for (k = 0; k < f->bs / 4; k++)
		if (w[k] != f->block[i] + k / (BLK_BS / 4))
			return false;
	return true;
}

/* Reap until `want` of our slots came back; counts each one once. */
static void blk_reap(struct blk_fixture *f, bool *busy, unsigned int want)
{
	struct ring_driver *rd = &f->rig.rd;
	unsigned int got = 0;
	uint64_t deadline = now_ns() + GUARD_MS * MS;

	while (got < want) {
		uint16_t used = __atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE);

		while (rd->last_used != used) {
			unsigned int id = rd->used->ring[rd->last_used % RING_QSIZE].id;
			unsigned int slot = id / 3;

			if (id % 3 || slot >= BLK_QD || !busy[slot]) {
				f->dupes++;
			} else {
				busy[slot] = false;
				f->bad += !blk_check(f, slot);
				f->done++;
				got++;
			}
			rd->last_used++;
		}
		if (got < want) {
			/* a lost request would end here */
			assert_true(now_ns() < deadline);
			ring_driver_wait(rd);
		}
	}
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Bursts of up to BLK_QD requests, posted one by one with short random
 * gaps (some within the window, some past it), then a pause: sometimes
 * long enough for the queue to fall back to kicks.
 */
static void blk_bursts(struct blk_fixture *f, unsigned int bursts,
		       unsigned int long_pause_us)
{
	bool busy[BLK_QD] = { false };
	unsigned int b, i;

	for (b = 0; b < bursts; b++) {
		unsigned int n = 1 + rnd(f) % BLK_QD;

		for (i = 0; i < n; i++) {
			uint16_t old = f->rig.rd.avail_idx;

			blk_post(f, i);
			busy[i] = true;
			ring_driver_publish(&f->rig.rd, old);
			if (rnd(f) % 4 == 0)
				sleep_us(rnd(f) % 80);
		}
		blk_reap(f, busy, n);
		if (b % 2)
			sleep_us(long_pause_us);
	}
}

static void test_blk_through_mode_switches(void **state)
{
	struct blk_fixture *f = calloc(1, sizeof(*f));
	struct virtio_poll_config poll = cfg_of(VIRTIO_POLL_AUTO);

	poll.start_rate = 100;		/* one kick in a period: poll */
	poll.stop_idle_ms = 1;
	blk_start(f, &poll, true, BLK_BS);
	blk_bursts(f, 3000, 1500);
	blk_stop(f);
	assert_int_equal(f->dupes, 0);
	assert_int_equal(f->bad, 0);
	assert_true(f->done >= 3000);
	assert_int_equal(f->requests, f->done);
	/* it did flip, thousands of times, and polling found work */
	assert_true(f->poll.switches >= 2000);
	assert_true(f->poll.hits > 0);
	free(f);
}

static void test_blk_polling_without_event_idx(void **state)
{
	struct blk_fixture *f = calloc(1, sizeof(*f));
	struct virtio_poll_config poll = cfg_of(VIRTIO_POLL_ON);

	poll.max_us = 200;
	blk_start(f, &poll, false, BLK_BS);
	blk_bursts(f, 600, 300);
	blk_stop(f);
	assert_int_equal(f->dupes, 0);
	assert_int_equal(f->bad, 0);
	assert_int_equal(f->requests, f->done);
	assert_true(f->poll.hits > 0);
	/* kicks off while it polled: fewer kicks than requests */
	assert_true(f->rig.rd.kicks < f->done);
	free(f);
}

/* 16 x 64 KiB in one pass is more than a turn's 512 KiB: the thread
 * comes back for the rest on its own, kicks off, polling or not. */
static void test_blk_budget_comes_back_for_the_rest(void **state)
{
	struct blk_fixture *f = calloc(1, sizeof(*f));
	struct virtio_poll_config poll = cfg_of(VIRTIO_POLL_OFF);
	bool busy[BLK_QD];
	unsigned int round, i;

	blk_start(f, &poll, true, 65536);
	for (round = 0; round < 50; round++) {
		uint16_t old = f->rig.rd.avail_idx;

		for (i = 0; i < BLK_QD; i++) {
			blk_post(f, i);
			busy[i] = true;
		}
		ring_driver_publish(&f->rig.rd, old);
		blk_reap(f, busy, BLK_QD);
	}
	blk_stop(f);
	assert_int_equal(f->dupes, 0);
	assert_int_equal(f->bad, 0);
	assert_int_equal(f->done, 50 * BLK_QD);
	/* off means no polling, but the rest of a spent turn is fetched */
	assert_int_equal(f->poll.switches, 0);
	assert_true(f->poll.hits >= 50);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_modes_and_settings),
		cmocka_unit_test(test_parse_rejects_junk),
		cmocka_unit_test(test_auto_starts_at_the_kick_rate),
		cmocka_unit_test(test_window_grows_on_near_misses),
		cmocka_unit_test(test_window_halves_on_long_waits),
		cmocka_unit_test(test_batched_kick_is_a_near_miss),
		cmocka_unit_test(test_idle_queue_goes_back_to_kicks),
		cmocka_unit_test(test_on_and_off),
		cmocka_unit_test_setup_teardown(
			test_chain_posted_as_polling_stops_is_served,
			ring_setup, ring_teardown),
		cmocka_unit_test_setup_teardown(
			test_empty_ring_turns_kicks_back_on,
			ring_setup, ring_teardown),
		cmocka_unit_test_setup_teardown(test_stopped_queue_is_dropped,
						ring_setup, ring_teardown),
		cmocka_unit_test_setup_teardown(
			test_handler_that_does_not_serve_ends_polling,
			ring_setup, ring_teardown),
		cmocka_unit_test(test_blk_through_mode_switches),
		cmocka_unit_test(test_blk_polling_without_event_idx),
		cmocka_unit_test(test_blk_budget_comes_back_for_the_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
