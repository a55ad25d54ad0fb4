// SPDX-License-Identifier: GPL-2.0
/* See net_rig.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "net_rig.h"

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static int fake_header_len(struct net_backend *be, int len)
{
	return 0;
}

static int fake_offloads(struct net_backend *be, unsigned int flags)
{
	return 0;
}

static int fake_enable_queue(struct net_backend *be, unsigned int idx,
			     bool enable)
{
	return 0;
}

static void fake_close(struct net_backend *be)
{
	close(be->fds[0]);
	(*(unsigned int *)be->priv)++;
}

static const struct net_backend_ops fake_backend_ops = {
	.set_header_len = fake_header_len,
	.set_offloads = fake_offloads,
	.enable_queue = fake_enable_queue,
	.close = fake_close,
};

void net_rig_start(struct net_rig *r, size_t mem_size, int sndbuf,
		   uint32_t features0, int wait_ms)
{
	struct net_backend be = { .ops = &fake_backend_ops, .nr_queues = 1 };
	struct virtio_net_options opts = {
		.net = { .mode = NET_MODE_USER, .queues = 1 },
		.use_ioeventfd = true,
		.backend = &be,
	};
	int sv[2];

	assert_int_equal(fake_vm_init(&r->fake, 0, 1), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
				    SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
				    sizeof(sndbuf)), 0);
	be.fds[0] = sv[0];
	be.priv = &r->closed;
	snprintf(be.name, sizeof(be.name), "pair");
	r->peer = sv[1];
	memcpy(opts.net.mac, guest_mac, 6);
	assert_int_equal(ring_driver_init(&r->rd, &r->fake.vm, mem_size,
					  wait_ms), 0);
	r->net = virtio_net_create(&r->fake.vm, &opts);
	assert_non_null(r->net);
	ring_driver_attach(&r->rd, virtio_net_device(r->net));
	assert_int_equal(ring_driver_start(&r->rd, features0, 2), 0);
}

void net_rig_stop(struct net_rig *r)
{
	virtio_net_destroy(r->net);
	assert_int_equal(r->closed, 1);
	if (r->peer >= 0)
		close(r->peer);
	assert_int_equal(r->fake.unexpected, 0);
	fake_vm_destroy(&r->fake);
}
