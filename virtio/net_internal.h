/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-net's insides, shared by the data path (net.c) and the control
 * queue (net_ctrl.c).
 */
#ifndef LKVM_VIRTIO_NET_INTERNAL_H
#define LKVM_VIRTIO_NET_INTERNAL_H

#include <linux/virtio_net.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "lkvm/iothread.h"
#include "lkvm/net.h"
#include "lkvm/virtio/device.h"

#define NET_HDR_LEN		12	/* virtio_net_hdr_mrg_rxbuf */
#define NET_MAX_FRAME		(65535 + NET_HDR_LEN)
#define NET_MAC_TABLE_SIZE	64
#define NET_MAX_RX_CHAINS	64	/* receive buffers for one frame */
#define NET_MAX_RX_BAD		64	/* bad buffers passed over for one */
#define NET_RX_IOV_MAX		1023	/* their segments, for one readv() */
#define ETH_ADDR_LEN		6

/*
 * What the driver asked the device to receive (the control queue's
 * VIRTIO_NET_CTRL_RX and _MAC classes). Written by the control queue's
 * thread, read for every frame by the RX threads: `lock` guards it all.
 */
struct net_rx_filter {
	pthread_mutex_t lock;
	bool promisc, allmulti, alluni, nomulti, nouni, nobcast;
	bool uni_overflow, multi_overflow;	/* table too long: take all */
	uint8_t mac[ETH_ADDR_LEN];
	unsigned int nr_uni, nr_multi;
	uint8_t uni[NET_MAC_TABLE_SIZE][ETH_ADDR_LEN];
	uint8_t multi[NET_MAC_TABLE_SIZE][ETH_ADDR_LEN];
};

/*
 * Receive chains popped for the next frame, in ring order: the usable
 * ones (heads), and the bad ones among them (no frame fits: given back
 * empty once the frame has passed them), each with how many usable
 * ones came before it.
 */
struct net_rx_batch {
	unsigned int nr;
	unsigned int nr_iov;
	unsigned int nr_bad;
	size_t cap;			/* bytes they hold */
	uint16_t heads[NET_MAX_RX_CHAINS];
	uint32_t caps[NET_MAX_RX_CHAINS];
	uint16_t bad_heads[NET_MAX_RX_BAD];
	uint8_t bad_after[NET_MAX_RX_BAD];	/* usable chains before it */
	struct iovec iov[NET_RX_IOV_MAX + 1];	/* + the bounce buffer */
};

/*
 * One receive/transmit queue pair and its backend queue, served by the
 * pair's I/O thread: the RX state under the RX queue's lock, the
 * backend's write side (tx_*) under the TX queue's lock. A reset (a vCPU
 * thread) and the control queue's thread take the same locks.
 */
struct net_queue_pair {
	struct virtio_net *net;
	unsigned int index;
	int fd;				/* the backend's queue */
	struct iothread *iothread;	/* serves the pair */
	struct iothread *own_iothread;	/* the same, if not a pool's */
	struct io_source backend_src;	/* fd readable: RX */
	bool backend_watched;
	/*
	 * A second fd for the same backend queue, watched for room while
	 * the backend refuses frames (EAGAIN): epoll keeps one event mask
	 * per fd, and RX (under the other queue's lock) owns fd's.
	 */
	struct io_source tx_room_src;
	bool tx_waiting;		/* TX stopped until the backend has room */
	size_t pending_len;		/* a frame read but not delivered */
	size_t rx_estimate;		/* bytes to have posted per frame */
#define NET_RX_ESTIMATE_START	(NET_HDR_LEN + 1514)	/* an Ethernet MTU */
	struct net_rx_batch batch;
	uint64_t rx_bytes;		/* delivered into the driver's buffers */
	uint64_t rx_dropped;		/* runts, no buffer could hold it */
	uint64_t rx_filtered;		/* not for us (rx mode, MAC table) */
	uint64_t rx_bad_buffers;	/* receive chains no frame fits */
	uint64_t tx_dropped;
	uint8_t pending[NET_MAX_FRAME];
};

/*
 * The config space is fixed after creation but for the MAC: a legacy
 * driver may write it, MAC_ADDR_SET sets it and a reset brings perm_mac
 * back, all under vdev->config_lock. active_pairs and hdr_len are set
 * under vdev->lock (status) or the control queue's lock, and read
 * atomically by the I/O threads.
 *
 * Lock order: vdev->lock, then one queue lock at a time; or the control
 * queue's lock, then a pair's RX queue lock (net_set_active_pairs). No
 * path takes the control queue's lock while holding another queue's.
 * vdev->config_lock comes after any of them, and before the filter's.
 */
struct virtio_net {
	struct virtio_device vdev;
	struct virtio_net_config config;
	uint8_t perm_mac[ETH_ADDR_LEN];	/* given or made up: fixed */
	struct net_backend backend;
	unsigned int nr_pairs;
	unsigned int active_pairs;
	unsigned int hdr_len;		/* 12, or 10 for a legacy driver */
	struct net_rx_filter filter;
	struct net_queue_pair *pairs[NET_MAX_QUEUE_PAIRS];
	bool stopped;			/* main thread, at exit */
};

static inline struct virtio_queue *net_pair_rxq(struct net_queue_pair *p)
{
	return &p->net->vdev.queues[2 * p->index];
}

static inline struct virtio_queue *net_pair_txq(struct net_queue_pair *p)
{
	return &p->net->vdev.queues[2 * p->index + 1];
}

/* The receive path (net_rx.c); callers hold the pair's RX queue lock. */
void net_rx(struct net_queue_pair *p, struct virtio_queue *q);
void net_rx_resume(struct net_queue_pair *p, struct virtio_queue *q);
void net_watch_backend(struct net_queue_pair *p, bool watch);
/* The backend's fd is readable (the pair's I/O thread). */
void net_backend_readable(struct io_source *src, uint32_t events);

/* The control queue: one command per chain, ack in the last byte. */
void net_ctrl_kick(struct virtio_net *net, struct virtio_queue *q);

void net_filter_init(struct net_rx_filter *f);
/* Back to what a device without CTRL_RX does: take every frame. */
void net_filter_reset(struct net_rx_filter *f, const uint8_t mac[ETH_ADDR_LEN]);
bool net_filter_accepts(struct net_rx_filter *f, const uint8_t *frame,
			size_t len);
void net_filter_set_mac(struct net_rx_filter *f,
			const uint8_t mac[ETH_ADDR_LEN]);

/* Steer frames to the first n pairs only (VIRTIO_NET_CTRL_MQ). */
int net_set_active_pairs(struct virtio_net *net, unsigned int n);
/* Let the backend hand over what `features` (VIRTIO_NET_F_GUEST_*) allow. */
int net_set_guest_offloads(struct virtio_net *net, uint64_t features);

#endif
