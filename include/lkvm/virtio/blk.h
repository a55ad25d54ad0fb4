/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-blk: a disk image as a virtio block device. */
#ifndef LKVM_VIRTIO_BLK_H
#define LKVM_VIRTIO_BLK_H

#include <stdint.h>

#include "lkvm/disk.h"
#include "lkvm/virtio/device.h"

struct vm;
struct virtio_blk;

struct virtio_blk_options {
	/*
	 * Open (disk_open()). The device takes it over, whether or not it is
	 * created, and leaves *disk closed.
	 */
	struct disk *disk;
	unsigned int nr_queues;		/* VIRTIO_BLK_F_MQ when > 1 */
	bool use_ioeventfd;
	struct virtio_poll_config poll;	/* the engine is the disk's (aio=) */
	/* Shared I/O threads to deal the queues to; NULL: a thread of its own. */
	struct iothread_pool *pool;
};

struct virtio_blk *virtio_blk_create(struct vm *vm,
				     const struct virtio_blk_options *opts);
void virtio_blk_destroy(struct virtio_blk *blk);
struct virtio_device *virtio_blk_device(struct virtio_blk *blk);

#endif
