// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for virtio-net (make fuzz-net): the real device
 * (virtio/net.c, net_rx.c, net_ctrl.c) on a fake VM with two queue pairs,
 * each backend queue one end of a socket pair the harness holds as the
 * "tap". Queues are served from the fuzzer's thread (no ioeventfd; the
 * pairs' I/O thread is a pool's, never started); the harness calls the
 * backend's readiness handlers itself, as that thread would.
 *
 * Each input negotiates a feature set (modern or legacy, MRG_RXBUF or
 * not, MQ, offloads), then sends control commands, transmits chains with
 * fuzzed virtio-net headers and layouts, and posts receive chains (good,
 * short, read-only, empty, mixed) for frames it feeds the backend.
 * Checked: every well-formed TX chain reaches the backend byte for byte,
 * in order, or is counted dropped, and nothing else does; every control
 * command is acked as the spec says, the ack where the spec puts it; every
 * frame delivered equals one the backend sent, in order, spread over as
 * many chains as num_buffers says, each used length within the chain's
 * writable bytes; no byte of guest memory outside the writable buffers
 * changes; a broken ring, and only that, needs a reset.
 */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lkvm/guest_mem.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/net.h"
#include "../../virtio/net_internal.h"
#include "../unit/fake_vm.h"
#include "fuzz_common.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

#define RAM_GPA		0x100000ULL
#define RAM_SIZE	0x40000ULL
#define QSIZE		64
#define RING_BYTES	0x1000		/* one queue's rings */
#define NR_PAIRS	2
#define MAX_FRAMES	16
#define MAX_FRAME_LEN	(65535 + NET_HDR_LEN)
#define SNDBUF		(96 * 1024)

static const uint8_t our_mac[ETH_ADDR_LEN] = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 };

static struct {
	struct fake_vm fake;
	struct iothread_pool pool;
	struct virtio_net *net;
	struct virtio_device *vdev;
	int peer[NR_PAIRS];		/* the "tap" side of each backend queue */
	uint8_t *ram, *before;
	uint8_t *may_write;		/* per byte: inside a writable buffer */
	uint8_t frame[MAX_FRAME_LEN];
	int offload_fail;		/* the fake backend refuses offloads */
} g;

/* ---- a fake backend (the transport: fuzz_common.h) ---- */

static int be_header_len(struct net_backend *be, int len)
{
	return 0;
}

static int be_offloads(struct net_backend *be, unsigned int flags)
{
	return g.offload_fail ? -1 : 0;
}

static int be_enable_queue(struct net_backend *be, unsigned int idx,
			   bool enable)
{
	return 0;
}

static void be_close(struct net_backend *be)
{
	unsigned int i;

	for (i = 0; i < be->nr_queues; i++)
		close(be->fds[i]);
}

static const struct net_backend_ops be_ops = {
	.set_header_len = be_header_len,
	.set_offloads = be_offloads,
	.enable_queue = be_enable_queue,
	.close = be_close,
};

static void setup_once(void)
{
	struct net_backend be = { .ops = &be_ops, .nr_queues = NR_PAIRS,
				  .offloads = true };
	struct virtio_net_options opts = {
		.net = { .mode = NET_MODE_USER, .queues = NR_PAIRS },
		.pool = &g.pool,
		.backend = &be,
	};
	int i, sv[2], sndbuf = SNDBUF;

	if (g.ram)
		return;
	log_threshold = LOG_SILENT;
	g.ram = aligned_alloc(4096, RAM_SIZE);
	g.before = malloc(RAM_SIZE);
	g.may_write = malloc(RAM_SIZE);
	CHECK(g.ram && g.before && g.may_write);
	CHECK(!fake_vm_init(&g.fake, 0, 1));
	CHECK(!guest_mem_add(&g.fake.vm.mem, RAM_GPA, RAM_SIZE, g.ram));
	CHECK(!iothread_pool_create(&g.pool, &g.fake.vm, 1));
	for (i = 0; i < NR_PAIRS; i++) {
		CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
				  SOCK_CLOEXEC, 0, sv));
		CHECK(!setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
				  sizeof(sndbuf)));
		be.fds[i] = sv[0];
		g.peer[i] = sv[1];
	}
	snprintf(be.name, sizeof(be.name), "fuzz");
	memcpy(opts.net.mac, our_mac, ETH_ADDR_LEN);
	g.net = virtio_net_create(&g.fake.vm, &opts);
	CHECK(g.net);
	g.vdev = virtio_net_device(g.net);
	virtio_device_attach(g.vdev, &fz_transport);
}

/* ---- guest memory and rings ---- */

static uint8_t *ram_ptr(uint64_t gpa, uint64_t len)
{
	return guest_mem_ptr(&g.fake.vm.mem, gpa, len);
}

struct mbuf {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

struct mchain {
	uint16_t head;
	unsigned int nr;
	struct mbuf b[8];
	bool ring_ok;			/* the ring rules take it */
};

/* One queue as the driver sees it. */
struct dq {
	unsigned int index;
	uint64_t desc, avail, used;
	uint16_t next_desc, avail_idx, used_seen;
	unsigned int nr_chains;
	struct mchain chains[QSIZE];
};

static uint64_t data_next, data_end;

static bool data_alloc(uint32_t len, uint64_t *gpa)
{
	uint64_t a = data_next + (len & 1);

	if (a + len > data_end)
		return false;
	*gpa = a;
	data_next = ALIGN_UP(a + len, 8);
	return true;
}

static void put16(uint64_t gpa, uint16_t v)
{
	v = htole16(v);
	memcpy(ram_ptr(gpa, 2), &v, 2);
}

static uint16_t get16(uint64_t gpa)
{
	uint16_t v;

	memcpy(&v, ram_ptr(gpa, 2), 2);
	return le16toh(v);
}

static void dq_init(struct dq *q, unsigned int index, unsigned int slot)
{
	memset(q, 0, offsetof(struct dq, chains));
	q->index = index;
	q->desc = RAM_GPA + (uint64_t)slot * RING_BYTES;
	q->avail = q->desc + 16 * QSIZE;
	q->used = ALIGN_UP(q->avail + 6 + 2 * QSIZE, 4);
}

static void set_desc(uint64_t gpa, const struct mbuf *b, bool next,
		     uint16_t next_idx)
{
	struct vring_desc d = {
		.addr = htole64(b->gpa), .len = htole32(b->len),
		.flags = htole16((b->write ? VRING_DESC_F_WRITE : 0) |
				 (next ? VRING_DESC_F_NEXT : 0)),
		.next = htole16(next_idx),
	};

	memcpy(ram_ptr(gpa, 16), &d, 16);
}

/* Put c in the descriptor table and the avail ring (not yet published). */
static bool dq_add(struct dq *q, struct mchain *c)
{
	bool seen_write = false;
	unsigned int i;

	if (!c->nr || q->next_desc + c->nr > QSIZE)
		return false;
	c->head = q->next_desc;
	c->ring_ok = true;
	for (i = 0; i < c->nr; i++) {
		set_desc(q->desc + 16ULL * (c->head + i), &c->b[i],
			 i + 1 < c->nr, c->head + i + 1);
		if ((!c->b[i].write && seen_write) ||
		    !ram_ptr(c->b[i].gpa, c->b[i].len))
			c->ring_ok = false;
		seen_write |= c->b[i].write;
		if (c->b[i].write && ram_ptr(c->b[i].gpa, c->b[i].len))
			memset(g.may_write + (c->b[i].gpa - RAM_GPA), 1,
			       c->b[i].len);
	}
	q->next_desc += c->nr;
	put16(q->avail + 4 + 2 * (q->avail_idx % QSIZE), c->head);
	q->avail_idx++;
	q->chains[q->nr_chains++] = *c;
	return true;
}

static void dq_publish(struct dq *q)
{
	put16(q->avail + 2, q->avail_idx);
}

static void dq_start(struct dq *q)
{
	struct virtio_queue *vq = &g.vdev->queues[q->index];

	pthread_mutex_lock(&g.vdev->lock);
	vq->size = QSIZE;
	vq->desc_gpa = q->desc;
	vq->avail_gpa = q->avail;
	vq->used_gpa = q->used;
	virtio_queue_set_enabled(g.vdev, vq, true);
	pthread_mutex_unlock(&g.vdev->lock);
}

/* The next used entry, or false. */
static bool dq_next_used(struct dq *q, uint32_t *id, uint32_t *len)
{
	uint32_t e[2];

	if (get16(q->used + 2) == q->used_seen)
		return false;
	memcpy(e, ram_ptr(q->used + 4 + 8 * (q->used_seen % QSIZE), 8), 8);
	q->used_seen++;
	*id = le32toh(e[0]);
	*len = le32toh(e[1]);
	return true;
}

static const struct mchain *dq_chain(const struct dq *q, uint32_t head)
{
	unsigned int i;

	for (i = 0; i < q->nr_chains; i++)
		if (q->chains[i].head == head)
			return &q->chains[i];
	return NULL;
}

static uint32_t chain_in_len(const struct mchain *c)
{
	uint32_t n = 0;
	unsigned int i;

	for (i = 0; i < c->nr; i++)
		n += c->b[i].write ? c->b[i].len : 0;
	return n;
}

/* A chain's first `len` writable bytes, flattened. */
static void chain_gather_in(const struct mchain *c, uint8_t *dst, uint32_t len)
{
	unsigned int i;

	for (i = 0; i < c->nr && len; i++) {
		uint32_t n = MIN(len, c->b[i].len);

		if (!c->b[i].write)
			continue;
		memcpy(dst, ram_ptr(c->b[i].gpa, n), n);
		dst += n;
		len -= n;
	}
}

static bool broken(void)
{
	return virtio_get_status(g.vdev) & VIRTIO_CONFIG_S_NEEDS_RESET;
}

static bool chains_ok(const struct dq *q)
{
	unsigned int i;

	for (i = 0; i < q->nr_chains; i++)
		if (!q->chains[i].ring_ok)
			return false;
	return true;
}

/* A buffer of len bytes: usually in RAM, now and then not. */
static bool gen_buf(struct input *in, struct mbuf *b, uint32_t len, bool write)
{
	uint8_t m = take8(in);

	b->len = len;
	b->write = write;
	if (m == 0xff) {
		b->gpa = RAM_GPA + RAM_SIZE - len / 2 - 1;	/* across the end */
		return true;
	}
	if (m == 0xfe)
		b->write = !write;
	return data_alloc(len, &b->gpa);
}

/* Guest memory changed only where the device may write. */
static void snapshot(void)
{
	memcpy(g.before, g.ram, RAM_SIZE);
}

/* No coverage in here: 256 KiB of compares would bury the device's. */
__attribute__((no_sanitize("coverage")))
static void check_untouched(void)
{
	uint64_t i, j;

	for (i = 0; i < RAM_SIZE; i += 64) {
		if (!memcmp(g.ram + i, g.before + i, 64))
			continue;
		for (j = i; j < i + 64; j++)
			CHECK(g.may_write[j] || g.ram[j] == g.before[j]);
	}
}

/* ---- the control queue ---- */

static size_t gen_ctrl_data(struct input *in, uint8_t *buf, uint8_t cls)
{
	size_t len = 0, n, i;
	uint32_t cnt;

	switch (cls) {
	case VIRTIO_NET_CTRL_MAC:
		for (i = 0; i < 2; i++) {
			uint8_t m = take8(in);

			cnt = m >= 0xf0 ? take32(in) : m % 4 ? m % 8 : 65;
			memcpy(buf + len, &(uint32_t){ htole32(cnt) }, 4);
			len += 4;
			n = MIN((size_t)cnt, (size_t)(m & 0x80 ? cnt - 1 : cnt));
			n = MIN(n, (size_t)80);
			for (; n; n--, len += 6)
				memcpy(buf + len, our_mac, 6), buf[len + 5] = take8(in);
		}
		return len;
	case VIRTIO_NET_CTRL_MQ:
		memcpy(buf, &(uint16_t){ htole16(take8(in) % 4) }, 2);
		return 2;
	case VIRTIO_NET_CTRL_GUEST_OFFLOADS:
		memcpy(buf, &(uint64_t){ htole64((uint64_t)take8(in) << 7) }, 8);
		return 8;
	default:
		n = take8(in) % 8;
		for (i = 0; i < n; i++)
			buf[i] = take8(in) % 3;
		return n;
	}
}

/* What the spec and the offered features make of one command. */
static uint8_t model_ctrl(const uint8_t *buf, size_t len)
{
	const uint64_t dyn = (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
			     (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
			     (1ULL << VIRTIO_NET_F_GUEST_TSO6);
	const uint8_t *d = buf + 2;
	size_t dl = len - 2;
	uint64_t off;
	uint32_t a, b;
	uint16_t pairs;

	if (len < 2)
		return VIRTIO_NET_ERR;
	switch (buf[0]) {
	case VIRTIO_NET_CTRL_RX:
		if (!virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_RX) ||
		    dl != 1 || buf[1] > VIRTIO_NET_CTRL_RX_NOBCAST)
			return VIRTIO_NET_ERR;
		return buf[1] <= VIRTIO_NET_CTRL_RX_ALLMULTI ||
		       virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_RX_EXTRA) ?
		       VIRTIO_NET_OK : VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_MAC:
		if (!virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		if (buf[1] == VIRTIO_NET_CTRL_MAC_ADDR_SET)
			return dl == 6 && virtio_has_feature(g.vdev,
					VIRTIO_NET_F_CTRL_MAC_ADDR) ?
			       VIRTIO_NET_OK : VIRTIO_NET_ERR;
		if (buf[1] != VIRTIO_NET_CTRL_MAC_TABLE_SET || dl < 4)
			return VIRTIO_NET_ERR;
		memcpy(&a, d, 4);
		a = le32toh(a);
		if ((dl - 4) / 6 < a || dl - 4 - 6ULL * a < 4)
			return VIRTIO_NET_ERR;
		memcpy(&b, d + 4 + 6ULL * a, 4);
		b = le32toh(b);
		return dl - 8 - 6ULL * a == 6ULL * b ? VIRTIO_NET_OK :
						       VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_MQ:
		if (buf[1] || dl != 2 || !virtio_has_feature(g.vdev, VIRTIO_NET_F_MQ))
			return VIRTIO_NET_ERR;
		memcpy(&pairs, d, 2);
		pairs = le16toh(pairs);
		return pairs >= 1 && pairs <= NR_PAIRS ? VIRTIO_NET_OK :
							 VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_GUEST_OFFLOADS:
		if (buf[1] || dl != 8 ||
		    !virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_GUEST_OFFLOADS))
			return VIRTIO_NET_ERR;
		memcpy(&off, d, 8);
		off = le64toh(off);
		if (off & ~(g.vdev->guest_features & dyn))
			return VIRTIO_NET_ERR;
		return g.offload_fail ? VIRTIO_NET_ERR : VIRTIO_NET_OK;
	default:
		return VIRTIO_NET_ERR;
	}
}

static void phase_ctrl(struct input *in, struct dq *q)
{
	static uint8_t cmd[2 + 8 + 2 * 80 * 6];
	uint8_t nr = take8(in) % 6;
	unsigned int k, i, first = q->nr_chains;

	for (k = 0; k < nr; k++) {
		static const uint8_t classes[] = { VIRTIO_NET_CTRL_RX,
			VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MQ,
			VIRTIO_NET_CTRL_GUEST_OFFLOADS, 2, 3, 6 };
		struct mchain c = { 0 };
		uint8_t shape = take8(in);
		size_t len, off = 0;

		cmd[0] = classes[take8(in) % ARRAY_SIZE(classes)];
		cmd[1] = take8(in) % 7;
		len = 2 + gen_ctrl_data(in, cmd + 2, cmd[0]);
		if (shape & 0x80)
			len = take8(in) % (len + 2);	/* cut or stretched */
		/* readable: 1-3 pieces; writable: 0-2, maybe empty */
		for (i = 0; i < 1 + shape % 3 && c.nr < 6; i++) {
			size_t n = i == (unsigned)shape % 3 ? len - off :
				   MIN(len - off, (size_t)take8(in) % 8);

			if (!gen_buf(in, &c.b[c.nr], n, false))
				break;
			if (!c.b[c.nr].write && ram_ptr(c.b[c.nr].gpa, n))
				memcpy(ram_ptr(c.b[c.nr].gpa, n), cmd + off, n);
			off += n;
			c.nr++;
		}
		for (i = 0; i < (shape >> 2) % 3 && c.nr < 8; i++)
			if (gen_buf(in, &c.b[c.nr], take8(in) % 3, true))
				c.nr++;
		if (!dq_add(q, &c))
			break;
		for (i = 0; i < c.nr; i++)
			if (c.b[i].write && ram_ptr(c.b[i].gpa, 1))
				*ram_ptr(c.b[i].gpa, 1) = 0xee;
	}
	dq_publish(q);
	snapshot();
	virtio_queue_notify(g.vdev, q->index);
	check_untouched();
	if (!chains_ok(q)) {
		CHECK(broken());
		return;
	}
	CHECK(!broken());
	for (k = first; k < q->nr_chains; k++) {
		const struct mchain *c = &q->chains[k];
		uint32_t id, len, out = 0;
		uint8_t *ack = NULL;

		CHECK(dq_next_used(q, &id, &len));
		CHECK(id == c->head);
		/* the command as the chain holds it, the ack where it goes */
		for (i = 0; i < c->nr; i++) {
			if (!c->b[i].write && out + c->b[i].len <= sizeof(cmd))
				memcpy(cmd + out, ram_ptr(c->b[i].gpa, c->b[i].len),
				       c->b[i].len);
			if (!c->b[i].write)
				out += c->b[i].len;
			else if (c->b[i].len && !ack)
				ack = ram_ptr(c->b[i].gpa, 1);
		}
		CHECK(len == (ack ? 1u : 0u));
		if (ack)
			CHECK(*ack == (out <= sizeof(cmd) ? model_ctrl(cmd, out) :
							    VIRTIO_NET_ERR));
	}
}

/* ---- TX: every well-formed chain to the backend, as it is ---- */

static void fill_bytes(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 24;
	}
}

static uint32_t frame_len(struct input *in, unsigned int hdr_len)
{
	uint8_t m = take8(in);

	if (m < 0xa0)
		return hdr_len + 14 + m * 8;
	if (m < 0xe0)
		return m & 0x1f;			/* runts, headers cut */
	if (m < 0xfc)
		return take16(in) % 9000;
	return MAX_FRAME_LEN - (m & 3) * 3000;		/* up to 64 KiB */
}

/* Is this datagram the chain's readable bytes, in order? */
static bool tx_matches(const struct mchain *c, const uint8_t *dg, size_t n)
{
	size_t off = 0;
	unsigned int i;

	for (i = 0; i < c->nr; i++) {
		if (off + c->b[i].len > n ||
		    memcmp(dg + off, ram_ptr(c->b[i].gpa, c->b[i].len),
			   c->b[i].len))
			return false;
		off += c->b[i].len;
	}
	return off == n;
}

static void phase_tx(struct input *in, struct dq *q)
{
	struct net_queue_pair *p = g.net->pairs[0];
	unsigned int hdr_len = g.net->hdr_len, k, i, rounds, got = 0;
	unsigned int first = q->nr_chains;
	uint8_t nr = take8(in) % 8;
	uint64_t dropped0 = p->tx_dropped;
	bool valid[QSIZE];

	for (k = 0; k < nr; k++) {
		struct mchain c = { 0 };
		uint8_t shape = take8(in);
		uint32_t len = frame_len(in, hdr_len), off = 0;
		unsigned int pieces = 1 + shape % 4;

		if (hdr_len + 0ULL > len && !(shape & 0x40))
			len = hdr_len + 14;
		for (i = 0; i < pieces && c.nr < 6; i++) {
			uint32_t n = i + 1 == pieces ? len - off :
				     MIN(len - off, (uint32_t)take8(in) * 4);

			if (!gen_buf(in, &c.b[c.nr], n, false))
				break;
			if (ram_ptr(c.b[c.nr].gpa, n)) {
				uint8_t *b = ram_ptr(c.b[c.nr].gpa, n);

				fill_bytes(b, n, take8(in) + k * 256);
				/* the header's fields, fuzzed as they come */
				if (!off && n >= 10)
					memcpy(b, (uint8_t[10]){ take8(in),
						take8(in), take8(in), take8(in),
						take8(in), take8(in), take8(in),
						take8(in), take8(in), take8(in) },
					       10);
			}
			off += n;
			c.nr++;
		}
		if (shape & 0x80 && c.nr < 8)	/* a writable tail: not a frame */
			if (gen_buf(in, &c.b[c.nr], take8(in) % 16, true))
				c.nr++;
		if (!c.nr || !dq_add(q, &c))
			break;
	}
	for (k = first; k < q->nr_chains; k++) {
		const struct mchain *c = &q->chains[k];
		uint32_t out = 0;

		valid[k] = true;
		for (i = 0; i < c->nr; i++) {
			out += c->b[i].write ? 0 : c->b[i].len;
			valid[k] &= !c->b[i].write;
		}
		valid[k] &= out >= hdr_len;
	}
	dq_publish(q);
	snapshot();
	k = first;
	/* kick; take what the backend got; give it room; again */
	for (rounds = 0; rounds < 2 * QSIZE + 2; rounds++) {
		ssize_t n;

		virtio_queue_notify(g.vdev, q->index);
		while ((n = recv(g.peer[0], g.frame, sizeof(g.frame),
				 MSG_DONTWAIT)) >= 0) {
			while (k < q->nr_chains && !valid[k])
				k++;
			CHECK(k < q->nr_chains);
			CHECK(tx_matches(&q->chains[k], g.frame, n));
			k++;
			got++;
		}
		if (!p->tx_waiting)
			break;
		p->tx_room_src.handler(&p->tx_room_src, EPOLLOUT);
	}
	CHECK(!p->tx_waiting);
	check_untouched();
	if (!chains_ok(q)) {
		CHECK(broken());
		return;
	}
	CHECK(!broken());
	for (k = first; k < q->nr_chains; k++) {
		uint32_t id, len;

		CHECK(dq_next_used(q, &id, &len));
		CHECK(id == q->chains[k].head && len == 0);
		/* every valid frame went out; the others are counted */
		if (valid[k])
			got--;
		else
			dropped0++;
	}
	CHECK(!got && p->tx_dropped == dropped0);
	CHECK(!dq_next_used(q, &k, &k));
}

/* ---- RX: frames from the backend into the driver's buffers ---- */

static struct {
	unsigned int nr, next;		/* sent; the next one to look for */
	size_t used;
	uint32_t len[MAX_FRAMES];
	uint8_t *data[MAX_FRAMES];
	uint8_t buf[160 * 1024];
} sent;

static void gen_frames(struct input *in, unsigned int hdr_len)
{
	unsigned int k, nr = take8(in) % MAX_FRAMES;

	for (k = 0; k < nr && sent.nr < MAX_FRAMES; k++) {
		uint32_t len = frame_len(in, hdr_len);
		uint8_t dst = take8(in), *f = sent.buf + sent.used;

		if (sent.used + len > sizeof(sent.buf))
			break;
		fill_bytes(f, len, k * 977 + dst);
		if (len >= hdr_len + 6) {	/* to us, to all, to a group */
			if (dst % 4 == 0)
				memcpy(f + hdr_len, our_mac, 6);
			else if (dst % 4 == 1)
				memset(f + hdr_len, 0xff, 6);
			else if (dst % 4 == 2)
				f[hdr_len] |= 1;
		}
		if (send(g.peer[0], f, len, MSG_DONTWAIT) != (ssize_t)len)
			break;
		sent.data[sent.nr] = f;
		sent.len[sent.nr++] = len;
		sent.used += len;
	}
}

static void gen_rx_chains(struct input *in, struct dq *q, unsigned int nr)
{
	unsigned int k, i;

	for (k = 0; k < nr; k++) {
		struct mchain c = { 0 };
		uint8_t shape = take8(in);
		unsigned int pieces = shape % 4;

		if (shape >= 0xf0 && gen_buf(in, &c.b[c.nr], 8, false))
			c.nr++;		/* readable: no frame goes there */
		for (i = 0; i < pieces; i++) {
			uint8_t m = take8(in);
			uint32_t len = m < 0x80 ? 1526 : m < 0xc0 ? m % 24 :
				       m < 0xf0 ? take16(in) % 4096 :
				       m < 0xff ? 0 : 65550;

			if (gen_buf(in, &c.b[c.nr], len, true))
				c.nr++;
		}
		if (!c.nr && gen_buf(in, &c.b[c.nr], 0, true))
			c.nr++;		/* nothing to write to */
		if (!dq_add(q, &c))
			break;
	}
}

/* Is c a chain no frame can go in (given back empty)? */
static bool rx_bad(const struct mchain *c)
{
	unsigned int i;

	for (i = 0; i < c->nr; i++)
		if (!c->b[i].write)
			return true;
	return !chain_in_len(c);
}

/* Every frame the driver got is one the backend sent, in order. */
static void check_rx(struct dq *q)
{
	bool mrg = virtio_has_feature(g.vdev, VIRTIO_NET_F_MRG_RXBUF);
	unsigned int hdr_len = g.net->hdr_len, next = sent.next;
	uint32_t id, len;

	while (dq_next_used(q, &id, &len)) {
		const struct mchain *c = dq_chain(q, id);
		uint32_t flen = 0, nb = 1, taken = 0;
		uint16_t nb16;

		CHECK(c && len <= chain_in_len(c));
		if (!len) {
			CHECK(rx_bad(c));
			continue;
		}
		CHECK(!rx_bad(c));
		/* gather the frame: enough chains for the header, then nb */
		for (;;) {
			chain_gather_in(c, g.frame + flen, len);
			flen += len;
			taken++;
			if (taken == 1 && hdr_len == NET_HDR_LEN &&
			    flen < NET_HDR_LEN)
				CHECK(mrg);
			if (hdr_len == NET_HDR_LEN && flen >= NET_HDR_LEN &&
			    taken == 1) {
				memcpy(&nb16, g.frame + 10, 2);
				nb = le16toh(nb16);
			} else if (hdr_len == NET_HDR_LEN && taken > 1 &&
				   flen - len < NET_HDR_LEN && flen >= NET_HDR_LEN) {
				memcpy(&nb16, g.frame + 10, 2);
				nb = le16toh(nb16);
			}
			if (flen >= hdr_len && taken >= nb)
				break;
			CHECK(dq_next_used(q, &id, &len));
			c = dq_chain(q, id);
			CHECK(c && len && len <= chain_in_len(c) && !rx_bad(c));
		}
		CHECK(taken == nb && nb >= 1 && (mrg || nb == 1));
		/* the next frame sent that is this one: any between dropped */
		for (; next < sent.nr; next++) {
			if (sent.len[next] != flen)
				continue;
			if (hdr_len == NET_HDR_LEN)
				memcpy(sent.data[next] + 10, g.frame + 10, 2);
			if (!memcmp(sent.data[next], g.frame, flen))
				break;
		}
		CHECK(next < sent.nr);
		next++;
	}
	sent.next = next;
}

static void rx_kick(struct dq *q)
{
	struct net_queue_pair *p = g.net->pairs[0];

	virtio_queue_notify(g.vdev, q->index);
	p->backend_src.handler(&p->backend_src, EPOLLIN);
}

static void phase_rx(struct input *in, struct dq *q)
{
	struct net_queue_pair *p = g.net->pairs[0];

	pthread_mutex_lock(&g.vdev->queues[q->index].lock);
	p->rx_estimate = NET_RX_ESTIMATE_START;	/* phases stay apart */
	pthread_mutex_unlock(&g.vdev->queues[q->index].lock);
	gen_frames(in, g.net->hdr_len);
	gen_rx_chains(in, q, take8(in) % 12);
	dq_publish(q);
	snapshot();
	rx_kick(q);
	/* more buffers for what waits */
	check_untouched();
	gen_rx_chains(in, q, take8(in) % 12);
	dq_publish(q);
	snapshot();
	rx_kick(q);
	check_untouched();
	/* chains are popped only for frames: a bad one may stay unseen */
	CHECK(!broken() || !chains_ok(q));
	check_rx(q);
}

/* ---- one input ---- */

static void bring_up(uint32_t features0, bool legacy)
{
	uint8_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

	virtio_set_status(g.vdev, 0);
	virtio_set_status(g.vdev, s);
	virtio_set_guest_features(g.vdev, 0,
				  features0 & virtio_get_host_features(g.vdev, 0));
	if (!legacy) {
		virtio_set_guest_features(g.vdev, 1, 1);	/* VERSION_1 */
		s |= VIRTIO_CONFIG_S_FEATURES_OK;
		virtio_set_status(g.vdev, s);
		CHECK(virtio_get_status(g.vdev) & VIRTIO_CONFIG_S_FEATURES_OK);
	}
}

/* Nothing left in the sockets for the next input. */
static void drain(void)
{
	unsigned int i;

	for (i = 0; i < NR_PAIRS; i++) {
		while (recv(g.peer[i], g.frame, sizeof(g.frame), MSG_DONTWAIT) >= 0)
			;
		while (recv(g.net->pairs[i]->fd, g.frame, sizeof(g.frame),
			    MSG_DONTWAIT) >= 0)
			;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dq rx, tx, ctrl, rx1;
	struct input in = { .p = data, .n = size };
	uint8_t mode = take8(&in);
	uint32_t features0 = take32(&in);
	bool mq, legacy = mode & 1;

	setup_once();
	sent.nr = sent.next = 0;
	sent.used = 0;
	g.offload_fail = (mode >> 1) & 1;
	bring_up(features0, legacy);
	mq = virtio_has_feature(g.vdev, VIRTIO_NET_F_MQ);
	memset(g.ram, 0, RAM_SIZE);
	memset(g.may_write, 0, RAM_SIZE);
	dq_init(&rx, 0, 0);
	dq_init(&tx, 1, 1);
	dq_init(&ctrl, mq ? 2 * NR_PAIRS : 2, 2);
	dq_init(&rx1, 2, 3);
	memset(g.may_write + (rx.used - RAM_GPA), 1, 6 + 8 * QSIZE);
	memset(g.may_write + (tx.used - RAM_GPA), 1, 6 + 8 * QSIZE);
	memset(g.may_write + (ctrl.used - RAM_GPA), 1, 6 + 8 * QSIZE);
	memset(g.may_write + (rx1.used - RAM_GPA), 1, 6 + 8 * QSIZE);
	data_next = RAM_GPA + 4 * RING_BYTES;
	data_end = RAM_GPA + RAM_SIZE;
	dq_start(&rx);
	dq_start(&tx);
	if (virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_VQ))
		dq_start(&ctrl);
	if (mq)
		dq_start(&rx1);
	virtio_set_status(g.vdev, virtio_get_status(g.vdev) |
			  VIRTIO_CONFIG_S_DRIVER_OK);
	CHECK(virtio_get_status(g.vdev) & VIRTIO_CONFIG_S_DRIVER_OK);
	CHECK(g.net->hdr_len == (legacy && !virtio_has_feature(g.vdev,
				 VIRTIO_NET_F_MRG_RXBUF) ? 10u : 12u));

	while (in.n && !broken()) {
		uint8_t op = take8(&in) % 3;

		if (op == 0 && virtio_has_feature(g.vdev, VIRTIO_NET_F_CTRL_VQ))
			phase_ctrl(&in, &ctrl);
		else if (op == 1)
			phase_tx(&in, &tx);
		else if (op == 2)
			phase_rx(&in, &rx);
	}
	virtio_set_status(g.vdev, 0);
	drain();
	return 0;
}
