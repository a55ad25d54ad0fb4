// SPDX-License-Identifier: GPL-2.0
/*
 * The core's one serve loop (virtio_queue_serve): chains go to the
 * device's handler and come back used, once per pass published with one
 * interrupt at most; a chain the handler holds goes back in the ring; a
 * broken ring marks the device NEEDS_RESET; and a chain the driver posts
 * while the loop runs, even between its last pop and notifications coming
 * back on, is served in the same call, without a kick. A queue of its own on a
 * plain guest memory, a transport that counts what it is asked to signal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/guest_mem.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"

#define RAM_GPA		0x10000ULL
#define RAM_SIZE	(256 * 1024)
#define QSIZE		8
#define DESC_GPA	RAM_GPA
#define AVAIL_GPA	(RAM_GPA + 0x1000)
#define USED_GPA	(RAM_GPA + 0x2000)
#define DATA_GPA	(RAM_GPA + 0x4000)
#define BUF_LEN		64

struct fixture {
	struct guest_mem mem;
	uint8_t *ram;
	struct virtio_device vdev;
	struct virtio_queue *q;
	unsigned int queue_signals;
	unsigned int config_signals;
	uint16_t avail_idx;
	/* the handler's script */
	unsigned int handled;
	unsigned int hold_at;		/* hold the chain handled n-th (1-based) */
	unsigned int post_at;		/* post one more chain while handling n-th */
	bool post_on_signal;		/* ... or once, when interrupted */
};

static struct fixture *the_fixture;

static void *host(struct fixture *f, uint64_t gpa)
{
	return guest_mem_ptr(&f->mem, gpa, 1);
}

static void post(struct fixture *f, uint16_t slot);

/* Runs after the loop's last pop and before notifications come back on. */
static void count_queue_signal(struct virtio_transport *t,
			       struct virtio_queue *q)
{
	struct fixture *f = the_fixture;

	f->queue_signals++;
	if (f->post_on_signal) {
		f->post_on_signal = false;
		post(f, f->avail_idx % QSIZE);
	}
}

static void count_config_signal(struct virtio_transport *t)
{
	the_fixture->config_signals++;
}

static const struct virtio_transport_ops counting_ops = {
	.signal_queue = count_queue_signal,
	.signal_config = count_config_signal,
};
static struct virtio_transport counting_transport = { .ops = &counting_ops };

static const struct virtio_device_ops test_ops = { .name = "test" };

/* The driver's side: one device-writable buffer per chain, head = slot. */
static void post(struct fixture *f, uint16_t slot)
{
	struct vring_desc *desc = host(f, DESC_GPA);
	struct vring_avail *avail = host(f, AVAIL_GPA);

	desc[slot] = (struct vring_desc) {
		.addr = DATA_GPA + slot * BUF_LEN, .len = BUF_LEN,
		.flags = VRING_DESC_F_WRITE,
	};
	avail->ring[f->avail_idx % QSIZE] = slot;
	__atomic_store_n(&avail->idx, ++f->avail_idx, __ATOMIC_RELEASE);
}

static uint16_t used_idx(struct fixture *f)
{
	return ((struct vring_used *)host(f, USED_GPA))->idx;
}

static struct vring_used_elem used_elem(struct fixture *f, unsigned int i)
{
	return ((struct vring_used *)host(f, USED_GPA))->ring[i % QSIZE];
}

static enum virtio_chain_result handle(struct virtio_queue *q,
				       const struct virtq_chain *c,
				       void *opaque, uint32_t *written)
{
	struct fixture *f = opaque;

	f->handled++;
	if (f->handled == f->post_at)
		post(f, (c->head + 1) % QSIZE);
	if (f->handled == f->hold_at)
		return VIRTIO_CHAIN_HELD;
	memset(c->in[0].hva, 0xa5, 10);
	*written = 10 + c->head;
	return VIRTIO_CHAIN_USED;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->ram = aligned_alloc(4096, RAM_SIZE);
	assert_non_null(f->ram);
	memset(f->ram, 0, RAM_SIZE);
	assert_int_equal(guest_mem_add(&f->mem, RAM_GPA, RAM_SIZE, f->ram), 0);
	f->vdev.ops = &test_ops;
	virtio_device_attach(&f->vdev, &counting_transport);
	f->q = &f->vdev.queues[0];
	f->q->vdev = &f->vdev;
	assert_int_equal(virtq_init(&f->q->ring, &f->mem, QSIZE, DESC_GPA,
				    AVAIL_GPA, USED_GPA, false, false), 0);
	the_fixture = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtq_exit(&f->q->ring);
	free(f->ram);
	free(f);
	return 0;
}

static void test_serves_all_with_one_interrupt(void **state)
{
	struct fixture *f = *state;
	unsigned int i;

	for (i = 0; i < 3; i++)
		post(f, i);
	assert_true(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->handled, 3);
	assert_int_equal(used_idx(f), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(used_elem(f, i).id, i);
		assert_int_equal(used_elem(f, i).len, 10 + i);
	}
	assert_int_equal(f->ram[DATA_GPA - RAM_GPA + 2 * BUF_LEN], 0xa5);
	assert_int_equal(f->q->requests, 3);
	assert_int_equal(f->queue_signals, 1);
	assert_int_equal(f->q->interrupts, 1);
	/* notifications are back on for the next kick */
	assert_int_equal(((struct vring_used *)host(f, USED_GPA))->flags, 0);
	/* nothing new: no interrupt */
	assert_true(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->queue_signals, 1);
}

static void test_chain_posted_while_serving_is_served(void **state)
{
	struct fixture *f = *state;

	/* The driver posts chain 1 while the device handles chain 0, when
	 * notifications are off: it will not kick for it. */
	f->post_at = 1;
	post(f, 0);
	assert_true(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->handled, 2);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(used_elem(f, 1).id, 1);
}

static void test_chain_posted_before_reenable_is_served(void **state)
{
	struct fixture *f = *state;

	/* The driver posts chain 1 after the device's last look at the
	 * ring and before notifications are on again: no kick will come,
	 * so the loop's second look must find it. */
	f->post_on_signal = true;
	post(f, 0);
	assert_true(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->handled, 2);
	assert_int_equal(used_idx(f), 2);
	assert_int_equal(used_elem(f, 1).id, 1);
	assert_int_equal(f->queue_signals, 2);
}

static void test_held_chain_waits_in_the_ring(void **state)
{
	struct fixture *f = *state;

	f->hold_at = 2;
	post(f, 0);
	post(f, 1);
	post(f, 2);
	assert_false(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->handled, 2);
	/* the one before it is published, with its interrupt */
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(f->queue_signals, 1);
	assert_int_equal(f->q->requests, 1);
	/* served again (the backend has room): the held chain comes first */
	f->hold_at = 0;
	assert_true(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(used_idx(f), 3);
	assert_int_equal(used_elem(f, 1).id, 1);
	assert_int_equal(used_elem(f, 2).id, 2);
	assert_int_equal(f->q->requests, 3);
}

static void test_broken_ring_needs_reset(void **state)
{
	struct fixture *f = *state;
	struct vring_avail *avail = host(f, AVAIL_GPA);

	post(f, 0);
	post(f, 1);
	avail->ring[1] = QSIZE + 3;	/* a head past the table */
	assert_false(virtio_queue_serve(&f->vdev, f->q, handle, f));
	/* the good chain before it is used and published */
	assert_int_equal(f->handled, 1);
	assert_int_equal(used_idx(f), 1);
	assert_true(f->vdev.status & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(f->config_signals, 1);
	/* and the queue stays broken */
	assert_false(virtio_queue_serve(&f->vdev, f->q, handle, f));
	assert_int_equal(f->handled, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_serves_all_with_one_interrupt,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_posted_while_serving_is_served,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_posted_before_reenable_is_served,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_chain_waits_in_the_ring,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_ring_needs_reset,
						setup, teardown),
	};

	log_threshold = LOG_ERROR;	/* the broken ring's one warning */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
