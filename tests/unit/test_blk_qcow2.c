// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk over a qcow2 image (blk_rig.c, its io_uring engine): the
 * guest's FLUSH goes to the format, not to io_uring's fsync alone, since
 * qcow2 holds its table changes in memory until a flush. After the FLUSH
 * completes, the image's file (a copy of it, as a host crash would find
 * it) holds the guest's allocating write.
 */
#include <linux/virtio_blk.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "blk_rig.h"

#define BLOCKS		256			/* 1 MiB image */
#define HDR_OFF		RING_AREA
#define STATUS_OFF	(HDR_OFF + 0x100)
#define DATA_OFF	0x20000
#define MEM_SIZE	(DATA_OFF + 0x10000)
#define WAIT_MS		5000

static int setup(void **state)
{
	struct blk_rig *r = calloc(1, sizeof(*r));
	struct virtio_poll_config poll = { .mode = VIRTIO_POLL_OFF };

	assert_non_null(r);
	r->qcow2 = true;
	blk_rig_start(r, BLOCKS, MEM_SIZE, &poll, 0, WAIT_MS);
	*state = r;
	return 0;
}

/* One request (type, at sector, 4 KiB of data unless a FLUSH): its status. */
static uint8_t request(struct blk_rig *r, uint32_t type, uint64_t sector)
{
	struct ring_driver *rd = &r->rd;
	struct virtio_blk_outhdr *hdr = (void *)(rd->mem + HDR_OFF);
	uint8_t *status = rd->mem + STATUS_OFF;
	uint16_t old = rd->avail_idx;
	unsigned int n = 0;

	*hdr = (struct virtio_blk_outhdr) { .type = type, .sector = sector };
	*status = 0xff;
	rd->desc[n] = (struct vring_desc) {
		.addr = ring_gpa(HDR_OFF), .len = sizeof(*hdr),
		.flags = VRING_DESC_F_NEXT, .next = n + 1,
	};
	n++;
	if (type != VIRTIO_BLK_T_FLUSH) {
		rd->desc[n] = (struct vring_desc) {
			.addr = ring_gpa(DATA_OFF), .len = 4096,
			.flags = VRING_DESC_F_NEXT, .next = n + 1,
		};
		n++;
	}
	rd->desc[n] = (struct vring_desc) {
		.addr = ring_gpa(STATUS_OFF), .len = 1,
		.flags = VRING_DESC_F_WRITE,
	};
	ring_driver_add(rd, 0);
	ring_driver_publish(rd, old);
	while (__atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE) ==
	       rd->last_used)
		ring_driver_wait(rd);
	rd->last_used++;
	return *status;
}

static void test_flush_writes_the_tables(void **state)
{
	struct blk_rig *r = *state;
	char cmd[512];

	memset(r->rd.mem + DATA_OFF, 0x5e, 4096);
	/* past the blocks qemu-img converted: a new cluster */
	assert_int_equal(request(r, VIRTIO_BLK_T_OUT, BLOCKS * 8),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(request(r, VIRTIO_BLK_T_FLUSH, 0), VIRTIO_BLK_S_OK);
	snprintf(cmd, sizeof(cmd),
		 "cp %s %s.copy && qemu-io -r -c 'read -q -P 0x5e 1M 4k' %s.copy; s=$?; rm -f %s.copy; exit $s",
		 r->path, r->path, r->path, r->path);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flush_writes_the_tables,
						setup, blk_rig_teardown),
	};

	if (system("qemu-img --version >/dev/null 2>&1")) {
		fprintf(stderr, "qemu-img is missing: scripts/install-deps.sh installs qemu-utils\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
