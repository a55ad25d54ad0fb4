/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-9p (--9p DIR,TAG[,ro]): a host directory as a 9P2000.L share. */
#ifndef LKVM_VIRTIO_9P_H
#define LKVM_VIRTIO_9P_H

#include "lkvm/virtio/device.h"

#define VIRTIO_9P_TAG_MAX	64	/* the guest's mount names it */

struct vm;
struct virtio_9p;

/* Takes over root_fd, the share's root directory, even on failure. */
struct virtio_9p *virtio_9p_create(struct vm *vm,
				   const struct virtio_device_options *opts,
				   int root_fd, const char *tag, bool ro);
void virtio_9p_destroy(struct virtio_9p *p);
struct virtio_device *virtio_9p_device(struct virtio_9p *p);

#endif
