// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net. Queue pair i is receiveq 2i and transmitq 2i+1, the control
 * queue comes after the pairs in use (virtio 5.1.2). Each pair has its
 * own I/O thread and its own backend queue (a tap queue; the user-mode
 * backend has one), so flows the kernel spreads over tap queues stay on
 * one thread each. The control queue runs on the last pair's thread.
 *
 * Offloads (partial checksums, TSO both ways) follow what the driver
 * negotiates, through the backend's offload flags.
 *
 * TX: every chain is [virtio-net header + frame], written to the backend
 * as it is (the tap speaks the same header). A backend that refuses a
 * frame for want of room (the user-mode backend's socket when its thread
 * falls behind; a tap never does) stops TX until it has room again: the
 * frame stays in the ring, nothing is dropped.
 * RX (net_rx.c): frames go from the backend straight into the driver's
 * receive buffers; when there are none, the backend waits, not the frame.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_ids.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "lkvm/virtio/net.h"
#include "lkvm/vm.h"
#include "net_internal.h"

#define NET_QUEUE_SIZE		256
#define NET_HDR_LEN_LEGACY	10	/* virtio_net_hdr: legacy, no MRG_RXBUF */

enum net_queue_role { NET_QUEUE_RX, NET_QUEUE_TX, NET_QUEUE_CTRL,
		      NET_QUEUE_UNUSED };

/* Which queue is which depends on whether the driver took MQ. */
static enum net_queue_role net_queue_role(struct virtio_net *net,
					  unsigned int index,
					  struct net_queue_pair **pair)
{
	unsigned int pairs = virtio_has_feature(&net->vdev, VIRTIO_NET_F_MQ) ?
			     net->nr_pairs : 1;

	if (index < 2 * pairs) {
		*pair = net->pairs[index / 2];
		return index & 1 ? NET_QUEUE_TX : NET_QUEUE_RX;
	}
	if (index == 2 * pairs &&
	    virtio_has_feature(&net->vdev, VIRTIO_NET_F_CTRL_VQ))
		return NET_QUEUE_CTRL;
	return NET_QUEUE_UNUSED;
}

enum tx_result { TX_DONE, TX_BACKEND_FULL };

/* TX_DONE: sent, or dropped and counted (bad chain, backend gone). */
static enum tx_result net_tx_one(struct net_queue_pair *p,
				 const struct virtq_chain *c)
{
	struct iovec iov[NET_QUEUE_SIZE];
	unsigned int i;

	if (c->nr_in || c->out_len < p->net->hdr_len ||
	    c->nr_out > NET_QUEUE_SIZE) {
		p->tx_dropped++;	/* not a frame the spec allows */
		return TX_DONE;
	}
	for (i = 0; i < c->nr_out; i++)
		iov[i] = (struct iovec) { c->out[i].hva, c->out[i].len };
	while (writev(p->fd, iov, c->nr_out) < 0) {
		if (errno == EAGAIN)
			return TX_BACKEND_FULL;
		if (errno != EINTR) {
			p->tx_dropped++;	/* backend down */
			break;
		}
	}
	return TX_DONE;
}

/* Let the backend's room resume TX; caller holds the TX queue lock. */
static bool net_tx_start_waiting(struct net_queue_pair *p)
{
	if (!p->tx_waiting &&
	    iothread_add(p->iothread, &p->tx_room_src, EPOLLOUT))
		return false;
	p->tx_waiting = true;
	return true;
}

/* Caller holds the pair's TX queue lock. */
static void net_tx_stop_waiting(struct net_queue_pair *p)
{
	if (p->tx_waiting)
		iothread_del(p->iothread, &p->tx_room_src);
	p->tx_waiting = false;
}

/*
 * One frame to the backend. One the backend refuses waits in the ring
 * (held) while the backend's room resumes TX; notifications stay off
 * meanwhile: kicks would find it full too. Should the wait be impossible,
 * the frame is dropped, not the queue.
 */
static enum virtio_chain_result net_tx_handle(struct virtio_queue *q,
					      const struct virtq_chain *c,
					      void *opaque, uint32_t *written)
{
	struct net_queue_pair *p = opaque;

	if (net_tx_one(p, c) == TX_DONE)
		return VIRTIO_CHAIN_USED;
	if (net_tx_start_waiting(p))
		return VIRTIO_CHAIN_HELD;
	p->tx_dropped++;
	return VIRTIO_CHAIN_USED;
}

static void net_tx(struct net_queue_pair *p, struct virtio_queue *q)
{
	if (p->tx_waiting)
		return;		/* net_backend_has_room() goes on */
	virtio_queue_serve(&p->net->vdev, q, net_tx_handle, p);
}

/* The backend's queue has room again (the pair's I/O thread). */
static void net_backend_has_room(struct io_source *src, uint32_t events)
{
	struct net_queue_pair *p = src->opaque;
	struct virtio_queue *q = net_pair_txq(p);

	pthread_mutex_lock(&q->lock);
	net_tx_stop_waiting(p);
	if (q->live)
		net_tx(p, q);
	pthread_mutex_unlock(&q->lock);
}

static void net_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_net *net = vdev->priv;
	struct net_queue_pair *p = NULL;

	switch (net_queue_role(net, q->index, &p)) {
	case NET_QUEUE_TX:
		net_tx(p, q);
		break;
	case NET_QUEUE_RX:
		/* New receive buffers: deliver what waits, watch again. */
		net_rx_resume(p, q);
		break;
	case NET_QUEUE_CTRL:
		net_ctrl_kick(net, q);
		break;
	case NET_QUEUE_UNUSED:
		break;
	}
}

int net_set_active_pairs(struct virtio_net *net, unsigned int n)
{
	struct net_backend *be = &net->backend;
	unsigned int i, j, old = __atomic_load_n(&net->active_pairs,
						 __ATOMIC_RELAXED);

	for (i = 1; i < net->nr_pairs; i++) {
		if (!be->ops->enable_queue(be, i, i < n))
			continue;
		/* the command fails: the pairs as they were, as far as can be */
		for (j = 1; j < i; j++)
			be->ops->enable_queue(be, j, j < old);
		return -1;
	}
	__atomic_store_n(&net->active_pairs, n, __ATOMIC_RELAXED);
	/*
	 * A pair that comes back may have stopped watching its detached
	 * queue; buffers the driver posted long ago are waiting for frames.
	 */
	for (i = 1; i < n; i++) {
		struct virtio_queue *q = net_pair_rxq(net->pairs[i]);

		pthread_mutex_lock(&q->lock);
		if (q->live)
			net_rx_resume(net->pairs[i], q);
		pthread_mutex_unlock(&q->lock);
	}
	return 0;
}

/*
 * The backend may hand the guest what the driver accepts: partially
 * checksummed frames (GUEST_CSUM) and large TCP segments (GUEST_TSO4/6),
 * which the header then describes; what the driver sends (CSUM,
 * HOST_TSO) the tap takes in any case.
 */
int net_set_guest_offloads(struct virtio_net *net, uint64_t features)
{
	struct net_backend *be = &net->backend;
	unsigned int flags = 0;
	int ret;

	if (!be->offloads)
		return 0;
	if (features & (1ULL << VIRTIO_NET_F_GUEST_CSUM)) {
		flags |= TUN_F_CSUM;
		if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO4))
			flags |= TUN_F_TSO4;
		if (features & (1ULL << VIRTIO_NET_F_GUEST_TSO6))
			flags |= TUN_F_TSO6;
	}
	ret = be->ops->set_offloads(be, flags);
	if (ret)
		pr_warn_ratelimited("network '%s': cannot set offloads %#x",
				    be->name, flags);
	return ret;
}

static void net_reset(struct virtio_device *vdev)
{
	struct virtio_net *net = vdev->priv;
	unsigned int i;

	for (i = 0; i < net->nr_pairs; i++) {
		struct net_queue_pair *p = net->pairs[i];
		struct virtio_queue *q = net_pair_rxq(p);

		pthread_mutex_lock(&q->lock);
		net_watch_backend(p, false);
		p->pending_len = 0;
		/* What the last driver posted says nothing of the next. */
		p->rx_estimate = NET_RX_ESTIMATE_START;
		pthread_mutex_unlock(&q->lock);
		q = net_pair_txq(p);
		pthread_mutex_lock(&q->lock);
		net_tx_stop_waiting(p);
		pthread_mutex_unlock(&q->lock);
	}
	net_set_guest_offloads(net, 0);
	/* As a NIC's EEPROM would: the next driver starts from it again. */
	virtio_config_update(vdev, offsetof(struct virtio_net_config, mac),
			     net->perm_mac, ETH_ADDR_LEN);
	net_filter_reset(&net->filter, net->perm_mac);
}

static void net_driver_ok(struct virtio_device *vdev)
{
	struct virtio_net *net = vdev->priv;
	struct net_backend *be = &net->backend;
	uint8_t mac[ETH_ADDR_LEN];

	/* A legacy driver without MRG_RXBUF uses the 10-byte header. */
	net->hdr_len = virtio_has_feature(vdev, VIRTIO_F_VERSION_1) ||
		       virtio_has_feature(vdev, VIRTIO_NET_F_MRG_RXBUF) ?
		       NET_HDR_LEN : NET_HDR_LEN_LEGACY;
	if (be->ops->set_header_len(be, net->hdr_len))
		pr_warn_ratelimited("network '%s': cannot set a %u-byte header",
				    be->name, net->hdr_len);
	/* A legacy driver may have written its own. */
	virtio_config_read(vdev, offsetof(struct virtio_net_config, mac), mac,
			   ETH_ADDR_LEN);
	net_filter_reset(&net->filter, mac);
	/* One pair until the driver asks for more (VIRTIO_NET_CTRL_MQ). */
	net_set_active_pairs(net, 1);
	net_set_guest_offloads(net, vdev->guest_features);
}

/* The config fields a driver cannot change: link status, queue pairs. */
static void net_config_fixed_fields(struct virtio_net *net)
{
	uint16_t status = htole16(VIRTIO_NET_S_LINK_UP);
	uint16_t pairs = htole16(net->nr_pairs);

	memcpy(&net->config.status, &status, sizeof(status));
	memcpy(&net->config.max_virtqueue_pairs, &pairs, sizeof(pairs));
}

/* Only a legacy driver writes the config: the MAC, nothing else. */
static void net_config_written(struct virtio_device *vdev, unsigned int offset,
			       unsigned int len)
{
	struct virtio_net *net = vdev->priv;

	net_config_fixed_fields(net);
	if (offset < ETH_ADDR_LEN)
		net_filter_set_mac(&net->filter, net->config.mac);
}

/* Read at exit, once the I/O threads are stopped. */
static void net_write_stats(struct virtio_device *vdev, FILE *f)
{
	struct virtio_net *net = vdev->priv;
	uint64_t rx_dropped = 0, rx_filtered = 0, tx_dropped = 0, bad = 0;
	unsigned int i;

	for (i = 0; i < net->nr_pairs; i++) {
		bad += net->pairs[i]->rx_bad_buffers;
		rx_dropped += net->pairs[i]->rx_dropped;
		rx_filtered += net->pairs[i]->rx_filtered;
		tx_dropped += net->pairs[i]->tx_dropped;
	}
	fprintf(f, "\"backend\":\"%s\",\"queue_pairs\":%u,"
		"\"active_pairs\":%u,\"rx_dropped\":%llu,"
		"\"rx_filtered\":%llu,\"rx_bad_buffers\":%llu,"
		"\"tx_dropped\":%llu",
		net->backend.name, net->nr_pairs,
		__atomic_load_n(&net->active_pairs, __ATOMIC_RELAXED),
		(unsigned long long)rx_dropped,
		(unsigned long long)rx_filtered, (unsigned long long)bad,
		(unsigned long long)tx_dropped);
}

static const struct virtio_device_ops net_ops = {
	.name = "net",
	.device_id = VIRTIO_ID_NET,
	.queue_kick = net_queue_kick,
	.reset = net_reset,
	.driver_ok = net_driver_ok,
	.config_written = net_config_written,
	.write_stats = net_write_stats,
};

static uint64_t net_features(const struct virtio_net *net)
{
	uint64_t f = (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_STATUS) |
		     (1ULL << VIRTIO_NET_F_MRG_RXBUF) |
		     (1ULL << VIRTIO_NET_F_CTRL_VQ) |
		     (1ULL << VIRTIO_NET_F_CTRL_RX) |
		     (1ULL << VIRTIO_NET_F_CTRL_RX_EXTRA) |
		     (1ULL << VIRTIO_NET_F_CTRL_MAC_ADDR);

	if (net->nr_pairs > 1)
		f |= 1ULL << VIRTIO_NET_F_MQ;
	if (net->backend.offloads)
		f |= (1ULL << VIRTIO_NET_F_CSUM) |
		     (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO4) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO6) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO6) |
		     (1ULL << VIRTIO_NET_F_CTRL_GUEST_OFFLOADS);
	return f;
}

static int net_create_pairs(struct virtio_net *net, struct vm *vm,
			    struct iothread_pool *pool)
{
	unsigned int i;

	for (i = 0; i < net->nr_pairs; i++) {
		struct net_queue_pair *p = vm_zalloc(vm, sizeof(*p));
		char name[24];

		if (!p)
			return -1;
		net->pairs[i] = p;
		p->net = net;
		p->index = i;
		p->rx_estimate = NET_RX_ESTIMATE_START;
		p->fd = net->backend.fds[i];
		p->backend_src = (struct io_source) {
			.fd = p->fd, .handler = net_backend_readable, .opaque = p,
		};
		p->tx_room_src = (struct io_source) {
			.fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0),
			.handler = net_backend_has_room, .opaque = p,
		};
		if (p->tx_room_src.fd < 0) {
			pr_err("network '%s': cannot duplicate its fd: %s",
			       net->backend.name, strerror(errno));
			return -1;
		}
		if (pool) {
			p->iothread = iothread_pool_next(pool);
			continue;
		}
		snprintf(name, sizeof(name), "net-io%u", i);
		p->iothread = p->own_iothread = iothread_create(vm, name);
		if (!p->iothread)
			return -1;
	}
	return 0;
}

/*
 * Pair i's queues on pair i's thread; the control queue on the last.
 * Only transmit queues poll: receive queues wait for the backend, and
 * the control queue for a rare command.
 */
static void net_bind_queues(struct virtio_net *net)
{
	unsigned int i;

	for (i = 0; i < net->vdev.nr_queues; i++) {
		net->vdev.queues[i].iothread =
			net->pairs[MIN(i / 2, net->nr_pairs - 1)]->iothread;
		if (i < 2 * net->nr_pairs && (i & 1))
			virtio_queue_allow_poll(&net->vdev, i);
	}
}

static int net_start_pairs(struct virtio_net *net)
{
	unsigned int i;

	for (i = 0; i < net->nr_pairs; i++)
		if (net->pairs[i]->own_iothread &&
		    iothread_start(net->pairs[i]->own_iothread))
			return -1;
	return 0;
}

static void net_destroy_pairs(struct virtio_net *net)
{
	unsigned int i;

	for (i = 0; i < net->nr_pairs; i++) {
		struct net_queue_pair *p = net->pairs[i];

		if (!p)
			continue;
		if (p->own_iothread) {
			iothread_destroy(p->own_iothread);
			p->own_iothread = NULL;
		}
		if (p->tx_room_src.fd >= 0) {
			close(p->tx_room_src.fd);
			p->tx_room_src.fd = -1;
		}
	}
}

static void net_init_config(struct virtio_net *net, const uint8_t *mac)
{
	memcpy(net->perm_mac, mac, ETH_ADDR_LEN);
	memcpy(net->config.mac, mac, ETH_ADDR_LEN);
	net_config_fixed_fields(net);
	net->vdev.config = (uint8_t *)&net->config;
	/* Up to max_virtqueue_pairs: no MTU or speed fields are offered. */
	net->vdev.config_size = offsetof(struct virtio_net_config, mtu);
	net->vdev.host_features |= net_features(net);
	net_filter_reset(&net->filter, mac);
}

struct virtio_net *virtio_net_create(struct vm *vm,
				     const struct virtio_net_options *opts)
{
	struct virtio_net *net = vm_zalloc(vm, sizeof(*net));

	if (!net) {
		net_backend_close(opts->backend);
		return NULL;
	}
	net->backend = *opts->backend;
	opts->backend->ops = NULL;	/* ours now */
	net->hdr_len = NET_HDR_LEN;
	net_filter_init(&net->filter);
	if (!net->backend.nr_queues ||
	    net->backend.nr_queues > NET_MAX_QUEUE_PAIRS) {
		pr_err("network '%s': a backend with %u queues", net->backend.name,
		       net->backend.nr_queues);
		goto fail;
	}
	net->nr_pairs = net->backend.nr_queues;
	if (net_create_pairs(net, vm, opts->pool) ||
	    virtio_device_init(&net->vdev, vm, &net_ops, net,
			       2 * net->nr_pairs + 1, NET_QUEUE_SIZE,
			       net->pairs[0]->iothread, opts->use_ioeventfd))
		goto fail;
	virtio_device_set_poll(&net->vdev, &opts->poll);
	net_bind_queues(net);
	net_init_config(net, opts->net.mac);
	if (net_start_pairs(net))
		goto fail;
	return net;
fail:
	net_destroy_pairs(net);
	net_backend_close(&net->backend);
	return NULL;
}

void virtio_net_destroy(struct virtio_net *net)
{
	unsigned int i;

	if (!net || net->stopped)
		return;
	for (i = 0; i < net->nr_pairs; i++)
		iothread_stop(net->pairs[i]->own_iothread);
	virtio_device_stop(&net->vdev);
	net_destroy_pairs(net);
	net_backend_close(&net->backend);
	net->stopped = true;	/* the counters stay for --stats */
}

struct virtio_device *virtio_net_device(struct virtio_net *net)
{
	return &net->vdev;
}
