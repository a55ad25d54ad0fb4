// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net over a tap. Queue 0 receives, queue 1 transmits; both are
 * served on the device's I/O thread, which also watches the tap.
 *
 * Offloads (partial checksums, TSO both ways) follow what the driver
 * negotiates, through the tap's own offload flags.
 *
 * TX: every chain is [virtio-net header + frame], written to the tap as
 * it is (the tap speaks the same 12-byte header).
 * RX: a frame read from the tap is copied into as many receive buffers as
 * it needs (MRG_RXBUF; num_buffers in the first header says how many).
 * When the driver has posted too few, the frame waits in `pending`, the
 * tap is no longer watched (frames queue up in the kernel, nothing is
 * dropped), and the driver's next RX kick resumes delivery.
 */
#include <errno.h>
#include <linux/if_tun.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/net.h"
#include "lkvm/vm.h"

#define NET_QUEUE_SIZE		256
#define NET_RXQ			0
#define NET_TXQ			1
#define NET_HDR_LEN		12	/* virtio_net_hdr_mrg_rxbuf */
#define NET_HDR_LEN_LEGACY	10	/* virtio_net_hdr: legacy, no MRG_RXBUF */
#define NET_MAX_FRAME		(65535 + NET_HDR_LEN)
#define NET_MAX_RX_CHAINS	64
#define PCI_CLASS_NETWORK	0x020000

/*
 * The config is fixed after creation. Everything else belongs to the I/O
 * thread, under the RX queue's lock (pending frame, tap watch state) or
 * the TX queue's lock (nothing but the tap's write side).
 */
struct virtio_net {
	struct virtio_device vdev;
	struct virtio_net_config config;
	struct tap tap;
	struct iothread *iothread;
	struct io_source tap_src;
	bool tap_watched;
	size_t pending_len;		/* a frame read but not delivered */
	unsigned int hdr_len;		/* 12, or 10 for a legacy driver */
	uint64_t rx_dropped;
	uint64_t tx_dropped;
	uint8_t pending[NET_MAX_FRAME];
};

static struct virtio_queue *rxq(struct virtio_net *net)
{
	return &net->vdev.queues[NET_RXQ];
}

/* Caller holds the RX queue's lock. */
static void net_watch_tap(struct virtio_net *net, bool watch)
{
	if (watch == net->tap_watched)
		return;
	if (watch)
		watch = !iothread_add(net->iothread, &net->tap_src, EPOLLIN);
	else
		iothread_del(net->iothread, &net->tap_src);
	net->tap_watched = watch;
}

/*
 * Copy the pending frame into receive chains. Returns false (and puts the
 * chains back) when the driver has not posted enough buffers for it.
 */
static bool net_rx_deliver(struct virtio_net *net, struct virtio_queue *q)
{
	bool mrg = virtio_has_feature(&net->vdev, VIRTIO_NET_F_MRG_RXBUF);
	uint16_t heads[NET_MAX_RX_CHAINS], nr = 0;
	uint32_t lens[NET_MAX_RX_CHAINS];
	uint8_t *nbufs_at[2] = { NULL, NULL };
	size_t off = 0;
	uint16_t i;

	while (off < net->pending_len) {
		struct virtq_chain c;
		uint32_t len = 0;
		int ret = nr < NET_MAX_RX_CHAINS ? virtq_pop(&q->ring, &c) : 0;

		if (ret > 0 && !mrg && c.in_len < net->pending_len) {
			/* No buffer of this driver can ever hold it: drop it. */
			virtq_unpop(&q->ring, 1);
			net->rx_dropped++;
			return true;
		}
		if (ret <= 0) {
			virtq_unpop(&q->ring, nr);
			if (ret < 0)
				virtio_device_broken(&net->vdev, q,
						     virtq_error_name(q->ring.error));
			if (nr == NET_MAX_RX_CHAINS) {
				net->rx_dropped++;	/* too many buffers */
				return true;
			}
			return false;
		}
		for (i = 0; i < c.nr_in && off < net->pending_len; i++) {
			size_t n = MIN((size_t)c.in[i].len, net->pending_len - off);
			size_t b;

			memcpy(c.in[i].hva, net->pending + off, n);
			/* Remember where num_buffers (header bytes 10-11) went. */
			for (b = 10; b < 12; b++)
				if (off <= b && b < off + n)
					nbufs_at[b - 10] = (uint8_t *)c.in[i].hva + (b - off);
			off += n;
			len += n;
		}
		heads[nr] = c.head;
		lens[nr++] = len;
	}
	/* With the 12-byte header num_buffers is always there (1 without MRG). */
	if (net->hdr_len == NET_HDR_LEN && nbufs_at[0] && nbufs_at[1]) {
		*nbufs_at[0] = nr & 0xff;
		*nbufs_at[1] = nr >> 8;
	}
	for (i = 0; i < nr; i++)
		virtq_push(&q->ring, heads[i], lens[i]);
	q->requests++;
	return true;
}

/* Deliver frames while the driver has buffers; caller holds q->lock. */
static void net_rx(struct virtio_net *net, struct virtio_queue *q)
{
	for (;;) {
		uint16_t posted;

		if (!net->pending_len) {
			ssize_t n = read(net->tap.fd, net->pending,
					 sizeof(net->pending));

			if (n < (ssize_t)net->hdr_len) {
				if (n >= 0)
					net->rx_dropped++;	/* runt */
				if (n < 0 && errno == EINTR)
					continue;
				if (n >= 0)
					continue;
				break;	/* EAGAIN: the tap is empty */
			}
			net->pending_len = n;
		}
		posted = virtq_avail_count(&q->ring);
		if (net_rx_deliver(net, q)) {
			net->pending_len = 0;
			continue;
		}
		/*
		 * Out of buffers: wait for the driver's kick, not the tap. Try
		 * again at once only if buffers came in meanwhile (the re-check
		 * that closes the lost-kick window).
		 */
		net_watch_tap(net, false);
		virtq_notify_on_next(&q->ring);
		if (q->ring.error || virtq_avail_count(&q->ring) <= posted)
			break;
	}
	virtio_queue_publish(&net->vdev, q);
}

static void net_tap_readable(struct io_source *src, uint32_t events)
{
	struct virtio_net *net = src->opaque;
	struct virtio_queue *q = rxq(net);

	pthread_mutex_lock(&q->lock);
	if (q->live)
		net_rx(net, q);
	else
		net_watch_tap(net, false);
	pthread_mutex_unlock(&q->lock);
}

static void net_tx_one(struct virtio_net *net, const struct virtq_chain *c)
{
	struct iovec iov[NET_QUEUE_SIZE];
	unsigned int i;

	if (c->nr_in || c->out_len < net->hdr_len || c->nr_out > NET_QUEUE_SIZE) {
		net->tx_dropped++;	/* not a frame the spec allows */
		return;
	}
	for (i = 0; i < c->nr_out; i++)
		iov[i] = (struct iovec) { c->out[i].hva, c->out[i].len };
	while (writev(net->tap.fd, iov, c->nr_out) < 0) {
		if (errno != EINTR) {
			net->tx_dropped++;	/* tap down or its queue full */
			break;
		}
	}
}

static void net_tx(struct virtio_net *net, struct virtio_queue *q)
{
	struct virtq_chain c;
	int ret;

	do {
		virtq_enable_notify(&q->ring, false);
		while ((ret = virtq_pop(&q->ring, &c)) > 0) {
			net_tx_one(net, &c);
			q->requests++;
			virtq_push(&q->ring, c.head, 0);
		}
		virtio_queue_publish(&net->vdev, q);
		if (ret < 0) {
			virtio_device_broken(&net->vdev, q,
					     virtq_error_name(q->ring.error));
			return;
		}
		virtq_enable_notify(&q->ring, true);
	} while (virtq_has_avail(&q->ring));
}

static void net_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_net *net = vdev->priv;

	if (q->index == NET_TXQ) {
		net_tx(net, q);
		return;
	}
	/* New receive buffers: deliver what waits, then watch the tap. */
	net_watch_tap(net, true);
	net_rx(net, q);
}

static void net_reset(struct virtio_device *vdev)
{
	struct virtio_net *net = vdev->priv;
	struct virtio_queue *q = rxq(net);

	pthread_mutex_lock(&q->lock);
	net_watch_tap(net, false);
	net->pending_len = 0;
	pthread_mutex_unlock(&q->lock);
	tap_set_offloads(&net->tap, 0);
}

/*
 * The tap may give us what the driver accepts: partially checksummed
 * frames (GUEST_CSUM) and large TCP segments (GUEST_TSO4/6), which the
 * header then describes; what the driver sends (CSUM, HOST_TSO) the tap
 * takes in any case.
 */
static void net_driver_ok(struct virtio_device *vdev)
{
	struct virtio_net *net = vdev->priv;
	unsigned int flags = 0;

	/* A legacy driver without MRG_RXBUF uses the 10-byte header. */
	net->hdr_len = virtio_has_feature(vdev, VIRTIO_F_VERSION_1) ||
		       virtio_has_feature(vdev, VIRTIO_NET_F_MRG_RXBUF) ?
		       NET_HDR_LEN : NET_HDR_LEN_LEGACY;
	if (tap_set_header_len(&net->tap, net->hdr_len))
		pr_warn("tap '%s': cannot set a %u-byte header", net->tap.ifname,
			net->hdr_len);
	if (!net->tap.offloads)
		return;
	if (virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_CSUM)) {
		flags |= TUN_F_CSUM;
		if (virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_TSO4))
			flags |= TUN_F_TSO4;
		if (virtio_has_feature(vdev, VIRTIO_NET_F_GUEST_TSO6))
			flags |= TUN_F_TSO6;
	}
	if (tap_set_offloads(&net->tap, flags))
		pr_warn("tap '%s': cannot set offloads %#x", net->tap.ifname,
			flags);
}

static const struct virtio_device_ops net_ops = {
	.name = "net",
	.device_id = VIRTIO_ID_NET,
	.queue_kick = net_queue_kick,
	.reset = net_reset,
	.driver_ok = net_driver_ok,
};

static uint64_t net_features(const struct virtio_net *net)
{
	uint64_t f = (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_STATUS) |
		     (1ULL << VIRTIO_NET_F_MRG_RXBUF);

	if (net->tap.offloads)
		f |= (1ULL << VIRTIO_NET_F_CSUM) |
		     (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO4) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO6) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
		     (1ULL << VIRTIO_NET_F_GUEST_TSO6);
	return f;
}

struct virtio_net *virtio_net_create(struct vm *vm,
				     const struct virtio_net_options *opts)
{
	struct virtio_net *net = vm_zalloc(vm, sizeof(*net));

	if (!net)
		return NULL;
	net->tap.fd = -1;
	net->hdr_len = NET_HDR_LEN;
	if (tap_open(&net->tap, opts->net.tapif[0] ? opts->net.tapif : NULL))
		return NULL;
	net->tap_src = (struct io_source) {
		.fd = net->tap.fd, .handler = net_tap_readable, .opaque = net,
	};
	net->iothread = iothread_create(vm, "net-io");
	if (!net->iothread ||
	    virtio_device_init(&net->vdev, vm, &net_ops, net, 2, NET_QUEUE_SIZE,
			       net->iothread, opts->use_ioeventfd))
		goto fail;
	memcpy(net->config.mac, opts->net.mac, 6);
	net->config.status = VIRTIO_NET_S_LINK_UP;
	net->vdev.host_features |= net_features(net);
	net->vdev.config = (uint8_t *)&net->config;
	/* Up to status: no multi-queue or MTU fields are offered. */
	net->vdev.config_size = offsetof(struct virtio_net_config,
					 max_virtqueue_pairs);
	if (virtio_transport_attach(vm, &net->vdev, opts->transport,
				    PCI_CLASS_NETWORK) ||
	    iothread_start(net->iothread))
		goto fail;
	return net;
fail:
	iothread_destroy(net->iothread);
	net->iothread = NULL;
	tap_close(&net->tap);
	return NULL;
}

void virtio_net_destroy(struct virtio_net *net)
{
	if (!net)
		return;
	if (!net->iothread)
		return;	/* already stopped */
	iothread_stop(net->iothread);
	virtio_device_stop(&net->vdev);
	iothread_destroy(net->iothread);
	net->iothread = NULL;
	tap_close(&net->tap);
}

struct virtio_device *virtio_net_device(struct virtio_net *net)
{
	return &net->vdev;
}
