/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-net: a tap device as a virtio network card. */
#ifndef LKVM_VIRTIO_NET_H
#define LKVM_VIRTIO_NET_H

#include <stdbool.h>

#include "lkvm/net.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"

struct vm;
struct virtio_net;

struct virtio_net_options {
	struct net_config net;
	enum virtio_transport transport;
	bool use_ioeventfd;
};

struct virtio_net *virtio_net_create(struct vm *vm,
				     const struct virtio_net_options *opts);
void virtio_net_destroy(struct virtio_net *net);
struct virtio_device *virtio_net_device(struct virtio_net *net);

#endif
