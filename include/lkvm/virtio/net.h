/* SPDX-License-Identifier: GPL-2.0 */
/* virtio-net: a network card on a tap or on user-mode networking. */
#ifndef LKVM_VIRTIO_NET_H
#define LKVM_VIRTIO_NET_H

#include <stdbool.h>

#include "lkvm/net.h"
#include "lkvm/virtio/device.h"

struct vm;
struct virtio_net;

struct virtio_net_options {
	struct net_config net;		/* the MAC; the queues are the backend's */
	/*
	 * Open (net_backend_open(), or a test's own over a socket pair). The
	 * device takes it over, whether or not it is created, and leaves
	 * *backend closed.
	 */
	struct net_backend *backend;
	bool use_ioeventfd;
	struct virtio_poll_config poll;
	/* Shared I/O threads to deal the pairs to; NULL: one per pair. */
	struct iothread_pool *pool;
};

struct virtio_net *virtio_net_create(struct vm *vm,
				     const struct virtio_net_options *opts);
void virtio_net_destroy(struct virtio_net *net);
struct virtio_device *virtio_net_device(struct virtio_net *net);

#endif
