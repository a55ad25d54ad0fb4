/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-balloon (--balloon): the host asks the guest to give RAM back
 * (lkvm balloon NAME --inflate/--deflate MiB); the pages the guest hands
 * over are dropped from lkvm's memory (MADV_DONTNEED) and come back zeroed
 * when the guest touches them again.
 */
#ifndef LKVM_VIRTIO_BALLOON_H
#define LKVM_VIRTIO_BALLOON_H

#include <stdint.h>

#include "lkvm/virtio/device.h"

struct vm;
struct virtio_balloon;

struct virtio_balloon *virtio_balloon_create(struct vm *vm,
					     const struct virtio_device_options *opts);
void virtio_balloon_destroy(struct virtio_balloon *b);
struct virtio_device *virtio_balloon_device(struct virtio_balloon *b);

/*
 * Move the balloon's target by delta_pages (4 KiB each; negative: give
 * back), kept between 0 and the guest's RAM; the driver hears of it by a
 * config interrupt. Any thread. *target and *actual: the new target and
 * what the guest says it holds now, in pages.
 */
void virtio_balloon_adjust(struct virtio_balloon *b, int64_t delta_pages,
			   uint32_t *target, uint32_t *actual);

#endif
