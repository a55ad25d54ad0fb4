// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net's receive path, on each queue pair's I/O thread under the
 * pair's RX queue lock.
 *
 * A frame goes from the backend straight into the driver's buffers: the
 * receive chains that should hold it are popped first and one readv()
 * fills them, with the pair's bounce buffer (`pending`) as the last
 * vector for whatever runs over. How many chains to pop follows the
 * recent frame sizes (with MRG_RXBUF; one chain without). A frame that
 * runs over takes more chains and gets the rest copied; if the driver
 * has not posted enough, the frame is kept whole in `pending` and waits.
 *
 * When the driver has posted no (or too few) buffers, the backend is no
 * longer watched: frames queue up in the kernel and nothing is dropped;
 * the driver's next RX kick resumes delivery. That is the only RX kick
 * the device wants: while it has buffers and watches the backend, the
 * driver's refills need not wake anyone, and kicks stay off. A frame is
 * dropped only if no buffers of this driver can ever hold it (too big
 * without MRG_RXBUF, more than NET_MAX_RX_CHAINS buffers), is a runt, or
 * the receive filter says it is not for us.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "lkvm/util.h"
#include "net_internal.h"

enum rx_result {
	RX_DELIVERED,		/* one frame delivered or dropped: go on */
	RX_BACKEND_EMPTY,
	RX_NO_BUFFERS,		/* the driver must post (more) buffers */
};

enum rx_fill {
	FILL_OK,		/* the chains hold what was asked */
	FILL_EMPTY,		/* the driver posted no more */
	FILL_LIMIT,		/* NET_MAX_RX_CHAINS or NET_RX_IOV_MAX reached */
	FILL_ERROR,		/* a broken ring: NEEDS_RESET */
};

/* Caller holds the pair's RX queue lock. */
void net_watch_backend(struct net_queue_pair *p, bool watch)
{
	if (watch == p->backend_watched)
		return;
	if (watch)
		watch = !iothread_add(p->iothread, &p->backend_src, EPOLLIN);
	else
		iothread_del(p->iothread, &p->backend_src);
	p->backend_watched = watch;
}

/* Copy between a flat buffer and the iovec stream at offset `off`. */
static void iov_copy(const struct iovec *iov, unsigned int n, size_t off,
		     void *buf, size_t len, bool to_iov)
{
	uint8_t *flat = buf;
	unsigned int i;

	for (i = 0; i < n && len; i++) {
		size_t chunk;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		chunk = MIN(iov[i].iov_len - off, len);
		if (to_iov)
			memcpy((uint8_t *)iov[i].iov_base + off, flat, chunk);
		else
			memcpy(flat, (uint8_t *)iov[i].iov_base + off, chunk);
		flat += chunk;
		len -= chunk;
		off = 0;
	}
}

static void rx_batch_reset(struct net_rx_batch *b)
{
	b->nr = b->nr_iov = b->nr_bad = 0;
	b->cap = 0;
}

/*
 * The frame used the first `used` usable chains (pushed by the caller,
 * one after another as the driver reads them): the bad chains popped
 * before the first unused one go back empty, and everything from that
 * one on goes back to the ring, to be popped again. Chains go back to
 * the ring by count, so none of them may be one already used.
 */
static void rx_batch_finish(struct net_queue_pair *p, struct virtio_queue *q,
			    unsigned int used)
{
	struct net_rx_batch *b = &p->batch;
	unsigned int i, bad_used = 0;

	for (i = 0; i < b->nr_bad && b->bad_after[i] <= used; i++) {
		virtq_push(&q->ring, b->bad_heads[i], 0);
		p->rx_bad_buffers++;
		bad_used++;
	}
	virtq_unpop(&q->ring, b->nr - used + b->nr_bad - bad_used);
	rx_batch_reset(b);
}

/* Give every popped chain back to the ring, unused (but the bad ones). */
static void rx_batch_release(struct net_queue_pair *p, struct virtio_queue *q)
{
	rx_batch_finish(p, q, 0);
}

/* Pop receive chains until they hold `want` bytes. */
static enum rx_fill rx_batch_fill(struct net_queue_pair *p,
				  struct virtio_queue *q, size_t want)
{
	struct net_rx_batch *b = &p->batch;

	while (b->cap < want) {
		struct virtq_chain c;
		int ret;
		uint16_t i;

		if (b->nr == NET_MAX_RX_CHAINS)
			return FILL_LIMIT;
		ret = virtq_pop(&q->ring, &c);
		if (ret < 0) {
			virtio_device_broken(&p->net->vdev, q,
					     virtq_error_name(q->ring.error));
			return FILL_ERROR;
		}
		if (!ret)
			return FILL_EMPTY;
		/*
		 * Nothing writable, something readable, or more segments than
		 * readv() takes: no frame can ever go there. Fail that buffer
		 * (give it back empty, rx_batch_finish()) rather than stall
		 * the ring behind it.
		 */
		if (!c.in_len || c.nr_out || c.nr_in > NET_RX_IOV_MAX) {
			if (b->nr_bad == NET_MAX_RX_BAD) {
				virtq_unpop(&q->ring, 1);
				return FILL_LIMIT;
			}
			b->bad_heads[b->nr_bad] = c.head;
			b->bad_after[b->nr_bad++] = b->nr;
			continue;
		}
		if (c.nr_in > NET_RX_IOV_MAX - b->nr_iov) {
			virtq_unpop(&q->ring, 1);
			return FILL_LIMIT;
		}
		for (i = 0; i < c.nr_in; i++)
			b->iov[b->nr_iov++] = (struct iovec) {
				c.in[i].hva, c.in[i].len };
		b->heads[b->nr] = c.head;
		b->caps[b->nr++] = c.in_len;
		b->cap += c.in_len;
	}
	return FILL_OK;
}

/*
 * The frame's `len` bytes are in the batch's buffers: hand the chains it
 * used to the driver, the rest back to the ring. num_buffers (header
 * bytes 10-11, there unless the legacy 10-byte header) says how many.
 */
static void rx_batch_complete(struct net_queue_pair *p, struct virtio_queue *q,
			      size_t len)
{
	struct net_rx_batch *b = &p->batch;
	uint32_t lens[NET_MAX_RX_CHAINS];
	unsigned int used = 0, i;

	p->rx_bytes += len;
	while (used < b->nr && (len || !used)) {
		lens[used] = MIN((size_t)b->caps[used], len);
		len -= lens[used++];
	}
	if (p->net->hdr_len == NET_HDR_LEN) {
		uint16_t nbufs = htole16(used);

		iov_copy(b->iov, b->nr_iov, 10, &nbufs, sizeof(nbufs), true);
	}
	for (i = 0; i < used; i++)
		virtq_push(&q->ring, b->heads[i], lens[i]);
	rx_batch_finish(p, q, used);
	q->requests++;
}

/* A frame waits in `pending` for buffers: copy it in once there are. */
static enum rx_result net_rx_pending(struct net_queue_pair *p,
				     struct virtio_queue *q)
{
	bool mrg = virtio_has_feature(&p->net->vdev, VIRTIO_NET_F_MRG_RXBUF);
	enum rx_fill fill = rx_batch_fill(p, q, mrg ? p->pending_len : 1);

	if (fill == FILL_ERROR || !p->batch.nr) {
		rx_batch_release(p, q);
		return RX_NO_BUFFERS;
	}
	if (p->batch.cap < p->pending_len) {
		rx_batch_release(p, q);
		if (mrg && fill == FILL_EMPTY)
			return RX_NO_BUFFERS;
		p->rx_dropped++;	/* no buffers of this driver can hold it */
		p->pending_len = 0;
		return RX_DELIVERED;
	}
	iov_copy(p->batch.iov, p->batch.nr_iov, 0, p->pending, p->pending_len,
		 true);
	rx_batch_complete(p, q, p->pending_len);
	p->pending_len = 0;
	return RX_DELIVERED;
}

/*
 * The frame (len bytes) ran over the batch into `pending`: take more
 * chains for the rest, or keep the frame whole in `pending` until the
 * driver posts them.
 */
static enum rx_result net_rx_overflow(struct net_queue_pair *p,
				      struct virtio_queue *q, size_t len)
{
	struct net_rx_batch *b = &p->batch;
	size_t in_guest = b->cap, over = len - in_guest;
	unsigned int first_new = b->nr_iov;
	enum rx_fill fill = rx_batch_fill(p, q, len);

	if (b->cap >= len) {
		iov_copy(b->iov + first_new, b->nr_iov - first_new, 0,
			 p->pending, over, true);
		rx_batch_complete(p, q, len);
		return RX_DELIVERED;
	}
	if (fill != FILL_EMPTY) {
		rx_batch_release(p, q);
		p->rx_dropped++;	/* no buffers of this driver can hold it */
		return RX_DELIVERED;
	}
	memmove(p->pending + in_guest, p->pending, over);
	iov_copy(b->iov, first_new, 0, p->pending, in_guest, false);
	p->pending_len = len;
	rx_batch_release(p, q);
	return RX_NO_BUFFERS;
}

/*
 * readv() one frame into the batch; -1 when the backend has none, or has
 * ended (0: its other end closed, which no frame of a tap or a datagram
 * socket reads as; watching it would find it readable for ever).
 */
static ssize_t net_rx_readv(struct net_queue_pair *p)
{
	struct net_rx_batch *b = &p->batch;
	ssize_t n;

	b->iov[b->nr_iov] = (struct iovec) { p->pending, sizeof(p->pending) };
	do {
		n = readv(p->fd, b->iov, b->nr_iov + 1);
	} while (n < 0 && errno == EINTR);
	/* EBADFD: a detached tap queue; anything but EAGAIN: stop watching. */
	if ((n < 0 && errno != EAGAIN) || n == 0) {
		net_watch_backend(p, false);
		return -1;
	}
	return n;
}

/* Whether the frame read into the batch is one to deliver. */
static bool net_rx_wanted(struct net_queue_pair *p, size_t len)
{
	struct virtio_net *net = p->net;
	uint8_t dst[ETH_ADDR_LEN];

	if (len < net->hdr_len + ETH_ADDR_LEN || len > sizeof(p->pending)) {
		p->rx_dropped++;	/* a runt, or cut short */
		return false;
	}
	iov_copy(p->batch.iov, p->batch.nr_iov + 1, net->hdr_len, dst,
		 sizeof(dst), false);
	if (!net_filter_accepts(&net->filter, dst, sizeof(dst))) {
		p->rx_filtered++;
		return false;
	}
	return true;
}

static enum rx_result net_rx_direct(struct net_queue_pair *p,
				    struct virtio_queue *q)
{
	bool mrg = virtio_has_feature(&p->net->vdev, VIRTIO_NET_F_MRG_RXBUF);
	enum rx_fill fill = rx_batch_fill(p, q, mrg ? MAX(p->rx_estimate, 1) : 1);
	ssize_t n;

	if (fill == FILL_ERROR || !p->batch.nr) {
		rx_batch_release(p, q);
		return RX_NO_BUFFERS;
	}
	n = net_rx_readv(p);
	if (n < 0) {
		rx_batch_release(p, q);
		return RX_BACKEND_EMPTY;
	}
	/* Frames of a flow come in similar sizes: size the next batch. */
	p->rx_estimate = (p->rx_estimate * 7 + n) / 8;
	if (!net_rx_wanted(p, n)) {
		rx_batch_release(p, q);
		return RX_DELIVERED;
	}
	if ((size_t)n <= p->batch.cap) {
		rx_batch_complete(p, q, n);
		return RX_DELIVERED;
	}
	if (!mrg) {
		rx_batch_release(p, q);
		p->rx_dropped++;	/* bigger than this driver's buffers */
		return RX_DELIVERED;
	}
	return net_rx_overflow(p, q, n);
}

/*
 * Deliver frames while the driver has buffers; caller holds q->lock. A
 * turn takes at most the serve loop's budget of frames (delivered or
 * dropped) or bytes; the rest waits for the thread's next turn: the
 * backend stays watched, and its level-triggered readiness comes back at
 * once, after the thread's other queues had theirs (a flood, even one
 * the filter drops, starves no one).
 */
void net_rx(struct net_queue_pair *p, struct virtio_queue *q)
{
	uint64_t bytes0 = p->rx_bytes;
	unsigned int frames = 0;

	for (;;) {
		/* the driver's index, not a count: popping lowers a count */
		uint16_t posted = virtq_avail_idx(&q->ring);
		enum rx_result r = p->pending_len ? net_rx_pending(p, q) :
						    net_rx_direct(p, q);

		if (r == RX_DELIVERED) {
			if (++frames >= VIRTIO_SERVE_BUDGET_CHAINS ||
			    p->rx_bytes - bytes0 >= VIRTIO_SERVE_BUDGET_BYTES)
				break;
			continue;
		}
		if (r == RX_BACKEND_EMPTY)
			break;
		/*
		 * Out of buffers: wait for the driver's kick, not the
		 * backend. Try again at once only if buffers came in meanwhile
		 * (the re-check that closes the lost-kick window).
		 */
		net_watch_backend(p, false);
		virtq_notify_on_next(&q->ring);
		if (q->ring.error || virtq_avail_idx(&q->ring) == posted)
			break;
		/*
		 * Buffers came in meanwhile, and the driver that posted them
		 * may not kick (it saw no avail_event to pass): the backend
		 * is ours to watch again, or frames would wait for a kick
		 * that never comes.
		 */
		net_watch_backend(p, true);
		virtq_enable_notify(&q->ring, false);
	}
	/*
	 * Kicks off means the backend is watched: a backend that failed, or
	 * could not be watched, waits for the driver's next kick instead.
	 */
	if (!p->backend_watched && !q->ring.error)
		virtq_notify_on_next(&q->ring);
	virtio_queue_publish(&p->net->vdev, q);
}

void net_backend_readable(struct io_source *src, uint32_t events)
{
	struct net_queue_pair *p = src->opaque;
	struct virtio_queue *q = net_pair_rxq(p);

	pthread_mutex_lock(&q->lock);
	if (q->live)
		net_rx(p, q);
	else
		net_watch_backend(p, false);
	pthread_mutex_unlock(&q->lock);
}

/* Caller holds the pair's RX queue lock: watch and serve it again. */
void net_rx_resume(struct net_queue_pair *p, struct virtio_queue *q)
{
	net_watch_backend(p, true);
	virtq_enable_notify(&q->ring, false);
	net_rx(p, q);
}
