/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lkvm's virtio-blk on its own I/O thread over an image file, on a fake VM
 * (fake_vm.c), driven from the test's thread through the bench's ring
 * driver (tests/bench/ring_driver.c): what the unit tests that need the
 * real device and its thread share.
 */
#ifndef TESTS_UNIT_BLK_RIG_H
#define TESTS_UNIT_BLK_RIG_H

#include "lkvm/virtio/blk.h"
#include "../bench/ring_driver.h"
#include "fake_vm.h"

struct blk_rig {
	struct fake_vm fake;
	struct ring_driver rd;
	struct virtio_blk *blk;
	struct virtio_queue *q;		/* queue 0, rd drives it */
	bool direct;			/* set before start: -d IMG,direct */
	bool qcow2;			/* set before start: a qcow2 image */
	char path[64];
};

/*
 * A temporary image of `blocks` 4 KiB blocks, each holding its number as
 * 32-bit words all through (raw, or qemu-img's qcow2 of it, then twice
 * as large); fake guest memory of mem_size bytes; the
 * device up with features0 negotiated (wait_ms bounds the driver's waits).
 */
void blk_rig_start(struct blk_rig *r, unsigned int blocks, size_t mem_size,
		   const struct virtio_poll_config *poll, uint32_t features0,
		   int wait_ms);
/* The device and its thread gone (q's memory too: read it before). */
void blk_rig_stop(struct blk_rig *r);
/* A cmocka teardown for a calloc'ed rig in *state: stopped and freed. */
int blk_rig_teardown(void **state);

#endif
