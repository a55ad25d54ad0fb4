// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net's transmit path against a backend that runs out of room, as
 * the user-mode backend's socket does when its thread falls behind: the
 * device (virtio/net.c, on its own I/O thread) is driven from this thread
 * through a split ring (tests/bench/ring_driver.c), its backend is a
 * socket pair this test reads, or not. Frames must wait in the ring, not
 * be dropped, and go out in order once there is room. A fake VM (no KVM,
 * fake_vm.c) holds the ring driver's memory.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "lkvm/virtio/net.h"
#include "lkvm/vm.h"
#include "../../virtio/net_internal.h"
#include "net_rig.h"

#define TXQ		1
#define NR_FRAMES	200		/* many times what the socket holds */
#define FRAME_LEN	1514
#define SLOT		2048		/* each frame's place in guest memory */
#define DATA_OFF	(4 * RING_AREA)
#define MEM_SIZE	(DATA_OFF + NR_FRAMES * SLOT)
#define SETTLE_MS	100		/* the device idle this long: it waits */
#define GUARD_MS	5000

struct fixture {
	struct net_rig rig;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	net_rig_start(&f->rig, MEM_SIZE, 64 * 1024,
		      1u << VIRTIO_RING_F_EVENT_IDX, GUARD_MS);
	ring_driver_use(&f->rig.rd, TXQ);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	net_rig_stop(&f->rig);
	free(f);
	return 0;
}

/* Frame i: a header, then bytes that say i, at its own slot. */
static void post_frames(struct fixture *f, unsigned int n)
{
	struct ring_driver *rd = &f->rig.rd;
	uint16_t old = rd->avail_idx;
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t off = DATA_OFF + (size_t)i * SLOT;

		memset(rd->mem + off, 0, NET_HDR_LEN);
		memset(rd->mem + off + NET_HDR_LEN, (int)(i & 0xff), FRAME_LEN);
		memcpy(rd->mem + off + NET_HDR_LEN, &i, sizeof(i));
		rd->desc[i] = (struct vring_desc) {
			.addr = ring_gpa(off), .len = NET_HDR_LEN + FRAME_LEN,
		};
		ring_driver_add(rd, (uint16_t)i);
	}
	ring_driver_publish(rd, old);
}

static uint16_t used_idx(struct fixture *f)
{
	return __atomic_load_n(&f->rig.rd.used->idx, __ATOMIC_ACQUIRE);
}

/* used->idx once it has not moved for SETTLE_MS (or at the guard). */
static uint16_t settled_used(struct fixture *f)
{
	uint16_t last = used_idx(f);
	unsigned int still = 0, waited;

	for (waited = 0; still < SETTLE_MS && waited < GUARD_MS; waited += 5) {
		usleep(5000);
		if (used_idx(f) == last) {
			still += 5;
		} else {
			last = used_idx(f);
			still = 0;
		}
	}
	return last;
}

static bool tx_waiting(struct fixture *f)
{
	return __atomic_load_n(&f->rig.net->pairs[0]->tx_waiting, __ATOMIC_ACQUIRE);
}

/* Until the device says it waits for the backend (or the guard). */
static void wait_until_waiting(struct fixture *f)
{
	unsigned int waited;

	for (waited = 0; !tx_waiting(f) && waited < GUARD_MS; waited += 5)
		usleep(5000);
}

static uint64_t tx_dropped(struct fixture *f)
{
	return f->rig.net->pairs[0]->tx_dropped;
}

/* Read frame `want` from the peer, waiting up to GUARD_MS for it. */
static void expect_frame(struct fixture *f, unsigned int want)
{
	uint8_t buf[NET_HDR_LEN + FRAME_LEN + 16];
	struct pollfd pfd = { .fd = f->rig.peer, .events = POLLIN };
	unsigned int seq;
	ssize_t n;

	assert_int_equal(poll(&pfd, 1, GUARD_MS), 1);
	n = read(f->rig.peer, buf, sizeof(buf));
	assert_int_equal(n, NET_HDR_LEN + FRAME_LEN);
	memcpy(&seq, buf + NET_HDR_LEN, sizeof(seq));
	assert_int_equal(seq, want);
	assert_int_equal(buf[NET_HDR_LEN + FRAME_LEN - 1], want & 0xff);
}

static void test_full_backend_holds_frames(void **state)
{
	struct fixture *f = *state;
	uint16_t held;
	unsigned int i;

	post_frames(f, NR_FRAMES);
	wait_until_waiting(f);
	assert_true(tx_waiting(f));
	/* The socket took what it holds, the rest waits in the ring. */
	held = settled_used(f);
	assert_true(held > 0 && held < NR_FRAMES);
	assert_int_equal(tx_dropped(f), 0);
	/* Room resumes TX: every frame, in order, none lost. */
	for (i = 0; i < NR_FRAMES; i++)
		expect_frame(f, i);
	assert_int_equal(settled_used(f), NR_FRAMES);
	assert_false(tx_waiting(f));
	assert_int_equal(tx_dropped(f), 0);
	assert_int_equal(f->rig.rd.q->requests, NR_FRAMES);
}

static void test_reset_while_waiting(void **state)
{
	struct fixture *f = *state;
	struct virtio_device *vdev = f->rig.rd.vdev;

	uint8_t scratch[NET_HDR_LEN + FRAME_LEN];
	unsigned int i;

	post_frames(f, NR_FRAMES);
	wait_until_waiting(f);
	assert_true(tx_waiting(f));
	virtio_set_status(vdev, 0);
	assert_false(tx_waiting(f));
	while (read(f->rig.peer, scratch, sizeof(scratch)) > 0)
		;
	/*
	 * The driver starts over and fills the backend again: the device
	 * waits again (the wait of before was let go), and delivers all.
	 */
	memset(f->rig.rd.mem, 0, DATA_OFF);
	f->rig.rd.avail_idx = f->rig.rd.last_used = 0;
	assert_int_equal(ring_driver_start(&f->rig.rd,
					   1u << VIRTIO_RING_F_EVENT_IDX, 2), 0);
	ring_driver_use(&f->rig.rd, TXQ);
	post_frames(f, NR_FRAMES);
	wait_until_waiting(f);
	assert_true(tx_waiting(f));
	for (i = 0; i < NR_FRAMES; i++)
		expect_frame(f, i);
	assert_int_equal(settled_used(f), NR_FRAMES);
	assert_int_equal(tx_dropped(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_full_backend_holds_frames,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_while_waiting,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
