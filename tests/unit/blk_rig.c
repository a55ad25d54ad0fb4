// SPDX-License-Identifier: GPL-2.0
/* See blk_rig.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "blk_rig.h"

static void make_image(struct blk_rig *r, unsigned int blocks)
{
	static uint32_t buf[1024];
	unsigned int b, i;
	int fd;

	/* O_DIRECT needs a disk's file system: /var/tmp, not a tmpfs /tmp */
	snprintf(r->path, sizeof(r->path), "%s/lkvm-test-blk-XXXXXX",
		 r->direct ? "/var/tmp" : "/tmp");
	fd = mkstemp(r->path);
	assert_true(fd >= 0);
	for (b = 0; b < blocks; b++) {
		for (i = 0; i < ARRAY_SIZE(buf); i++)
			buf[i] = b;
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	}
	close(fd);
	if (r->qcow2) {
		char cmd[512];

		/* twice as large: the second half unallocated */
		snprintf(cmd, sizeof(cmd),
			 "qemu-img convert -O qcow2 %s %s.q && mv %s.q %s && qemu-img resize -q %s %u",
			 r->path, r->path, r->path, r->path, r->path,
			 blocks * 8192);
		assert_int_equal(system(cmd), 0);
	}
}

void blk_rig_start(struct blk_rig *r, unsigned int blocks, size_t mem_size,
		   const struct virtio_poll_config *poll, uint32_t features0,
		   int wait_ms)
{
	struct disk_params dc = { 0 };
	struct virtio_blk_options opts = {
		.nr_queues = 1, .use_ioeventfd = true, .poll = *poll,
	};
	struct disk disk;

	make_image(r, blocks);
	dc.path = r->path;
	dc.direct = r->direct;
	assert_int_equal(fake_vm_init(&r->fake, 0, 1), 0);
	assert_int_equal(ring_driver_init(&r->rd, &r->fake.vm, mem_size,
					  wait_ms), 0);
	assert_int_equal(disk_open(&disk, &dc), 0);
	opts.disk = &disk;
	r->blk = virtio_blk_create(&r->fake.vm, &opts);
	assert_non_null(r->blk);
	ring_driver_attach(&r->rd, virtio_blk_device(r->blk));
	ring_driver_use(&r->rd, 0);
	assert_int_equal(ring_driver_start(&r->rd, features0, 1), 0);
	r->q = r->rd.q;
}

void blk_rig_stop(struct blk_rig *r)
{
	virtio_blk_destroy(r->blk);
	assert_int_equal(r->fake.unexpected, 0);
	fake_vm_destroy(&r->fake);
	unlink(r->path);
}

int blk_rig_teardown(void **state)
{
	struct blk_rig *r = *state;

	blk_rig_stop(r);
	free(r);
	return 0;
}
