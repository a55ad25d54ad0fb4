// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk holds drivers to the limits its config space announces:
 * seg_max data segments of at most size_max bytes each. Within them a
 * request is served (its data checked); past them it fails with IOERR
 * rather than, on a `direct` disk, bouncing gigabytes. The device runs on
 * its own I/O thread (blk_rig.c); requests go in as one indirect table.
 */
#include <linux/virtio_blk.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "blk_rig.h"

#define BLOCKS		1024			/* 4 MiB image */
#define TABLE_OFF	RING_AREA		/* the indirect table */
#define HDR_OFF		(TABLE_OFF + 0x2000)
#define STATUS_OFF	(HDR_OFF + 0x100)
#define DATA_OFF	0x100000
#define DATA_MAX	(2U << 20)
#define MEM_SIZE	(DATA_OFF + DATA_MAX)
#define SEG_MAX		254			/* what the device announces */
#define SIZE_MAX_	(1U << 20)
#define WAIT_MS		5000

static int setup(void **state)
{
	struct blk_rig *r = calloc(1, sizeof(*r));
	struct virtio_poll_config poll = { .mode = VIRTIO_POLL_OFF };

	assert_non_null(r);
	blk_rig_start(r, BLOCKS, MEM_SIZE, &poll,
		      1u << VIRTIO_RING_F_INDIRECT_DESC, WAIT_MS);
	*state = r;
	return 0;
}

/*
 * Read from block 0 into nseg segments of seg bytes each; the status the
 * device wrote (and, when OK, the data checked against the image). The
 * status byte has a descriptor of its own, or with `shared` ends the last
 * data buffer (a driver may do that: 255 segments then fit a 256-entry
 * table).
 */
static uint8_t read_segments(struct blk_rig *r, unsigned int nseg,
			     uint32_t seg, bool shared)
{
	struct ring_driver *rd = &r->rd;
	struct vring_desc *t = (void *)(rd->mem + TABLE_OFF);
	struct virtio_blk_outhdr *hdr = (void *)(rd->mem + HDR_OFF);
	size_t data = (size_t)nseg * seg;
	uint8_t *status = shared ? rd->mem + DATA_OFF + data
				 : rd->mem + STATUS_OFF;
	uint16_t old = rd->avail_idx;
	unsigned int i, nr = nseg + (shared ? 1 : 2);

	assert_true(data + 1 <= DATA_MAX && nr <= 256);
	*hdr = (struct virtio_blk_outhdr) { .type = VIRTIO_BLK_T_IN };
	*status = 0xff;
	memset(rd->mem + DATA_OFF, 0xee, (size_t)nseg * seg);
	t[0] = (struct vring_desc) {
		.addr = ring_gpa(HDR_OFF), .len = sizeof(*hdr),
		.flags = VRING_DESC_F_NEXT, .next = 1,
	};
	for (i = 0; i < nseg; i++)
		t[1 + i] = (struct vring_desc) {
			.addr = ring_gpa(DATA_OFF + (size_t)i * seg), .len = seg,
			.flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
			.next = 2 + i,
		};
	if (shared)
		t[nseg].len++;
	else
		t[1 + nseg] = (struct vring_desc) {
			.addr = ring_gpa(STATUS_OFF), .len = 1,
		};
	t[nr - 1].flags = VRING_DESC_F_WRITE;
	rd->desc[0] = (struct vring_desc) {
		.addr = ring_gpa(TABLE_OFF), .len = nr * 16,
		.flags = VRING_DESC_F_INDIRECT,
	};
	ring_driver_add(rd, 0);
	ring_driver_publish(rd, old);
	while (__atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE) ==
	       rd->last_used)
		ring_driver_wait(rd);
	rd->last_used++;
	if (*status == VIRTIO_BLK_S_OK) {
		const uint32_t *w = (const void *)(rd->mem + DATA_OFF);

		for (i = 0; i < (size_t)nseg * seg / 4; i++)
			assert_int_equal(w[i], i / 1024);
	}
	return *status;
}

static void test_within_the_limits(void **state)
{
	struct blk_rig *r = *state;

	assert_int_equal(read_segments(r, SEG_MAX, 512, false),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(read_segments(r, SEG_MAX, 512, true),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(read_segments(r, 1, SIZE_MAX_, false),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(read_segments(r, 1, SIZE_MAX_, true),
			 VIRTIO_BLK_S_OK);
}

static void test_past_the_limits(void **state)
{
	struct blk_rig *r = *state;

	assert_int_equal(read_segments(r, SEG_MAX + 1, 512, true),
			 VIRTIO_BLK_S_IOERR);
	assert_int_equal(read_segments(r, 1, SIZE_MAX_ + 512, false),
			 VIRTIO_BLK_S_IOERR);
	/* and the device goes on serving */
	assert_int_equal(read_segments(r, 8, 4096, false), VIRTIO_BLK_S_OK);
	assert_int_equal(virtio_get_status(r->rd.vdev) &
			 VIRTIO_CONFIG_S_NEEDS_RESET, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_within_the_limits, setup,
						blk_rig_teardown),
		cmocka_unit_test_setup_teardown(test_past_the_limits, setup,
						blk_rig_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
