/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-rng (--rng): the host's getrandom() as the guest's entropy source. */
#ifndef LKVM_VIRTIO_RNG_H
#define LKVM_VIRTIO_RNG_H

#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"

struct vm;
struct iothread_pool;
struct virtio_rng;

struct virtio_rng_options {
	enum virtio_transport transport;
	bool use_ioeventfd;
	/* Shared I/O threads to serve the queue on; NULL: a thread of its own. */
	struct iothread_pool *pool;
};

struct virtio_rng *virtio_rng_create(struct vm *vm,
				     const struct virtio_rng_options *opts);
void virtio_rng_destroy(struct virtio_rng *rng);
struct virtio_device *virtio_rng_device(struct virtio_rng *rng);

#endif
