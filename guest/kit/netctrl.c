// SPDX-License-Identifier: GPL-2.0
/*
 * netctrl.elf: virtio-net's control queue, multi-queue and a hostile
 * driver, against a packet helper on the tap side in the host test
 * (tests/kit/test_virtio_net_ctrl.py, tests/kit/netctrl_helper.py).
 *
 * The guest leads. It changes the device's state (control commands, queue
 * pairs), then sends a request frame (ethertype 0x88b7) on transmitq 0
 * that lists destination MACs and UDP flows; the helper answers with one
 * IPv4/UDP frame per entry, in order (10.0.0.1:1000+flow to
 * 10.0.0.2:2000, payload: magic, phase, entry index, flow, a pattern).
 * The guest knows which entries the device must let through and on which
 * receive queue; with one queue pair the last entry (always accepted) is
 * a marker: once it is in, every frame before it was delivered or
 * filtered. Its own data frames (IPv4/UDP 10.0.0.2:2000 to
 * 10.0.0.1:1000+flow, payload: magic, index, flow, length, pattern) the
 * host checks byte for byte.
 *
 *   case=filter     the receive filter through VIRTIO_NET_CTRL_RX and
 *                   _MAC: promiscuous at first, then MAC tables (one
 *                   entry, 64, 65), MAC_ADDR_SET, ALLMULTI, NOBCAST,
 *                   NOMULTI, ALLUNI, NOUNI, PROMISC; malformed commands
 *                   (VIRTIO_NET_ERR, state unchanged); commands split over
 *                   descriptors and in an indirect table; the config
 *                   space MAC follows MAC_ADDR_SET (a new generation), a
 *                   reset brings back the promiscuous filter and the
 *                   permanent MAC
 *   case=bigtable   MAC tables longer than 64 entries and 840 bytes, as
 *                   Linux sends them for many addresses: accepted, all of
 *                   that class received
 *   case=features   commands whose feature was not negotiated: ERR; no
 *                   CTRL_VQ: queue 2 is not served
 *   case=mq         pairs=N (what max_virtqueue_pairs must say) nomq=1
 *                   (decline MQ): one pair until VQ_PAIRS_SET, then TX on
 *                   both transmit queues, flows the tap steers to both
 *                   receive queues, back to one pair, and to two again
 *   case=h_*        hostile: one broken chain on the RX, TX or control
 *                   queue (see `cases` below); the device must set
 *                   NEEDS_RESET or complete it harmlessly, and work again
 *                   after a reset (checked with traffic both ways)
 *
 *   transport=pci|mmio|legacy (pci)
 *   mac=52:54:00:12:34:56     the MAC config space must hold
 */
#include <linux/virtio_net.h>

#include "virtio_pci.h"

#define QSIZE			64
#define RXBUFS			24	/* per receive queue */
#define RXSIZE			2048
#define MAX_PAIRS		2
#define MAX_INJ			40	/* entries per request frame */
#define WAIT_US			3000000
#define HDR_LEN			12	/* VERSION_1 or MRG_RXBUF: always */

#define ETH_TYPE_IP		0x0800
#define ETH_TYPE_REQ		0x88b7
#define UDP_HDRS		(14 + 20 + 8)
#define RX_MAGIC		0x52564b4c	/* "LKVR" */
#define TX_MAGIC		0x54564b4c	/* "LKVT" */
#define REQ_MAGIC		0x43564b4c	/* "LKVC" */
#define RX_PATTERN		32
#define RX_FRAME_LEN		(UDP_HDRS + 16 + RX_PATTERN)
#define GUEST_PORT		2000
#define FLOW_PORT		1000

/* What ctrl_*() return besides an ack byte. */
#define CTRL_NOACK		(-1)	/* used, nothing written */
#define CTRL_RESET		(-2)	/* NEEDS_RESET */
#define CTRL_TIMEOUT		(-3)

#define OTHER_SHOWN		4

static const uint8_t host_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t guest_ip[4] = { 10, 0, 0, 2 };
static const uint8_t host_ip[4] = { 10, 0, 0, 1 };

static struct vio_dev dev;
static enum vio_transport transport;
static unsigned int nr_pairs;		/* queue pairs set up */
static struct vio_queue rxq[MAX_PAIRS], txq[MAX_PAIRS], ctrlq;
static uint8_t *rx_buf[MAX_PAIRS][RXBUFS];
static int rx_head_buf[MAX_PAIRS][QSIZE];
static uint8_t mac[6];			/* config space: the permanent MAC */
static uint8_t *txbuf, *cmdbuf;
static volatile uint8_t *ack;
static uint64_t ram_end;

/* Counted for the host, which compares them with lkvm's --stats. */
static unsigned int rx_frames[MAX_PAIRS], tx_frames[MAX_PAIRS];
static unsigned int ctrl_cmds, filtered, rx_other, requests;
static uint32_t tx_idx;			/* the next data frame's index */

/* The current request: what was asked for and what came. */
struct inj {
	uint8_t dst[6];
	uint16_t flow;
	bool accept;
	int8_t queue;			/* the receive queue it must use, or -1 */
};
static struct inj inj[MAX_INJ];
static unsigned int nr_inj;
static uint32_t phase;
static uint64_t got_mask;
static uint8_t got_queue[MAX_INJ];
static bool allow_stale;		/* after a reset: old frames may come */

/* ---- frames ---- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint16_t get_be16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t s = 0;
	unsigned int i;

	for (i = 0; i < 20; i += 2)
		s += get_be16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/* Ethernet + IPv4 + UDP headers for `plen` payload bytes at p + 42. */
static void build_udp(uint8_t *p, const uint8_t *dst, const uint8_t *src,
		      const uint8_t *ip_src, const uint8_t *ip_dst,
		      uint16_t sport, uint16_t dport, uint16_t id,
		      unsigned int plen)
{
	uint8_t *ip = p + 14, *udp = p + 34;

	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	put_be16(p + 12, ETH_TYPE_IP);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put_be16(ip + 2, 20 + 8 + plen);
	put_be16(ip + 4, id);
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, ip_src, 4);
	memcpy(ip + 16, ip_dst, 4);
	put_be16(ip + 10, ip_checksum(ip));
	put_be16(udp, sport);
	put_be16(udp + 2, dport);
	put_be16(udp + 4, 8 + plen);
	put_be16(udp + 6, 0);
}

/* tests/kit/netctrl_helper.py has the same three. */
static unsigned int tx_payload_len(uint32_t idx)
{
	return 16 + (idx * 157) % 1200;
}

static uint8_t tx_pattern(uint32_t idx, uint16_t flow, unsigned int i)
{
	return i * 7 + idx * 29 + flow * 3;
}

static uint8_t rx_pattern(uint32_t ph, uint32_t k, uint16_t flow,
			  unsigned int i)
{
	return ph * 7 + k * 13 + flow * 17 + i;
}

static unsigned int build_tx_frame(uint8_t *p, uint32_t idx, uint16_t flow)
{
	unsigned int plen = tx_payload_len(idx), i;
	uint8_t *pl = p + UDP_HDRS;

	build_udp(p, host_mac, mac, guest_ip, host_ip, GUEST_PORT,
		  FLOW_PORT + flow, idx, plen);
	put_le32(pl, TX_MAGIC);
	put_le32(pl + 4, idx);
	put_le32(pl + 8, flow);
	put_le32(pl + 12, plen);
	for (i = 16; i < plen; i++)
		pl[i] = tx_pattern(idx, flow, i);
	return UDP_HDRS + plen;
}

#define MACFMT		"%02x:%02x:%02x:%02x:%02x:%02x"
#define MACARG(m)	(m)[0], (m)[1], (m)[2], (m)[3], (m)[4], (m)[5]

/* ---- the device ---- */

static bool find_device(void)
{
	struct vio_dev devs[VIO_MMIO_SLOTS];
	unsigned int n, i;

	if (transport != VIO_MMIO) {
		if (!vio_pci_find(&dev, transport == VIO_PCI_LEGACY)) {
			kit_fail("no virtio-net device on virtio-pci");
			return false;
		}
		return kit_check(dev.device_id == VIRTIO_ID_NET,
				 "virtio-pci device %u is not virtio-net",
				 dev.device_id);
	}
	n = vio_find(devs, ARRAY_SIZE(devs));
	for (i = 0; i < n; i++) {
		if (devs[i].device_id == VIRTIO_ID_NET) {
			dev = devs[i];
			return true;
		}
	}
	kit_fail("no virtio-net device (%u virtio-mmio devices)", n);
	return false;
}

static uint16_t config_read16(unsigned int off)
{
	if (transport != VIO_MMIO)
		return vio_pci_config_read(&dev, off, 2);
	return vio_config_read8(&dev, off) | vio_config_read8(&dev, off + 1) << 8;
}

static void rx_post(unsigned int q, unsigned int b)
{
	struct vio_buf vb = { (uintptr_t)rx_buf[q][b], RXSIZE, true };
	int head = vio_add(&rxq[q], &vb, 1, false);

	if (kit_check(head >= 0, "rx%u: no room for buffer %u", q, b))
		rx_head_buf[q][head] = b;
}

static void free_queues(void)
{
	unsigned int i;

	for (i = 0; i < MAX_PAIRS; i++) {
		vio_queue_free(&rxq[i]);
		vio_queue_free(&txq[i]);
	}
	vio_queue_free(&ctrlq);
}

/*
 * Negotiates `want` (plus VERSION_1), sets up `pairs` queue pairs and the
 * control queue where 5.1.2 puts it (if CTRL_VQ was taken), DRIVER_OK,
 * and posts every receive buffer unless post is false.
 */
static bool bring_up(uint64_t want, unsigned int pairs, bool post)
{
	unsigned int i, b, ctrl_index;
	bool ok = true;

	free_queues();
	if (!kit_check(!vio_negotiate(&dev, want), "feature negotiation"))
		return false;
	nr_pairs = pairs;
	for (i = 0; i < pairs && ok; i++) {
		ok = kit_check(!vio_queue_setup(&rxq[i], &dev, 2 * i, QSIZE),
			       "receiveq%u (queue %u) setup", i, 2 * i) &&
		     kit_check(!vio_queue_setup(&txq[i], &dev, 2 * i + 1, QSIZE),
			       "transmitq%u (queue %u) setup", i, 2 * i + 1);
	}
	if (ok && (dev.features & (1ULL << VIRTIO_NET_F_CTRL_VQ))) {
		ctrl_index = dev.features & (1ULL << VIRTIO_NET_F_MQ) ?
			     2 * pairs : 2;
		ok = kit_check(!vio_queue_setup(&ctrlq, &dev, ctrl_index, QSIZE),
			       "controlq (queue %u) setup", ctrl_index);
	}
	if (!ok)
		return false;
	for (i = 0; i < pairs; i++)
		for (b = 0; b < QSIZE; b++)
			rx_head_buf[i][b] = -1;
	vio_driver_ok(&dev);
	if (post) {
		for (i = 0; i < pairs; i++) {
			for (b = 0; b < RXBUFS; b++)
				rx_post(i, b);
			vio_kick(&rxq[i]);
		}
	}
	return kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
			 "NEEDS_RESET right after DRIVER_OK");
}

static bool needs_reset(void)
{
	return vio_status(&dev) & VIO_STATUS_NEEDS_RESET;
}

/* ---- receive ---- */

/* One frame the helper injected: which entry of which request. */
static void rx_frame(unsigned int q, const uint8_t *f, unsigned int len)
{
	const uint8_t *ip = f + 14, *udp = f + 34, *pl = f + UDP_HDRS;
	uint32_t ph, k, flow, i;

	if (len < 14 || get_be16(f + 12) != ETH_TYPE_IP || len < UDP_HDRS + 16 ||
	    get_le32(pl) != RX_MAGIC) {
		if (rx_other++ < OTHER_SHOWN)
			kit_printf("rx%u: ignoring a %u-byte frame of ethertype %#x\n",
				   q, len, len >= 14 ? get_be16(f + 12) : 0);
		return;
	}
	ph = get_le32(pl + 4);
	k = get_le32(pl + 8);
	flow = get_le32(pl + 12);
	if (!kit_check(len == RX_FRAME_LEN, "rx%u: a %u-byte frame (phase %u entry %u), not %u",
		       q, len, ph, k, RX_FRAME_LEN) ||
	    !kit_check(!memcmp(f + 6, host_mac, 6) && ip[0] == 0x45 &&
		       ip[9] == 17 && !memcmp(ip + 12, host_ip, 4) &&
		       !memcmp(ip + 16, guest_ip, 4) &&
		       get_be16(udp) == FLOW_PORT + flow &&
		       get_be16(udp + 2) == GUEST_PORT &&
		       get_be16(udp + 4) == 8 + 16 + RX_PATTERN,
		       "rx%u: phase %u entry %u: headers are not the helper's",
		       q, ph, k))
		return;
	for (i = 0; i < RX_PATTERN; i++)
		if (pl[16 + i] != rx_pattern(ph, k, flow, i))
			break;
	if (!kit_check(i == RX_PATTERN, "rx%u: phase %u entry %u: payload byte %u differs",
		       q, ph, k, 16 + i))
		return;
	if (ph != phase) {
		kit_check(allow_stale && ph < phase,
			  "rx%u: a frame of phase %u in phase %u", q, ph, phase);
		kit_printf("rx%u: a frame of phase %u, before the reset\n", q, ph);
		return;
	}
	if (!kit_check(k < nr_inj && inj[k].flow == flow &&
		       !memcmp(f, inj[k].dst, 6),
		       "rx%u: phase %u entry %u (flow %u, to " MACFMT ") was not asked for",
		       q, ph, k, flow, MACARG(f)))
		return;
	kit_check(!(got_mask & (1ULL << k)), "rx%u: phase %u entry %u twice", q,
		  ph, k);
	got_mask |= 1ULL << k;
	got_queue[k] = q;
}

/* Takes one used receive buffer of queue q, if any. */
static bool rx_poll(unsigned int q)
{
	const struct vio_net_hdr *h;
	uint32_t id, len;
	int b;

	if (!vio_get_used(&rxq[q], &id, &len))
		return false;
	if (!kit_check(id < QSIZE && rx_head_buf[q][id] >= 0,
		       "rx%u: used id %u is not a posted buffer", q, id))
		return true;
	b = rx_head_buf[q][id];
	rx_head_buf[q][id] = -1;
	h = (const struct vio_net_hdr *)rx_buf[q][b];
	rx_frames[q]++;
	if (kit_check(len >= HDR_LEN && len <= RXSIZE, "rx%u: used len %u", q,
		      len) &&
	    kit_check(h->num_buffers == 1 && !h->flags && !h->gso_type,
		      "rx%u: header num_buffers %u flags %#x gso %u", q,
		      h->num_buffers, h->flags, h->gso_type))
		rx_frame(q, rx_buf[q][b] + HDR_LEN, len - HDR_LEN);
	rx_post(q, b);
	vio_kick(&rxq[q]);
	return true;
}

static void rx_poll_all(void)
{
	unsigned int q;

	for (q = 0; q < nr_pairs; q++)
		while (rx_poll(q))
			;
}

/* ---- transmit ---- */

/*
 * One chain [header + frame] on transmitq q, waited for. With reset_ok
 * NEEDS_RESET may come first: the frame asks for the very frames that
 * break the receive queue, and the helper can answer before lkvm
 * publishes the TX completion.
 */
static bool tx_send_ex(unsigned int q, const uint8_t *frame, unsigned int len,
		       bool reset_ok)
{
	struct vio_buf b = { (uintptr_t)txbuf, HDR_LEN + len, false };
	uint32_t id, ulen;
	enum vio_wait w;
	int head;

	memset(txbuf, 0, HDR_LEN);
	memcpy(txbuf + HDR_LEN, frame, len);
	head = vio_add(&txq[q], &b, 1, false);
	if (!kit_check(head >= 0, "tx%u: no room", q))
		return false;
	vio_kick(&txq[q]);
	w = vio_wait_used(&txq[q], WAIT_US, true, &id, &ulen);
	if (w == VIO_WAIT_NEEDS_RESET && reset_ok)
		return true;
	if (!kit_check(w == VIO_WAIT_USED, "tx%u: the frame %s", q,
		       w == VIO_WAIT_NEEDS_RESET ? "set NEEDS_RESET" :
						   "never completed"))
		return false;
	kit_check(id == (uint32_t)head && ulen == 0, "tx%u: used id %u len %u",
		  q, id, ulen);
	tx_frames[q]++;
	return true;
}

static bool tx_send(unsigned int q, const uint8_t *frame, unsigned int len)
{
	return tx_send_ex(q, frame, len, false);
}

/* Data frame tx_idx of `flow` on transmitq q (the host checks it). */
static bool tx_data(unsigned int q, uint16_t flow)
{
	static uint8_t frame[UDP_HDRS + 1300];

	return tx_send(q, frame, build_tx_frame(frame, tx_idx++, flow));
}

/* ---- control queue ---- */

/*
 * Submits one control chain and waits: the ack byte, or CTRL_NOACK when
 * the device used it without writing, CTRL_RESET, CTRL_TIMEOUT.
 */
static int ctrl_chain(const struct vio_buf *bufs, unsigned int n,
		      bool indirect, uint32_t *used_len)
{
	uint32_t id = 0, len = 0;
	enum vio_wait w;
	int head;

	*ack = 0xee;
	head = vio_add(&ctrlq, bufs, n, indirect);
	if (!kit_check(head >= 0, "controlq: no room"))
		return CTRL_TIMEOUT;
	vio_kick(&ctrlq);
	w = vio_wait_used(&ctrlq, WAIT_US, true, &id, &len);
	if (used_len)
		*used_len = len;
	if (w == VIO_WAIT_NEEDS_RESET)
		return CTRL_RESET;
	if (w != VIO_WAIT_USED)
		return CTRL_TIMEOUT;
	ctrl_cmds++;
	kit_check(id == (uint32_t)head, "controlq: used id %u, head %d", id,
		  head);
	return len ? *ack : CTRL_NOACK;
}

/* class, command, data: one readable buffer, then the ack. */
static int ctrl_cmd(uint8_t class, uint8_t cmd, const void *data,
		    unsigned int len)
{
	struct vio_buf b[2] = {
		{ (uintptr_t)cmdbuf, 2 + len, false },
		{ (uintptr_t)ack, 1, true },
	};
	uint32_t ulen;
	int r;

	cmdbuf[0] = class;
	cmdbuf[1] = cmd;
	memcpy(cmdbuf + 2, data, len);
	r = ctrl_chain(b, 2, false, &ulen);
	if (r >= 0)
		kit_check(ulen == 1, "controlq: used len %u for a 1-byte ack",
			  ulen);
	return r;
}

static const char *ack_name(int r)
{
	switch (r) {
	case VIRTIO_NET_OK: return "OK";
	case VIRTIO_NET_ERR: return "ERR";
	case CTRL_NOACK: return "no ack";
	case CTRL_RESET: return "NEEDS_RESET";
	case CTRL_TIMEOUT: return "no completion";
	default: return "a bad ack";
	}
}

static bool expect_ack(int r, int want, const char *what)
{
	return kit_check(r == want, "%s: %s (%d), expected %s", what,
			 ack_name(r), r, ack_name(want));
}

static bool rx_mode(uint8_t cmd, uint8_t on, const char *what)
{
	return expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, cmd, &on, 1),
			  VIRTIO_NET_OK, what);
}

/*
 * MAC_TABLE_SET with nu unicast then nm multicast entries: the `last`
 * given one at the end of each, the rest made up (52:54:00:fe:x:y and
 * 01:00:5e:7e:x:y, none of them a destination the tests use).
 */
static int mac_table(unsigned int nu, const uint8_t *uni_last, unsigned int nm,
		     const uint8_t *multi_last)
{
	static uint8_t data[4 + 6 * 200 + 4 + 6 * 200];
	unsigned int off = 0, i;

	put_le32(data, nu);
	off = 4;
	for (i = 0; i < nu; i++, off += 6) {
		const uint8_t made[6] = { 0x52, 0x54, 0, 0xfe, i >> 8, i };

		memcpy(data + off, i + 1 == nu && uni_last ? uni_last : made, 6);
	}
	put_le32(data + off, nm);
	off += 4;
	for (i = 0; i < nm; i++, off += 6) {
		const uint8_t made[6] = { 0x01, 0x00, 0x5e, 0x7e, i >> 8, i };

		memcpy(data + off, i + 1 == nm && multi_last ? multi_last : made, 6);
	}
	return ctrl_cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET,
			data, off);
}

static int mac_addr_set(const uint8_t *m)
{
	return ctrl_cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, m, 6);
}

static int pairs_set(uint16_t n)
{
	uint8_t d[2] = { n, n >> 8 };

	return ctrl_cmd(VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, d, 2);
}

/* ---- requests: the helper injects, the guest checks ---- */

static void inj_add(const uint8_t *dst, uint16_t flow, bool accept, int queue)
{
	if (!kit_check(nr_inj < MAX_INJ, "too many entries in one request"))
		return;
	memcpy(inj[nr_inj].dst, dst, 6);
	inj[nr_inj].flow = flow;
	inj[nr_inj].accept = accept;
	inj[nr_inj].queue = queue;
	nr_inj++;
}

static bool send_request_ex(bool reset_ok)
{
	static uint8_t f[14 + 12 + 8 * MAX_INJ];
	unsigned int i, len = 14 + 12 + 8 * nr_inj;

	memcpy(f, host_mac, 6);
	memcpy(f + 6, mac, 6);
	put_be16(f + 12, ETH_TYPE_REQ);
	put_le32(f + 14, REQ_MAGIC);
	put_le32(f + 18, phase);
	put_le32(f + 22, nr_inj);
	for (i = 0; i < nr_inj; i++) {
		memcpy(f + 26 + 8 * i, inj[i].dst, 6);
		f[26 + 8 * i + 6] = inj[i].flow;
		f[26 + 8 * i + 7] = inj[i].flow >> 8;
	}
	if (len < 60) {
		memset(f + len, 0, 60 - len);
		len = 60;
	}
	requests++;
	return tx_send_ex(0, f, len, reset_ok);
}

static bool send_request(void)
{
	return send_request_ex(false);
}

/*
 * Sends the request built with inj_add() and waits for every entry it
 * must receive. With one queue pair the last entry is the marker: once it
 * is in, the rest were delivered or filtered, so the set must be exact.
 * With more, the wait ends when all wanted entries are in, plus 50 ms
 * for anything that should not come.
 */
static bool run_request(const char *what)
{
	uint64_t want = 0, start;
	unsigned int i, nf = 0, ngot = 0;
	bool ok;

	for (i = 0; i < nr_inj; i++) {
		if (inj[i].accept)
			want |= 1ULL << i;
		else
			nf++;
	}
	kit_check(nr_pairs > 1 || inj[nr_inj - 1].accept,
		  "%s: the marker is not accepted", what);
	got_mask = 0;
	if (!send_request())
		return false;
	start = kit_now_us();
	for (;;) {
		rx_poll_all();
		if (nr_pairs == 1 ? !!(got_mask & (1ULL << (nr_inj - 1))) :
				    (got_mask & want) == want)
			break;
		if (kit_now_us() - start > WAIT_US || needs_reset())
			break;
	}
	if (nr_pairs > 1) {
		start = kit_now_us();
		while (kit_now_us() - start < 50000)
			rx_poll_all();
	}
	ok = kit_check(got_mask == want,
		       "phase %u (%s): received entries %#llx, expected %#llx",
		       phase, what, (unsigned long long)got_mask,
		       (unsigned long long)want);
	for (i = 0; i < nr_inj; i++) {
		if (!!(got_mask & (1ULL << i)) != inj[i].accept)
			kit_printf("  entry %u to " MACFMT " flow %u: %s\n", i,
				   MACARG(inj[i].dst), inj[i].flow,
				   inj[i].accept ? "missing" : "not filtered");
		else if (inj[i].accept && inj[i].queue >= 0)
			ok &= kit_check(got_queue[i] == inj[i].queue,
					"phase %u (%s): entry %u (flow %u) on receiveq%u, not %u",
					phase, what, i, inj[i].flow,
					got_queue[i], inj[i].queue);
	}
	ok &= kit_check(!needs_reset(), "phase %u (%s): NEEDS_RESET", phase,
			what);
	for (i = 0; i < nr_inj; i++)
		ngot += !!(got_mask & (1ULL << i));
	kit_printf("phase %u (%s): %u of %u frames in, %u to be filtered\n",
		   phase, what, ngot,
		   nr_inj, nf);
	filtered += nf;
	phase++;
	nr_inj = 0;
	return ok;
}

/* ---- case=filter ---- */

enum { D_MAC, D_NEWMAC, D_UC_TAB, D_UC_OTHER, D_BCAST, D_MC_IN, D_MC_OUT,
       D_COUNT };
#define A(d)	(1u << (d))
#define ALL	(A(D_COUNT) - 1)

static uint8_t dsts[D_COUNT][6] = {
	[D_NEWMAC]	= { 0x52, 0x54, 0x00, 0x65, 0x43, 0x21 },
	[D_UC_TAB]	= { 0x52, 0x54, 0x00, 0x00, 0x00, 0x07 },
	[D_UC_OTHER]	= { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc },
	[D_BCAST]	= { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	[D_MC_IN]	= { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb },
	[D_MC_OUT]	= { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfc },
};
static const char *const dst_names[D_COUNT] = {
	"mac", "newmac", "uc_tab", "uc_other", "bcast", "mc_in", "mc_out",
};

/* One frame to each destination, accepted as `mask` says, and a marker. */
static bool filter_phase(const char *what, unsigned int mask)
{
	unsigned int d, first = D_COUNT;

	for (d = 0; d < D_COUNT; d++) {
		inj_add(dsts[d], d, mask & A(d), 0);
		if ((mask & A(d)) && first == D_COUNT)
			first = d;
	}
	if (!kit_check(first < D_COUNT, "%s: nothing accepted", what))
		return false;
	inj_add(dsts[first], 100, true, 0);
	return run_request(what);
}

/* A command split into three descriptors, the first one byte. */
static int ctrl_split(uint8_t class, uint8_t cmd, const uint8_t *data,
		      unsigned int len, bool indirect)
{
	struct vio_buf b[4] = {
		{ (uintptr_t)cmdbuf, 1, false },
		{ (uintptr_t)cmdbuf + 1, 3, false },
		{ (uintptr_t)cmdbuf + 4, len - 2, false },
		{ (uintptr_t)ack, 1, true },
	};

	cmdbuf[0] = class;
	cmdbuf[1] = cmd;
	memcpy(cmdbuf + 2, data, len);
	return ctrl_chain(b, 4, indirect, NULL);
}

struct bad_cmd {
	const char *what;
	uint8_t class, cmd;
	unsigned int len;
	uint8_t data[24];
};

/* Each must get VIRTIO_NET_ERR and change nothing. */
static const struct bad_cmd bad_cmds[] = {
	{ "unknown class 99", 99, 0, 1, { 0 } },
	{ "VLAN class (not offered)", VIRTIO_NET_CTRL_VLAN,
	  VIRTIO_NET_CTRL_VLAN_ADD, 2, { 1, 0 } },
	{ "ANNOUNCE class (not offered)", VIRTIO_NET_CTRL_ANNOUNCE,
	  VIRTIO_NET_CTRL_ANNOUNCE_ACK, 0, { 0 } },
	{ "RX PROMISC with 2 data bytes", VIRTIO_NET_CTRL_RX,
	  VIRTIO_NET_CTRL_RX_PROMISC, 2, { 1, 1 } },
	{ "RX PROMISC, header only", VIRTIO_NET_CTRL_RX,
	  VIRTIO_NET_CTRL_RX_PROMISC, 0, { 0 } },
	{ "RX command 6", VIRTIO_NET_CTRL_RX, 6, 1, { 1 } },
	{ "RX command 255", VIRTIO_NET_CTRL_RX, 255, 1, { 1 } },
	{ "MAC_TABLE_SET: 3 unicast entries announced, 1 given",
	  VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 14,
	  { 3, 0, 0, 0, 0x52, 0x54, 0, 1, 2, 3, 0, 0, 0, 0 } },
	{ "MAC_TABLE_SET: 0xffffffff unicast entries", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_TABLE_SET, 8,
	  { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 } },
	{ "MAC_TABLE_SET: 0x2aaaaaab entries (6 * n wraps 32 bits)",
	  VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 8,
	  { 0xab, 0xaa, 0xaa, 0x2a, 0, 0, 0, 0 } },
	{ "MAC_TABLE_SET: 2 bytes", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_TABLE_SET, 2, { 0, 0 } },
	{ "MAC_TABLE_SET: no multicast count", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_TABLE_SET, 10,
	  { 1, 0, 0, 0, 0x52, 0x54, 0, 1, 2, 3 } },
	{ "MAC_TABLE_SET: 2 multicast entries announced, 1 given",
	  VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 14,
	  { 0, 0, 0, 0, 2, 0, 0, 0, 0x01, 0, 0x5e, 0, 0, 1 } },
	{ "MAC_TABLE_SET: 3 bytes after the tables", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_TABLE_SET, 11,
	  { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3 } },
	{ "MAC command 7", VIRTIO_NET_CTRL_MAC, 7, 6,
	  { 0x52, 0x54, 0, 1, 2, 3 } },
	{ "MAC_ADDR_SET with 5 bytes", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_ADDR_SET, 5, { 0x52, 0x54, 0, 1, 2 } },
	{ "MAC_ADDR_SET with 7 bytes", VIRTIO_NET_CTRL_MAC,
	  VIRTIO_NET_CTRL_MAC_ADDR_SET, 7, { 0x52, 0x54, 0, 1, 2, 3, 4 } },
	{ "MQ VQ_PAIRS_SET 1 without MQ", VIRTIO_NET_CTRL_MQ,
	  VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, { 1, 0 } },
	{ "GUEST_OFFLOADS_SET without CTRL_GUEST_OFFLOADS",
	  VIRTIO_NET_CTRL_GUEST_OFFLOADS,
	  VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, 8, { 0 } },
};

/* Malformed commands and chains: ERR (or no ack), and the device goes on. */
static void malformed(void)
{
	uint32_t ulen = 0;
	unsigned int i;
	int r;

	for (i = 0; i < ARRAY_SIZE(bad_cmds); i++) {
		const struct bad_cmd *c = &bad_cmds[i];

		r = ctrl_cmd(c->class, c->cmd, c->data, c->len);
		expect_ack(r, VIRTIO_NET_ERR, c->what);
		kit_check(!needs_reset(), "%s: NEEDS_RESET", c->what);
	}
	/* only the class byte */
	{
		struct vio_buf b[2] = {
			{ (uintptr_t)cmdbuf, 1, false },
			{ (uintptr_t)ack, 1, true },
		};

		cmdbuf[0] = VIRTIO_NET_CTRL_RX;
		expect_ack(ctrl_chain(b, 2, false, NULL), VIRTIO_NET_ERR,
			   "a 1-byte command");
	}
	/* nothing readable: the ack buffer alone */
	{
		struct vio_buf b = { (uintptr_t)ack, 1, true };

		expect_ack(ctrl_chain(&b, 1, false, NULL), VIRTIO_NET_ERR,
			   "a chain with only the ack byte");
	}
	/* everything device-writable: ERR in its first byte */
	{
		struct vio_buf b = { (uintptr_t)cmdbuf, 4, true };

		cmdbuf[0] = VIRTIO_NET_CTRL_RX;
		cmdbuf[1] = VIRTIO_NET_CTRL_RX_PROMISC;
		cmdbuf[2] = 1;
		*ack = 0xee;
		r = ctrl_chain(&b, 1, false, &ulen);
		kit_check(r != CTRL_RESET && r != CTRL_TIMEOUT,
			  "an all-writable command: %s", ack_name(r));
		kit_check(ulen <= 1 && (ulen == 0 || cmdbuf[0] == VIRTIO_NET_ERR),
			  "an all-writable command: used len %u, first byte %u",
			  ulen, cmdbuf[0]);
	}
	/* no device-writable byte: nowhere to ack; used with len 0 */
	{
		struct vio_buf b = { (uintptr_t)cmdbuf, 3, false };

		cmdbuf[0] = VIRTIO_NET_CTRL_RX;
		cmdbuf[1] = VIRTIO_NET_CTRL_RX_PROMISC;
		cmdbuf[2] = 1;
		r = ctrl_chain(&b, 1, false, &ulen);
		kit_check(r == CTRL_NOACK && ulen == 0,
			  "a command without an ack byte: %s, used len %u",
			  ack_name(r), ulen);
	}
	/* 4096 data bytes */
	memset(cmdbuf + 2, 0, 4096);
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC,
			    cmdbuf + 2, 4096),
		   VIRTIO_NET_ERR, "RX PROMISC with 4096 data bytes");
	kit_check(!needs_reset(), "NEEDS_RESET after the malformed commands");
	kit_printf("malformed: %zu commands and 5 odd chains answered\n",
		   ARRAY_SIZE(bad_cmds));
}

/* The MAC in config space, read whole under the generation counter. */
static void config_mac(uint8_t m[6])
{
	uint32_t gen;
	unsigned int i;

	do {
		gen = vio_config_generation(&dev);
		for (i = 0; i < 6; i++)
			m[i] = vio_config_read8(&dev, i);
	} while (gen != vio_config_generation(&dev));
}

static void expect_config_mac(const uint8_t want[6], const char *when)
{
	uint8_t m[6];

	config_mac(m);
	kit_check(!memcmp(m, want, 6), "%s: config space MAC " MACFMT
		  ", not " MACFMT, when, MACARG(m), MACARG(want));
}

static const uint64_t filter_features =
	(1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_STATUS) |
	(1ULL << VIRTIO_NET_F_MRG_RXBUF) | (1ULL << VIRTIO_NET_F_CTRL_VQ) |
	(1ULL << VIRTIO_NET_F_CTRL_RX) | (1ULL << VIRTIO_NET_F_CTRL_RX_EXTRA) |
	(1ULL << VIRTIO_NET_F_CTRL_MAC_ADDR) |
	(1ULL << VIRTIO_RING_F_INDIRECT_DESC);

static void check_offered(void)
{
	static const struct { unsigned int bit; const char *name; } want[] = {
		{ VIRTIO_NET_F_CTRL_VQ, "CTRL_VQ" },
		{ VIRTIO_NET_F_CTRL_RX, "CTRL_RX" },
		{ VIRTIO_NET_F_CTRL_RX_EXTRA, "CTRL_RX_EXTRA" },
		{ VIRTIO_NET_F_CTRL_MAC_ADDR, "CTRL_MAC_ADDR" },
	};
	unsigned int i;

	kit_printf("features offered %#llx accepted %#llx\n",
		   (unsigned long long)dev.offered,
		   (unsigned long long)dev.features);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		kit_check(dev.offered & (1ULL << want[i].bit), "%s not offered",
			  want[i].name);
	kit_check(!(dev.offered & (1ULL << VIRTIO_NET_F_CTRL_VLAN)) &&
		  !(dev.offered & (1ULL << VIRTIO_NET_F_GUEST_ANNOUNCE)),
		  "CTRL_VLAN or GUEST_ANNOUNCE offered: the device has neither");
}

static void case_filter(void)
{
	const uint8_t *none = NULL;
	uint32_t gen;
	int r;

	if (!bring_up(filter_features, 1, true))
		return;
	check_offered();
	kit_check(!(dev.offered & (1ULL << VIRTIO_NET_F_MQ)),
		  "MQ offered for one queue pair");
	/* a few data frames: the host checks them byte for byte */
	tx_data(0, 0);
	tx_data(0, 1);

	filter_phase("promiscuous after DRIVER_OK", ALL);

	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0, "PROMISC off");
	expect_ack(mac_table(1, dsts[D_UC_TAB], 1, dsts[D_MC_IN]),
		   VIRTIO_NET_OK, "MAC table: 1 unicast, 1 multicast");
	filter_phase("PROMISC off, tables uc_tab + mc_in",
		     A(D_MAC) | A(D_UC_TAB) | A(D_BCAST) | A(D_MC_IN));

	gen = vio_config_generation(&dev);
	expect_ack(mac_addr_set(dsts[D_NEWMAC]), VIRTIO_NET_OK, "MAC_ADDR_SET");
	expect_config_mac(dsts[D_NEWMAC], "after MAC_ADDR_SET");
	kit_check(transport == VIO_PCI_LEGACY ||
		  vio_config_generation(&dev) != gen,
		  "MAC_ADDR_SET left the config generation at %u", gen);
	filter_phase("MAC_ADDR_SET newmac",
		     A(D_NEWMAC) | A(D_UC_TAB) | A(D_BCAST) | A(D_MC_IN));

	rx_mode(VIRTIO_NET_CTRL_RX_ALLMULTI, 1, "ALLMULTI on");
	filter_phase("ALLMULTI", A(D_NEWMAC) | A(D_UC_TAB) | A(D_BCAST) |
				 A(D_MC_IN) | A(D_MC_OUT));

	rx_mode(VIRTIO_NET_CTRL_RX_NOBCAST, 1, "NOBCAST on");
	filter_phase("ALLMULTI, NOBCAST", A(D_NEWMAC) | A(D_UC_TAB) |
					  A(D_MC_IN) | A(D_MC_OUT));

	rx_mode(VIRTIO_NET_CTRL_RX_ALLMULTI, 0, "ALLMULTI off");
	rx_mode(VIRTIO_NET_CTRL_RX_NOMULTI, 1, "NOMULTI on");
	rx_mode(VIRTIO_NET_CTRL_RX_NOBCAST, 0, "NOBCAST off");
	filter_phase("NOMULTI", A(D_NEWMAC) | A(D_UC_TAB) | A(D_BCAST));

	rx_mode(VIRTIO_NET_CTRL_RX_NOMULTI, 0, "NOMULTI off");
	rx_mode(VIRTIO_NET_CTRL_RX_ALLUNI, 1, "ALLUNI on");
	filter_phase("ALLUNI", ALL & ~A(D_MC_OUT));

	rx_mode(VIRTIO_NET_CTRL_RX_ALLUNI, 0, "ALLUNI off");
	rx_mode(VIRTIO_NET_CTRL_RX_NOUNI, 1, "NOUNI on");
	filter_phase("NOUNI", A(D_BCAST) | A(D_MC_IN));

	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 1, "PROMISC on");
	filter_phase("PROMISC over NOUNI", ALL);

	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0, "PROMISC off");
	rx_mode(VIRTIO_NET_CTRL_RX_NOUNI, 0, "NOUNI off");
	expect_ack(mac_table(65, none, 1, dsts[D_MC_IN]), VIRTIO_NET_OK,
		   "MAC table: 65 unicast, 1 multicast");
	filter_phase("65 unicast entries: all unicast", ALL & ~A(D_MC_OUT));

	expect_ack(mac_table(0, none, 65, none), VIRTIO_NET_OK,
		   "MAC table: 0 unicast, 65 multicast");
	filter_phase("65 multicast entries: all multicast",
		     A(D_NEWMAC) | A(D_BCAST) | A(D_MC_IN) | A(D_MC_OUT));

	expect_ack(mac_table(64, dsts[D_UC_TAB], 64, dsts[D_MC_IN]),
		   VIRTIO_NET_OK, "MAC table: 64 + 64");
	filter_phase("64 + 64 entries: the tables",
		     A(D_NEWMAC) | A(D_UC_TAB) | A(D_BCAST) | A(D_MC_IN));

	malformed();
	filter_phase("after the malformed commands: unchanged",
		     A(D_NEWMAC) | A(D_UC_TAB) | A(D_BCAST) | A(D_MC_IN));

	/* the same commands, split over descriptors and indirect */
	r = ctrl_split(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, mac,
		       6, false);
	expect_ack(r, VIRTIO_NET_OK, "MAC_ADDR_SET over 3 descriptors");
	{
		const uint8_t empty[8] = { 0 };

		r = ctrl_split(VIRTIO_NET_CTRL_MAC,
			       VIRTIO_NET_CTRL_MAC_TABLE_SET, empty, 8, true);
		expect_ack(r, VIRTIO_NET_OK, "MAC_TABLE_SET, indirect");
	}
	filter_phase("split and indirect commands: permanent MAC, no tables",
		     A(D_MAC) | A(D_BCAST));
	expect_config_mac(mac, "MAC_ADDR_SET back to the first MAC");

	/* a reset: promiscuous again, the permanent MAC, no tables */
	expect_ack(mac_addr_set(dsts[D_NEWMAC]), VIRTIO_NET_OK,
		   "MAC_ADDR_SET before the reset");
	kit_check(vio_reset(&dev), "reset");
	expect_config_mac(mac, "after a reset");
	if (!bring_up(filter_features, 1, true))
		return;
	allow_stale = true;
	filter_phase("after a reset: promiscuous", ALL);
	allow_stale = false;
	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0, "PROMISC off after the reset");
	filter_phase("after a reset, PROMISC off: no tables",
		     A(D_MAC) | A(D_BCAST));
}

/* MAC tables that do not fit 64 entries (Linux sends them whole). */
static void case_bigtable(void)
{
	const uint8_t *none = NULL;

	if (!bring_up(filter_features, 1, true))
		return;
	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0, "PROMISC off");
	expect_ack(mac_table(1, dsts[D_UC_TAB], 1, dsts[D_MC_IN]),
		   VIRTIO_NET_OK, "MAC table: 1 + 1");
	filter_phase("tables uc_tab + mc_in",
		     A(D_MAC) | A(D_UC_TAB) | A(D_BCAST) | A(D_MC_IN));
	expect_ack(mac_table(0, none, 150, none), VIRTIO_NET_OK,
		   "MAC table: 0 unicast, 150 multicast (910 bytes)");
	filter_phase("150 multicast entries: all multicast",
		     A(D_MAC) | A(D_BCAST) | A(D_MC_IN) | A(D_MC_OUT));
	expect_ack(mac_table(100, none, 100, none), VIRTIO_NET_OK,
		   "MAC table: 100 + 100 (1210 bytes)");
	filter_phase("100 + 100 entries: everything", ALL);
}

/* Commands whose feature bit was not negotiated. */
static void case_features(void)
{
	uint64_t base = (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_MRG_RXBUF);
	uint8_t one = 1;
	uint32_t id, len;

	/* CTRL_VQ alone: no RX or MAC class */
	if (!bring_up(base | (1ULL << VIRTIO_NET_F_CTRL_VQ), 1, false))
		return;
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &one, 1),
		   VIRTIO_NET_ERR, "PROMISC without CTRL_RX");
	expect_ack(mac_table(0, NULL, 0, NULL), VIRTIO_NET_ERR,
		   "MAC_TABLE_SET without CTRL_RX");
	expect_ack(mac_addr_set(dsts[D_NEWMAC]), VIRTIO_NET_ERR,
		   "MAC_ADDR_SET without CTRL_MAC_ADDR");

	/* CTRL_RX without CTRL_RX_EXTRA or CTRL_MAC_ADDR */
	if (!bring_up(base | (1ULL << VIRTIO_NET_F_CTRL_VQ) |
		      (1ULL << VIRTIO_NET_F_CTRL_RX), 1, false))
		return;
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &one, 1),
		   VIRTIO_NET_OK, "PROMISC with CTRL_RX");
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &one, 1),
		   VIRTIO_NET_OK, "ALLMULTI with CTRL_RX");
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLUNI, &one, 1),
		   VIRTIO_NET_ERR, "ALLUNI without CTRL_RX_EXTRA");
	expect_ack(ctrl_cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_NOBCAST, &one, 1),
		   VIRTIO_NET_ERR, "NOBCAST without CTRL_RX_EXTRA");
	expect_ack(mac_table(1, dsts[D_UC_TAB], 0, NULL), VIRTIO_NET_OK,
		   "MAC_TABLE_SET with CTRL_RX");
	expect_ack(mac_addr_set(dsts[D_NEWMAC]), VIRTIO_NET_ERR,
		   "MAC_ADDR_SET without CTRL_MAC_ADDR");

	/* no CTRL_VQ: queue 2 is no control queue, nothing serves it */
	if (!bring_up(base, 1, false))
		return;
	if (kit_check(!vio_queue_setup(&ctrlq, &dev, 2, QSIZE),
		      "queue 2 setup without CTRL_VQ")) {
		struct vio_buf b[2] = {
			{ (uintptr_t)cmdbuf, 3, false },
			{ (uintptr_t)ack, 1, true },
		};

		cmdbuf[0] = VIRTIO_NET_CTRL_RX;
		cmdbuf[1] = VIRTIO_NET_CTRL_RX_PROMISC;
		cmdbuf[2] = 0;
		vio_add(&ctrlq, b, 2, false);
		vio_notify(&ctrlq);
		kit_check(vio_wait_used(&ctrlq, 200000, true, &id, &len) ==
			  VIO_WAIT_TIMEOUT,
			  "a command on queue 2 without CTRL_VQ was answered");
	}
	kit_printf("features: commands need their feature bits\n");
}

/* ---- case=mq ---- */

/* Data frames of flows 0-3, flow f on transmitq f % pairs: the tap learns. */
static void tx_flows(unsigned int pairs)
{
	unsigned int f;

	for (f = 0; f < 4; f++)
		tx_data(f % pairs, f);
	for (f = 0; f < 4; f++)
		tx_data(f % pairs, f);
}

/*
 * Flows the guest sent from (0-3) come back on the queue pair that sent
 * them: the tap's flow table (tun_flow_update() on the way in,
 * tun_automq_select_queue() on the way out, symmetric hash). Flows it
 * never sent (8-23) go by hash alone: some on each queue, which ones
 * depends on the kernel's hash key.
 */
static void mq_request(const char *what, unsigned int active, bool learned,
		       unsigned int reps, unsigned int unlearned)
{
	unsigned int f, r;

	for (r = 0; r < reps; r++)
		for (f = 0; f < 4; f++)
			inj_add(mac, f, true, active == 1 ? 0 :
					      learned ? (int)(f % active) : -1);
	for (f = 8; f < 8 + unlearned; f++)
		inj_add(mac, f, true, active == 1 ? 0 : -1);
	if (nr_pairs == 1)
		inj_add(mac, 100, true, 0);	/* the marker */
	run_request(what);
}

static void case_mq(void)
{
	unsigned int want_pairs = kit_cmdline_u64("pairs", 2);
	bool nomq = kit_cmdline_u64("nomq", 0);
	uint64_t features = filter_features;
	unsigned int pairs = 1, before[MAX_PAIRS] = { 0 }, q;
	uint16_t maxp;

	if (!nomq)
		features |= 1ULL << VIRTIO_NET_F_MQ;
	if (want_pairs > 1 && !nomq)
		pairs = want_pairs;
	if (!kit_check(want_pairs >= 1 && want_pairs <= MAX_PAIRS, "pairs=%u",
		       want_pairs) ||
	    !bring_up(features, pairs, true))
		return;
	maxp = config_read16(8);
	kit_printf("features offered %#llx, max_virtqueue_pairs %u, %u pairs set up, controlq %u\n",
		   (unsigned long long)dev.offered, maxp, pairs, ctrlq.index);
	if (want_pairs > 1) {
		kit_check(dev.offered & (1ULL << VIRTIO_NET_F_MQ),
			  "MQ not offered with %u queue pairs", want_pairs);
		kit_check(maxp == want_pairs, "max_virtqueue_pairs %u, not %u",
			  maxp, want_pairs);
	} else {
		kit_check(!(dev.offered & (1ULL << VIRTIO_NET_F_MQ)),
			  "MQ offered with one queue pair");
	}
	kit_check(ctrlq.index == (pairs > 1 ? 2 * pairs : 2),
		  "controlq at %u", ctrlq.index);

	/* until VQ_PAIRS_SET, only pair 0 (5.1.6.5.5) */
	mq_request("one pair until VQ_PAIRS_SET", 1, false, 2, 8);

	if (pairs == 1) {
		expect_ack(pairs_set(1), VIRTIO_NET_ERR,
			   "VQ_PAIRS_SET without MQ negotiated");
		tx_flows(1);
		mq_request("one pair", 1, false, 2, 8);
		goto out;
	}
	expect_ack(pairs_set(0), VIRTIO_NET_ERR, "VQ_PAIRS_SET 0");
	expect_ack(pairs_set(pairs + 1), VIRTIO_NET_ERR, "VQ_PAIRS_SET max + 1");
	expect_ack(pairs_set(0x8000), VIRTIO_NET_ERR, "VQ_PAIRS_SET 0x8000");
	expect_ack(pairs_set(pairs), VIRTIO_NET_OK, "VQ_PAIRS_SET max");
	tx_flows(pairs);
	for (q = 0; q < pairs; q++)
		before[q] = rx_frames[q];
	mq_request("all pairs, learned flows", pairs, true, 3, 16);
	for (q = 0; q < pairs; q++)
		kit_check(rx_frames[q] > before[q],
			  "nothing arrived on receiveq%u", q);

	expect_ack(pairs_set(1), VIRTIO_NET_OK, "VQ_PAIRS_SET 1");
	mq_request("back to one pair", 1, false, 2, 8);

	expect_ack(pairs_set(pairs), VIRTIO_NET_OK, "VQ_PAIRS_SET max again");
	tx_flows(pairs);
	mq_request("all pairs again", pairs, true, 2, 0);
out:
	for (q = 0; q < pairs; q++)
		kit_printf("queue pair %u: rx %u tx %u\n", q, rx_frames[q],
			   tx_frames[q]);
}

/* ---- hostile cases ---- */

enum hq { HQ_RX, HQ_TX, HQ_CTRL };

static struct vio_queue *hq_queue(enum hq which)
{
	return which == HQ_RX ? &rxq[0] : which == HQ_TX ? &txq[0] : &ctrlq;
}

/*
 * A well-formed chain for the queue in descriptors 0 and 1: a 2048-byte
 * receive buffer; a TX header + data frame; a PROMISC 1 command + ack.
 */
static void hq_chain(enum hq which)
{
	struct vio_queue *q = hq_queue(which);
	static uint8_t frame[UDP_HDRS + 1300];

	switch (which) {
	case HQ_RX:
		vio_raw_desc(q, 0, (uintptr_t)rx_buf[0][0], HDR_LEN, VRING_DESC_F_WRITE |
			     VRING_DESC_F_NEXT, 1);
		vio_raw_desc(q, 1, (uintptr_t)rx_buf[0][0] + HDR_LEN, RXSIZE - HDR_LEN,
			     VRING_DESC_F_WRITE, 0);
		break;
	case HQ_TX:
		memset(txbuf, 0, HDR_LEN);
		vio_raw_desc(q, 0, (uintptr_t)txbuf, HDR_LEN, VRING_DESC_F_NEXT, 1);
		vio_raw_desc(q, 1, (uintptr_t)frame,
			     build_tx_frame(frame, 999, 0), 0, 0);
		break;
	case HQ_CTRL:
		cmdbuf[0] = VIRTIO_NET_CTRL_RX;
		cmdbuf[1] = VIRTIO_NET_CTRL_RX_PROMISC;
		cmdbuf[2] = 1;
		*ack = 0xee;
		vio_raw_desc(q, 0, (uintptr_t)cmdbuf, 3, VRING_DESC_F_NEXT, 1);
		vio_raw_desc(q, 1, (uintptr_t)ack, 1, VRING_DESC_F_WRITE, 0);
		break;
	}
}

static void hq_submit(enum hq which, uint16_t head)
{
	vio_raw_submit(hq_queue(which), head, 1);
	/* a receive chain is only looked at when a frame comes */
	if (which == HQ_RX) {
		inj_add(mac, 0, true, 0);
		send_request_ex(true);
		nr_inj = 0;
		phase++;
	}
}

/* What the device did with the broken chain. */
enum hq_result { HR_RESET, HR_USED, HR_NOTHING };

static enum hq_result hq_wait(enum hq which, uint32_t *id, uint32_t *len)
{
	enum vio_wait w = vio_wait_used(hq_queue(which), 1000000, true, id, len);

	return w == VIO_WAIT_NEEDS_RESET ? HR_RESET :
	       w == VIO_WAIT_USED ? HR_USED : HR_NOTHING;
}

static void expect_reset(enum hq which, const char *what)
{
	uint32_t id, len;
	enum hq_result r = hq_wait(which, &id, &len);

	if (kit_check(r == HR_RESET, "%s: %s", what,
		      r == HR_USED ? "the device used it" :
				     "neither used nor NEEDS_RESET in 1 s"))
		kit_printf("%s: NEEDS_RESET\n", what);
}

static uint8_t *indirect_table(enum hq which, unsigned int len)
{
	struct vio_queue *q = hq_queue(which);
	struct vring_desc *t = kit_zalloc(64);

	hq_chain(which);
	t[0] = q->desc[0];
	t[0].next = 1;
	t[1] = q->desc[1];
	t[1].next = 0;
	vio_raw_desc(q, 0, (uintptr_t)t, len, VRING_DESC_F_INDIRECT, 0);
	return (uint8_t *)t;
}

static void h_past_ram(enum hq which)
{
	hq_chain(which);
	/* the last descriptor's buffer across the end of RAM */
	hq_queue(which)->desc[1].addr = ram_end - 16;
	hq_queue(which)->desc[1].len = which == HQ_CTRL ? 64 : 1024;
	hq_submit(which, 0);
	expect_reset(which, "buffer across the end of RAM");
}

static void h_hole(enum hq which)
{
	hq_chain(which);
	hq_queue(which)->desc[0].addr = VIO_MMIO_BASE;
	hq_submit(which, 0);
	expect_reset(which, "buffer in the MMIO hole");
}

static void h_loop(enum hq which)
{
	hq_chain(which);
	hq_queue(which)->desc[1].flags |= VRING_DESC_F_NEXT;
	hq_queue(which)->desc[1].next = 0;
	hq_submit(which, 0);
	expect_reset(which, "descriptors 0 and 1 chained to each other");
}

static void h_head_oob(enum hq which)
{
	hq_chain(which);
	hq_submit(which, hq_queue(which)->size + 5);
	expect_reset(which, "avail head past the queue size");
}

static void h_next_oob(enum hq which)
{
	hq_chain(which);
	hq_queue(which)->desc[0].next = hq_queue(which)->size + 3;
	hq_submit(which, 0);
	expect_reset(which, "next index past the queue size");
}

static void h_indirect_badlen(enum hq which)
{
	indirect_table(which, 40);
	hq_submit(which, 0);
	expect_reset(which, "indirect table of 40 bytes");
}

static void h_indirect_empty(enum hq which)
{
	uint32_t id = 0, len = ~0u;
	enum hq_result r;

	/* 2.7.5.3 does not forbid it: refused, or an empty chain */
	indirect_table(which, 0);
	hq_submit(which, 0);
	r = hq_wait(which, &id, &len);
	kit_printf("indirect table of 0 bytes: %s\n",
		   r == HR_RESET ? "NEEDS_RESET" :
		   r == HR_USED ? "used" : "nothing");
	kit_check(r == HR_RESET || (which != HQ_RX && r == HR_USED && len == 0),
		  "indirect table of 0 bytes: %s, len %u",
		  r == HR_USED ? "used" : "neither used nor NEEDS_RESET", len);
}

static void h_indirect_past_ram(enum hq which)
{
	indirect_table(which, 32);
	hq_queue(which)->desc[0].addr = ram_end - 16;
	hq_submit(which, 0);
	expect_reset(which, "indirect table across the end of RAM");
}

static void case_rx_past_ram(void) { h_past_ram(HQ_RX); }
static void case_tx_past_ram(void) { h_past_ram(HQ_TX); }
static void case_ctrl_past_ram(void) { h_past_ram(HQ_CTRL); }
static void case_rx_hole(void) { h_hole(HQ_RX); }
static void case_tx_hole(void) { h_hole(HQ_TX); }
static void case_ctrl_hole(void) { h_hole(HQ_CTRL); }
static void case_rx_loop(void) { h_loop(HQ_RX); }
static void case_tx_loop(void) { h_loop(HQ_TX); }
static void case_ctrl_loop(void) { h_loop(HQ_CTRL); }
static void case_rx_head_oob(void) { h_head_oob(HQ_RX); }
static void case_tx_head_oob(void) { h_head_oob(HQ_TX); }
static void case_ctrl_head_oob(void) { h_head_oob(HQ_CTRL); }
static void case_rx_next_oob(void) { h_next_oob(HQ_RX); }
static void case_tx_next_oob(void) { h_next_oob(HQ_TX); }
static void case_ctrl_next_oob(void) { h_next_oob(HQ_CTRL); }
static void case_rx_indirect_badlen(void) { h_indirect_badlen(HQ_RX); }
static void case_tx_indirect_badlen(void) { h_indirect_badlen(HQ_TX); }
static void case_ctrl_indirect_badlen(void) { h_indirect_badlen(HQ_CTRL); }
static void case_rx_indirect_empty(void) { h_indirect_empty(HQ_RX); }
static void case_tx_indirect_empty(void) { h_indirect_empty(HQ_TX); }
static void case_ctrl_indirect_empty(void) { h_indirect_empty(HQ_CTRL); }
static void case_rx_indirect_past_ram(void) { h_indirect_past_ram(HQ_RX); }
static void case_tx_indirect_past_ram(void) { h_indirect_past_ram(HQ_TX); }
static void case_ctrl_indirect_past_ram(void) { h_indirect_past_ram(HQ_CTRL); }

/* Waits for the broken chain's completion: it must come, with len 0. */
static void expect_used_empty(enum hq which, const char *what)
{
	uint32_t id = ~0u, len = ~0u;
	enum hq_result r = hq_wait(which, &id, &len);

	if (kit_check(r == HR_USED, "%s: %s", what,
		      r == HR_RESET ? "NEEDS_RESET" : "not completed in 1 s"))
		kit_check(id == 0 && len == 0, "%s: used id %u len %u", what, id,
			  len);
	kit_printf("%s: completed, nothing written\n", what);
}

static void case_tx_short(void)
{
	hq_chain(HQ_TX);
	txq[0].desc[0].len = 6;		/* less than the 12-byte header */
	txq[0].desc[0].flags = 0;
	hq_submit(HQ_TX, 0);
	expect_used_empty(HQ_TX, "a 6-byte TX chain");
}

static void case_tx_writable(void)
{
	uint8_t *w = kit_malloc(64);

	memset(w, 0xa5, 64);
	hq_chain(HQ_TX);
	txq[0].desc[1].flags |= VRING_DESC_F_NEXT;
	txq[0].desc[1].next = 2;
	vio_raw_desc(&txq[0], 2, (uintptr_t)w, 64, VRING_DESC_F_WRITE, 0);
	hq_submit(HQ_TX, 0);
	expect_used_empty(HQ_TX, "a TX chain with a device-writable buffer");
	kit_check(w[0] == 0xa5 && w[63] == 0xa5,
		  "the device wrote into a TX chain's writable buffer");
}

static void case_tx_hdr_writable(void)
{
	/* the whole chain device-writable: nothing to send */
	hq_chain(HQ_TX);
	txq[0].desc[0].flags |= VRING_DESC_F_WRITE;
	txq[0].desc[1].flags |= VRING_DESC_F_WRITE;
	hq_submit(HQ_TX, 0);
	expect_used_empty(HQ_TX, "an all-writable TX chain");
}

/*
 * Receive buffers smaller than the 12-byte header: with MRG_RXBUF lkvm
 * spreads the header over them (num_buffers split across two buffers
 * when they are 11 bytes); the frame must arrive whole and right.
 */
static void case_rx_small_mrg(void)
{
	const unsigned int bsize = 11, n = (HDR_LEN + RX_FRAME_LEN + 10) / 11;
	uint8_t *mem = kit_zalloc(QSIZE * bsize), *frame = kit_zalloc(2048);
	unsigned int i, off = 0, nbufs = 0;
	uint32_t id, len;

	for (i = 0; i < QSIZE / 2; i++) {
		struct vio_buf b = { (uintptr_t)mem + i * bsize, bsize, true };

		vio_add(&rxq[0], &b, 1, false);
	}
	vio_kick(&rxq[0]);
	inj_add(mac, 0, true, 0);
	send_request();
	nr_inj = 0;
	phase++;
	for (i = 0; i < n; i++) {
		if (!kit_check(vio_wait_used(&rxq[0], 1000000, true, &id, &len) ==
			       VIO_WAIT_USED,
			       "11-byte buffers: buffer %u of %u never came", i + 1,
			       n))
			return;
		kit_check(id < QSIZE / 2 && len <= bsize,
			  "11-byte buffers: used id %u len %u", id, len);
		if (id < QSIZE / 2 && off + len <= 2048)
			memcpy(frame + off, mem + id * bsize, len);
		off += len;
		if (off >= HDR_LEN && !nbufs)
			nbufs = frame[10] | frame[11] << 8;
		if (off >= HDR_LEN && off >= HDR_LEN + RX_FRAME_LEN)
			break;
	}
	kit_printf("11-byte buffers: a %u-byte frame in %u buffers, num_buffers %u\n",
		   off - HDR_LEN, i + 1, nbufs);
	kit_check(off == HDR_LEN + RX_FRAME_LEN && nbufs == n && i + 1 == n,
		  "11-byte buffers: %u bytes in %u buffers, num_buffers %u; expected %u in %u",
		  off, i + 1, nbufs, HDR_LEN + RX_FRAME_LEN, n);
	kit_check(get_le32(frame + HDR_LEN + UDP_HDRS) == RX_MAGIC &&
		  !memcmp(frame + HDR_LEN, mac, 6) &&
		  rx_pattern(phase - 1, 0, 0, RX_PATTERN - 1) ==
		  frame[HDR_LEN + RX_FRAME_LEN - 1],
		  "11-byte buffers: the frame is not the helper's");
}

/*
 * Without MRG_RXBUF a 4-byte buffer holds no frame: the frames are
 * dropped, or the buffer is given back empty; the device is not broken.
 */
static void case_rx_tiny(void)
{
	struct vio_buf b = { (uintptr_t)rx_buf[0][0], 4, true };
	uint32_t id = 0, len = ~0u;
	enum vio_wait w;

	vio_add(&rxq[0], &b, 1, false);
	vio_kick(&rxq[0]);
	inj_add(mac, 0, true, 0);
	inj_add(mac, 1, true, 0);
	send_request();
	nr_inj = 0;
	phase++;
	w = vio_wait_used(&rxq[0], 300000, true, &id, &len);
	kit_check(w == VIO_WAIT_TIMEOUT || (w == VIO_WAIT_USED && !len),
		  "a 4-byte receive buffer without MRG_RXBUF: %s, len %u",
		  w == VIO_WAIT_USED ? "used" : "NEEDS_RESET", len);
	kit_printf("a 4-byte receive buffer: %s\n",
		   w == VIO_WAIT_USED ? "given back empty" : "frames dropped");
}

/*
 * A receive chain whose header part is device-readable: never written
 * into; NEEDS_RESET or given back empty.
 */
static void case_rx_mixed(void)
{
	uint32_t id = 0, len = 0;
	enum hq_result r;

	memset(rx_buf[0][0], 0xa5, HDR_LEN);
	hq_chain(HQ_RX);
	rxq[0].desc[0].flags &= ~VRING_DESC_F_WRITE;
	hq_submit(HQ_RX, 0);
	r = hq_wait(HQ_RX, &id, &len);
	kit_printf("a receive chain with a readable header: %s\n",
		   r == HR_RESET ? "NEEDS_RESET" :
		   r == HR_USED ? "used" : "left alone");
	kit_check(r == HR_RESET || (r == HR_USED && len == 0),
		  "a receive chain with a readable header: %s (len %u)",
		  r == HR_USED ? "used" : "neither used nor NEEDS_RESET: receiving stalls",
		  len);
	kit_check(rx_buf[0][0][0] == 0xa5 && rx_buf[0][0][HDR_LEN - 1] == 0xa5,
		  "the device wrote into a device-readable buffer");
}

/*
 * A receive chain with nothing device-writable: never written into, and
 * not left at the head of the ring to stall every frame behind it:
 * NEEDS_RESET (as QEMU does), or given back empty.
 */
static void case_rx_readonly(void)
{
	uint32_t id = 0, len = 0;
	enum hq_result r;

	memset(rx_buf[0][0], 0xa5, RXSIZE);
	hq_chain(HQ_RX);
	rxq[0].desc[0].flags &= ~VRING_DESC_F_WRITE;
	rxq[0].desc[1].flags &= ~VRING_DESC_F_WRITE;
	hq_submit(HQ_RX, 0);
	r = hq_wait(HQ_RX, &id, &len);
	kit_printf("a device-readable receive chain: %s\n",
		   r == HR_RESET ? "NEEDS_RESET" :
		   r == HR_USED ? "used" : "left alone");
	kit_check(r == HR_RESET || (r == HR_USED && len == 0),
		  "a device-readable receive chain: %s (len %u)",
		  r == HR_USED ? "used" : "neither used nor NEEDS_RESET: receiving stalls",
		  len);
	kit_check(rx_buf[0][0][0] == 0xa5 && rx_buf[0][0][RXSIZE - 1] == 0xa5,
		  "the device wrote into a device-readable buffer");
}

/*
 * Good and bad receive buffers in one batch, [good, read-only, good,
 * good], with three frames coming: each good buffer gets the next frame in
 * ring order, whole; the bad one comes back empty and unwritten; no head
 * is used twice and none is lost.
 */
static void case_rx_interleaved(void)
{
	enum { N = 4, BAD = 1 };
	uint8_t *mem = kit_zalloc(N * RXSIZE);
	int head[N];
	bool seen[N] = { false };
	unsigned int i, got = 0, frames = 0;

	if (!kit_check(mem, "heap"))
		return;
	memset(mem + BAD * RXSIZE, 0xa5, RXSIZE);
	for (i = 0; i < N; i++) {
		struct vio_buf b = { (uintptr_t)mem + i * RXSIZE, RXSIZE,
				     i != BAD };

		head[i] = vio_add(&rxq[0], &b, 1, false);
	}
	vio_kick(&rxq[0]);
	for (i = 0; i < N - 1; i++)
		inj_add(mac, i, true, 0);
	send_request();
	nr_inj = 0;
	phase++;
	while (got < N) {
		uint32_t id = ~0u, len = 0;
		unsigned int j;
		uint8_t *f;

		if (!kit_check(vio_wait_used(&rxq[0], WAIT_US, true, &id, &len) ==
			       VIO_WAIT_USED,
			       "interleaved: %u of %u buffers came back", got, N))
			return;
		for (j = 0; j < N && head[j] != (int)id; j++)
			;
		if (!kit_check(j < N && !seen[j],
			       "interleaved: head %u unknown or used twice", id))
			return;
		seen[j] = true;
		got++;
		f = mem + j * RXSIZE;
		if (j == BAD) {
			kit_check(len == 0 && f[0] == 0xa5 && f[RXSIZE - 1] == 0xa5,
				  "interleaved: the read-only buffer used with len %u or written",
				  len);
			continue;
		}
		/* the good buffers take the frames in ring order */
		kit_check(len == HDR_LEN + RX_FRAME_LEN &&
			  get_le32(f + HDR_LEN + UDP_HDRS) == RX_MAGIC &&
			  f[HDR_LEN + RX_FRAME_LEN - 1] ==
			  rx_pattern(phase - 1, frames, frames, RX_PATTERN - 1),
			  "interleaved: buffer %u (len %u) does not hold frame %u",
			  j, len, frames);
		frames++;
	}
	kit_printf("interleaved: %u frames in the good buffers, the bad one given back empty\n",
		   frames);
}

static void case_ctrl_readable_ack(void)
{
	/* the ack buffer device-readable: nowhere to answer */
	uint32_t id = 0, len = ~0u;
	enum hq_result r;

	hq_chain(HQ_CTRL);
	ctrlq.desc[1].flags = 0;
	hq_submit(HQ_CTRL, 0);
	r = hq_wait(HQ_CTRL, &id, &len);
	kit_check(r == HR_USED && len == 0 && *ack == 0xee,
		  "a command whose ack is device-readable: %s, len %u, ack %#x",
		  r == HR_RESET ? "NEEDS_RESET" : r == HR_USED ? "used" :
		  "not completed", len, *ack);
}

struct hostile_case {
	const char *name;
	void (*fn)(void);
	bool no_mrg;
};

static const struct hostile_case cases[] = {
	{ "h_rx_past_ram", case_rx_past_ram, false },
	{ "h_tx_past_ram", case_tx_past_ram, false },
	{ "h_ctrl_past_ram", case_ctrl_past_ram, false },
	{ "h_rx_hole", case_rx_hole, false },
	{ "h_tx_hole", case_tx_hole, false },
	{ "h_ctrl_hole", case_ctrl_hole, false },
	{ "h_rx_loop", case_rx_loop, false },
	{ "h_tx_loop", case_tx_loop, false },
	{ "h_ctrl_loop", case_ctrl_loop, false },
	{ "h_rx_head_oob", case_rx_head_oob, false },
	{ "h_tx_head_oob", case_tx_head_oob, false },
	{ "h_ctrl_head_oob", case_ctrl_head_oob, false },
	{ "h_rx_next_oob", case_rx_next_oob, false },
	{ "h_tx_next_oob", case_tx_next_oob, false },
	{ "h_ctrl_next_oob", case_ctrl_next_oob, false },
	{ "h_rx_indirect_badlen", case_rx_indirect_badlen, false },
	{ "h_tx_indirect_badlen", case_tx_indirect_badlen, false },
	{ "h_ctrl_indirect_badlen", case_ctrl_indirect_badlen, false },
	{ "h_rx_indirect_empty", case_rx_indirect_empty, false },
	{ "h_tx_indirect_empty", case_tx_indirect_empty, false },
	{ "h_ctrl_indirect_empty", case_ctrl_indirect_empty, false },
	{ "h_rx_indirect_past_ram", case_rx_indirect_past_ram, false },
	{ "h_tx_indirect_past_ram", case_tx_indirect_past_ram, false },
	{ "h_ctrl_indirect_past_ram", case_ctrl_indirect_past_ram, false },
	{ "h_tx_short", case_tx_short, false },
	{ "h_tx_writable", case_tx_writable, false },
	{ "h_tx_hdr_writable", case_tx_hdr_writable, false },
	{ "h_rx_small_mrg", case_rx_small_mrg, false },
	{ "h_rx_tiny", case_rx_tiny, true },
	{ "h_rx_readonly", case_rx_readonly, false },
	{ "h_rx_mixed", case_rx_mixed, false },
	{ "h_rx_interleaved", case_rx_interleaved, false },
	{ "h_ctrl_readable_ack", case_ctrl_readable_ack, false },
};

/* After the hostile step: reset, set up again, traffic both ways. */
static void recover(void)
{
	if (!kit_check(vio_reset(&dev), "reset after the hostile step") ||
	    !bring_up(filter_features, 1, true))
		return;
	allow_stale = true;
	tx_data(0, 5);
	rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0, "PROMISC off after the reset");
	inj_add(dsts[D_UC_OTHER], 1, false, 0);
	inj_add(mac, 2, true, 0);
	inj_add(dsts[D_BCAST], 3, true, 0);
	if (run_request("after the reset"))
		kit_printf("recovered: traffic after reset ok\n");
}

static void case_hostile(const struct hostile_case *c)
{
	uint64_t features = filter_features;

	ram_end = kit_ram_end();
	if (!kit_check(ram_end, "no memory map"))
		return;
	if (c->no_mrg)
		features &= ~(1ULL << VIRTIO_NET_F_MRG_RXBUF);
	/* the receive queue stays empty: the case posts its own chain */
	if (!bring_up(features, 1, false))
		return;
	kit_printf("case %s (RAM ends at %#llx)\n", c->name,
		   (unsigned long long)ram_end);
	c->fn();
	recover();
}

KIT_TEST(netctrl)
{
	char cname[32] = "", buf[32];
	unsigned int i, q, d;

	transport = vio_cmdline_transport(VIO_PCI);
	for (q = 0; q < MAX_PAIRS; q++)
		for (i = 0; i < RXBUFS; i++)
			if (!(rx_buf[q][i] = kit_zalloc(RXSIZE)))
				break;
	txbuf = kit_zalloc(HDR_LEN + 1600);
	cmdbuf = kit_zalloc(8192);
	ack = kit_zalloc(16);
	if (!kit_check(rx_buf[MAX_PAIRS - 1][RXBUFS - 1] && txbuf && cmdbuf && ack,
		       "out of heap") ||
	    !find_device())
		kit_finish();
	config_mac(mac);
	memcpy(dsts[D_MAC], mac, 6);
	kit_printf("netctrl: mac " MACFMT "\n", MACARG(mac));
	if (kit_cmdline_get("mac", buf, sizeof(buf))) {
		uint8_t m[6];

		kit_check(kit_parse_mac(buf, m) && !memcmp(m, mac, 6),
			  "config MAC is not mac=%s", buf);
	}
	for (d = D_NEWMAC; d < D_COUNT; d++)
		if (!kit_check(memcmp(dsts[d], mac, 6),
			       "the MAC is the test's %s address", dst_names[d]))
			kit_finish();

	kit_cmdline_get("case", cname, sizeof(cname));
	if (!strcmp(cname, "filter")) {
		case_filter();
	} else if (!strcmp(cname, "bigtable")) {
		case_bigtable();
	} else if (!strcmp(cname, "features")) {
		case_features();
	} else if (!strcmp(cname, "mq")) {
		case_mq();
	} else {
		for (i = 0; i < ARRAY_SIZE(cases); i++)
			if (!strcmp(cases[i].name, cname))
				break;
		if (i == ARRAY_SIZE(cases)) {
			kit_printf("cases: filter bigtable features mq");
			for (i = 0; i < ARRAY_SIZE(cases); i++)
				kit_printf(" %s", cases[i].name);
			kit_printf("\n");
			kit_fail("unknown case '%s'", cname);
			kit_finish();
		}
		case_hostile(&cases[i]);
	}
	kit_check(!needs_reset(), "NEEDS_RESET at the end");
	kit_printf("netctrl: rx0=%u rx1=%u tx0=%u tx1=%u ctrl=%u requests=%u filtered=%u other=%u tx_idx=%u\n",
		   rx_frames[0], rx_frames[1], tx_frames[0], tx_frames[1],
		   ctrl_cmds, requests, filtered, rx_other, tx_idx);
	kit_finish();
}
