/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-rng (--rng): the host's getrandom() as the guest's entropy source. */
#ifndef LKVM_VIRTIO_RNG_H
#define LKVM_VIRTIO_RNG_H

#include "lkvm/virtio/device.h"

struct vm;
struct virtio_rng;

struct virtio_rng *virtio_rng_create(struct vm *vm,
				     const struct virtio_device_options *opts);
void virtio_rng_destroy(struct virtio_rng *rng);
struct virtio_device *virtio_rng_device(struct virtio_rng *rng);

#endif
