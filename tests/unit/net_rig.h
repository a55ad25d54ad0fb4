/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lkvm's virtio-net on its own I/O thread, on a fake VM (fake_vm.c), its
 * backend one end of a socket pair the test holds (`peer`: what the tap
 * would be), driven from the test's thread through the bench's ring
 * driver (tests/bench/ring_driver.c).
 */
#ifndef TESTS_UNIT_NET_RIG_H
#define TESTS_UNIT_NET_RIG_H

#include "lkvm/virtio/net.h"
#include "../bench/ring_driver.h"
#include "fake_vm.h"

struct net_rig {
	struct fake_vm fake;
	struct ring_driver rd;
	struct virtio_net *net;
	int peer;			/* the backend's other end */
	unsigned int closed;		/* times the backend was closed */
};

/*
 * The device up with features0 negotiated and its RX and TX queues
 * enabled, on mem_size bytes of fake guest memory; the backend's socket
 * holds sndbuf bytes; every driver wait is bounded by wait_ms.
 */
void net_rig_start(struct net_rig *r, size_t mem_size, int sndbuf,
		   uint32_t features0, int wait_ms);
/* The device gone; the backend closed once. */
void net_rig_stop(struct net_rig *r);

#endif
