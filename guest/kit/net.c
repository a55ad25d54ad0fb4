// SPDX-License-Identifier: GPL-2.0
/*
 * net.elf: lkvm's virtio-net (-n mode=tap,...) driven from inside the
 * guest, against a packet helper on the tap's side in the host test
 * (tests/kit/test_virtio_net.py, tests/kit/net_helper.py), which checks
 * what the guest sends byte for byte and injects what the guest expects.
 *
 * Frames (both directions): dst, src, ethertype, then a payload of
 * payload_len(seed, i) bytes: u32 index i, u32 seed, u32 payload length,
 * then the little-endian words pattern_word(seed, ethertype, i, 0, 1, ...)
 * cut at the length. Frame 0 carries 1500 payload bytes, frame 1 the
 * minimum 46 (a 60-byte frame), the others a spread in between.
 *
 *   transport=mmio|pci|legacy  which virtio transport to look for
 *   mac=52:54:00:12:34:56      the MAC the config space must hold
 *   seed=N                     pattern seed (both directions)
 *   tx=N                       frames to send, ethertype 0x88b5, to dst=
 *                              (default broadcast), src = the device MAC
 *   rx=N                       frames to receive, ethertype 0x88b6, in
 *                              order, to our MAC or broadcast
 *   rxbufs=N rxsize=N          receive buffers posted (16) and their size
 *                              (2048); each is re-posted once consumed,
 *                              so rx may exceed rxbufs
 *   rxchain=1                  each receive buffer as two descriptors
 *   mrg=0                      do not negotiate MRG_RXBUF (with legacy
 *                              virtio-pci the header is then 10 bytes);
 *                              frames too big for one buffer must then be
 *                              dropped, and the others still arrive
 *   indirect=1 event_idx=1     negotiate them; indirect: every other TX
 *                              chain is an indirect table
 *   qsize=N                    queue size to ask for (default: the
 *                              device's, which must be 256)
 *   hold=MS                    post no receive buffers until every TX frame
 *                              completed and MS more milliseconds passed:
 *                              the host injected its frames meanwhile and
 *                              lkvm must keep them, not drop them
 *   early=1                    post (and kick) the receive buffers before
 *                              DRIVER_OK, as 3.1.1 allows: lkvm must not
 *                              use them before, nor forget them after
 *   delay=MS                   wait before the first TX frame
 *   wait=MS                    how long to wait for everything (5000)
 *   reset=1                    then reset the device, set it up again
 *                              (new rings) and do it all once more: TX
 *                              frames tx..2tx-1, RX frames rx..2rx-1 (the
 *                              host injects those on seeing TX frame tx)
 *   bad=tx_short|tx_hdr_only|tx_huge
 *                              after the traffic, one broken TX chain: 6
 *                              bytes (less than the header), the header
 *                              alone, or 72000 bytes (beyond any frame);
 *                              lkvm must complete it (dropping the frame)
 *                              or set NEEDS_RESET, never hang the queue;
 *                              if it completed, one more good frame (index
 *                              tx) must still get through
 *   irq=1                      wait for interrupts instead of spinning:
 *                              MSI-X (pci, both queues' entries), INTx on
 *                              the function's line (legacy), or the slot's
 *                              IOAPIC pin (mmio), all to one vector taken
 *                              with IF=0 from the LAPIC IRR; the rings are
 *                              only looked at after one came, and a used
 *                              ring that advanced without an interrupt is
 *                              a failure (a Linux guest would stall there)
 *
 * TX chains use three layouts in turn: [hdr+frame], [hdr][frame], and
 * [5 header bytes][the rest of the header + 20 frame bytes][the rest].
 * Without irq=1 the guest polls the used rings; interrupts are left on
 * (IF=0 keeps them pending) so lkvm's counters see them, but nothing then
 * depends on them.
 */
#include <linux/virtio_net.h>

#include "virtio_pci.h"

#define ETH_TYPE_TX		0x88b5	/* guest -> host */
#define ETH_TYPE_RX		0x88b6	/* host -> guest */
#define ETH_HLEN_		14
#define PAYLOAD_MIN		46
#define PAYLOAD_MAX		1500
#define FRAME_MAX		(ETH_HLEN_ + PAYLOAD_MAX)
#define HOST_SRC_MAC		"\x02\x00\x00\x00\x00\x01"
#define TX_SLOTS		32	/* TX chains in flight at most */
#define OTHER_SHOWN		4
#define MAX_QSIZE		1024
#define IRQ_VECTOR		0x50
#define IRQ_CONFIG_VECTOR	0x5f	/* MSI-X config changes: unexpected */

struct u64u {
	uint64_t v;
} __packed;

struct u32u {
	uint32_t v;
} __packed;

static struct vio_dev dev;
static enum vio_transport transport;
static struct vio_queue rxq, txq;
static uint64_t seed;
static uint8_t mac[6];
static uint8_t dst[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static unsigned int hdr_len;		/* 12, or 10 for legacy without MRG */
static bool mrg, use_indirect, rxchain;

static unsigned int rxbufs, rxsize;
static uint8_t **rx_buf;		/* rxbufs buffers */
static int *rx_head_buf;		/* head -> buffer index, -1 if none */
static uint8_t *frame;			/* a received frame put together */

static uint8_t *tx_slot[TX_SLOTS];
static int *tx_head_slot;		/* head -> slot, -1 if none */
static bool tx_slot_busy[TX_SLOTS];

static unsigned int tx_want, rx_want, rx_expect;
static uint32_t rx_idx;			/* the next frame index due */
static unsigned int tx_sent, tx_done, rx_got, rx_used, rx_multi;
static unsigned int rx_underfilled, rx_other, rx_bad;
static unsigned int max_num_buffers;
static unsigned int tx_kicks, rx_kicks;
static bool use_irq, irq_missed, early;
static uint64_t hold;			/* ms without receive buffers */
static unsigned int irqs;

/* The host test computes the same words (tests/kit/net_helper.py). */
static uint64_t pattern_word(uint16_t type, uint32_t idx, uint32_t j)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL +
		     ((uint64_t)type << 32 | idx) * 0xbf58476d1ce4e5b9ULL + j;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x;
}

static unsigned int payload_len(uint32_t idx)
{
	if (idx == 0)
		return PAYLOAD_MAX;
	if (idx == 1)
		return PAYLOAD_MIN;
	return PAYLOAD_MIN + (seed * 7 + idx * 397ULL) %
			     (PAYLOAD_MAX - PAYLOAD_MIN + 1);
}

/* Writes frame idx (header, payload) at p; returns its length. */
static unsigned int build_frame(uint8_t *p, uint32_t idx)
{
	unsigned int len = payload_len(idx), j, off;
	uint8_t *pl = p + ETH_HLEN_;

	memcpy(p, dst, 6);
	memcpy(p + 6, mac, 6);
	p[12] = ETH_TYPE_TX >> 8;
	p[13] = ETH_TYPE_TX & 0xff;
	((struct u32u *)pl)->v = idx;
	((struct u32u *)(pl + 4))->v = (uint32_t)seed;
	((struct u32u *)(pl + 8))->v = len;
	for (j = 0, off = 12; off + 8 <= len; j++, off += 8)
		((struct u64u *)(pl + off))->v = pattern_word(ETH_TYPE_TX, idx, j);
	if (off < len) {
		uint64_t w = pattern_word(ETH_TYPE_TX, idx, j);

		for (; off < len; off++, w >>= 8)
			pl[off] = (uint8_t)w;
	}
	return ETH_HLEN_ + len;
}

/* Checks a received frame of ethertype 0x88b6; true if it is frame idx. */
static bool check_rx_frame(const uint8_t *p, unsigned int flen, uint32_t idx)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const uint8_t *pl = p + ETH_HLEN_;
	unsigned int len, j, off;
	uint32_t got_idx, got_seed;

	if (!kit_check(flen >= ETH_HLEN_ + 12, "rx frame %u: only %u bytes",
		       idx, flen))
		return false;
	got_idx = ((const struct u32u *)pl)->v;
	got_seed = ((const struct u32u *)(pl + 4))->v;
	len = ((const struct u32u *)(pl + 8))->v;
	if (!kit_check(got_idx == idx && got_seed == (uint32_t)seed,
		       "rx: frame %u (seed %u) where frame %u (seed %u) was due",
		       got_idx, got_seed, idx, (uint32_t)seed))
		return false;
	if (!kit_check(len == payload_len(idx) && flen == ETH_HLEN_ + len,
		       "rx frame %u: %u bytes, payload length field %u, expected payload %u",
		       idx, flen, len, payload_len(idx)))
		return false;
	kit_check(!memcmp(p, mac, 6) || !memcmp(p, bcast, 6),
		  "rx frame %u: dst %02x:%02x:%02x:%02x:%02x:%02x is not ours",
		  idx, p[0], p[1], p[2], p[3], p[4], p[5]);
	kit_check(!memcmp(p + 6, HOST_SRC_MAC, 6),
		  "rx frame %u: src %02x:%02x:%02x:%02x:%02x:%02x", idx, p[6],
		  p[7], p[8], p[9], p[10], p[11]);
	for (j = 0, off = 12; off < len; j++, off += 8) {
		uint64_t w = pattern_word(ETH_TYPE_RX, idx, j);
		unsigned int k;

		if (off + 8 <= len) {
			if (((const struct u64u *)(pl + off))->v == w)
				continue;
		} else {
			for (k = 0; off + k < len; k++, w >>= 8)
				if (pl[off + k] != (uint8_t)w)
					break;
			if (off + k == len)
				continue;
		}
		kit_fail("rx frame %u: payload differs in bytes %u-%u", idx,
			 off, off + 7);
		return false;
	}
	return true;
}

static bool find_device(void)
{
	struct vio_dev devs[VIO_MMIO_SLOTS];
	unsigned int n, i;
	uint32_t size = 0, gsi = 0;
	bool edge_high = false;

	if (transport != VIO_MMIO) {
		if (!vio_pci_find(&dev, transport == VIO_PCI_LEGACY)) {
			kit_fail("no virtio-net device (no %s virtio-pci function)",
				 transport == VIO_PCI ? "modern" : "legacy");
			return false;
		}
		kit_printf("virtio-pci%s 00:%02x.0: device %u, INTx line %u\n",
			   transport == VIO_PCI_LEGACY ? " (legacy)" : "",
			   dev.slot, dev.device_id, dev.gsi);
		return kit_check(dev.device_id == VIRTIO_ID_NET,
				 "no virtio-net device (device ID %u)",
				 dev.device_id);
	}
	n = vio_find(devs, ARRAY_SIZE(devs));
	for (i = 0; i < n; i++)
		if (devs[i].device_id == VIRTIO_ID_NET)
			break;
	if (i == n) {
		kit_fail("no virtio-net device (%u virtio-mmio devices)", n);
		return false;
	}
	dev = devs[i];
	kit_printf("virtio-mmio slot %u at %#lx: device %u, GSI %u\n",
		   dev.slot, dev.base, dev.device_id, dev.gsi);
	if (kit_check(vio_dsdt_lookup(dev.base, &size, &gsi, &edge_high),
		      "DSDT: no LNRO0005 with Memory32Fixed at %#lx", dev.base))
		kit_printf("DSDT: LNRO0005 at %#lx size %#x GSI %u\n", dev.base,
			   size, gsi);
	return true;
}

static void post_all_rx(void);

static bool setup(void)
{
	bool event_idx = kit_cmdline_u64("event_idx", 0);
	unsigned int qsize = kit_cmdline_u64("qsize", 256);
	uint64_t want = (1ULL << VIRTIO_NET_F_MAC) |
			(1ULL << VIRTIO_NET_F_STATUS);
	uint64_t offered;
	char buf[32];
	uint16_t status;
	uint8_t st;
	unsigned int i;

	if (kit_cmdline_u64("mrg", 1))
		want |= 1ULL << VIRTIO_NET_F_MRG_RXBUF;
	if (use_indirect)
		want |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	if (event_idx)
		want |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (!kit_check(!vio_negotiate(&dev, want), "feature negotiation"))
		return false;
	offered = dev.offered;
	kit_printf("features offered %#llx accepted %#llx\n",
		   (unsigned long long)offered,
		   (unsigned long long)dev.features);
	if (transport == VIO_PCI_LEGACY)
		kit_check(!(offered >> 32), "legacy features above bit 31");
	else
		kit_check(offered & (1ULL << VIRTIO_F_VERSION_1), "no VERSION_1");
	kit_check(offered & (1ULL << VIRTIO_NET_F_MAC), "MAC not offered");
	kit_check(offered & (1ULL << VIRTIO_NET_F_STATUS), "STATUS not offered");
	kit_check(offered & (1ULL << VIRTIO_NET_F_MRG_RXBUF),
		  "MRG_RXBUF not offered");
	kit_check(offered & (1ULL << VIRTIO_RING_F_INDIRECT_DESC),
		  "INDIRECT_DESC not offered");
	kit_check(offered & (1ULL << VIRTIO_RING_F_EVENT_IDX),
		  "EVENT_IDX not offered");
	/* one queue pair unless queues=N asked for more (not here) */
	kit_check(offered & (1ULL << VIRTIO_NET_F_CTRL_VQ),
		  "CTRL_VQ not offered: %#llx", (unsigned long long)offered);
	kit_check(!(offered & (1ULL << VIRTIO_NET_F_MQ)),
		  "MQ offered for a single queue pair: %#llx",
		  (unsigned long long)offered);
	mrg = dev.features & (1ULL << VIRTIO_NET_F_MRG_RXBUF);
	hdr_len = (mrg || (dev.features & (1ULL << VIRTIO_F_VERSION_1))) ?
		  12 : 10;

	for (i = 0; i < 6; i++)
		mac[i] = vio_config_read8(&dev, i);
	status = vio_config_read8(&dev, 6) | vio_config_read8(&dev, 7) << 8;
	kit_printf("mac %02x:%02x:%02x:%02x:%02x:%02x status %#x header %u bytes\n",
		   mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], status,
		   hdr_len);
	kit_check(!(mac[0] & 1), "the MAC is a multicast address");
	kit_check(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5],
		  "the MAC is all zeroes");
	if (kit_cmdline_get("mac", buf, sizeof(buf))) {
		uint8_t m[6];

		if (kit_check(kit_parse_mac(buf, m), "mac=%s: not a MAC", buf))
			kit_check(!memcmp(m, mac, 6),
				  "config MAC is not mac=%s", buf);
	}
	kit_check(status & VIRTIO_NET_S_LINK_UP, "status %#x: link not up",
		  status);
	/* other access widths see the same bytes (Linux reads status as u16) */
	{
		uint32_t w = vio_config_read32(&dev, 4);
		uint32_t want = mac[4] | mac[5] << 8 | (uint32_t)status << 16;

		kit_check(w == want, "config: 32-bit read at 4 gives %#x, bytes say %#x",
			  w, want);
		w = vio_config_read32(&dev, 0);
		want = mac[0] | mac[1] << 8 | mac[2] << 16 | (uint32_t)mac[3] << 24;
		kit_check(w == want, "config: 32-bit read at 0 gives %#x, bytes say %#x",
			  w, want);
		if (transport != VIO_MMIO) {
			w = vio_pci_config_read(&dev, 6, 2);
			kit_check(w == status,
				  "config: 16-bit status read gives %#x, bytes say %#x",
				  w, status);
		}
	}

	/* 4.1.5.1.2: vectors are chosen before the queues are enabled */
	if (use_irq && transport == VIO_PCI &&
	    !kit_check(vio_msix_enable(&dev), "MSI-X enable"))
		return false;
	if (!kit_check(!vio_queue_setup(&rxq, &dev, 0, qsize), "rx queue setup") ||
	    !kit_check(!vio_queue_setup(&txq, &dev, 1, qsize), "tx queue setup"))
		return false;
	kit_check(vio_queue_enabled(&rxq) && vio_queue_enabled(&txq),
		  "queues do not read back enabled");
	if (!kit_cmdline_has("qsize") || transport == VIO_PCI_LEGACY)
		kit_check(rxq.size == 256 && txq.size == 256,
			  "queue sizes %u and %u, not 256", rxq.size, txq.size);
	if (!kit_check(rxq.size <= MAX_QSIZE && txq.size <= MAX_QSIZE,
		       "queue sizes %u and %u", rxq.size, txq.size) ||
	    !kit_check(rxsize >= hdr_len + (rxchain ? 1 : 0),
		       "rxsize=%u", rxsize) ||
	    !kit_check(rxbufs * (rxchain ? 2 : 1) <= rxq.size,
		       "rxbufs=%u does not fit the ring", rxbufs))
		return false;
	for (i = 0; i < MAX_QSIZE; i++)
		rx_head_buf[i] = tx_head_slot[i] = -1;
	/* 3.1.1 step 7: queues may be populated before DRIVER_OK */
	if (early && !hold) {
		post_all_rx();
		kit_printf("early: %u receive buffers posted and kicked before DRIVER_OK\n",
			   rxbufs);
	}
	if (use_irq && transport == VIO_PCI) {
		vio_msix_set(&dev, 0, IRQ_CONFIG_VECTOR, false);
		vio_msix_set(&dev, 1 + rxq.index, IRQ_VECTOR, false);
		vio_msix_set(&dev, 1 + txq.index, IRQ_VECTOR, false);
	} else if (use_irq && transport == VIO_PCI_LEGACY) {
		vio_intx_route(&dev, IRQ_VECTOR);
	} else if (use_irq) {
		vio_irq_route(&dev, IRQ_VECTOR);
	}
	vio_driver_ok(&dev);
	st = vio_status(&dev);
	kit_check(st == (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			 (transport == VIO_PCI_LEGACY ? 0 :
			  VIRTIO_CONFIG_S_FEATURES_OK) |
			 VIRTIO_CONFIG_S_DRIVER_OK),
		  "Status %#x after DRIVER_OK", st);
	return true;
}

/* ---- receive ---- */

static bool rx_post(unsigned int b)
{
	struct vio_buf bufs[2] = {
		{ (uintptr_t)rx_buf[b], rxsize, true },
	};
	unsigned int n = 1;
	int head;

	if (rxchain) {
		bufs[0].len = hdr_len;
		bufs[1] = (struct vio_buf){ (uintptr_t)rx_buf[b] + hdr_len,
					    rxsize - hdr_len, true };
		n = 2;
	}
	head = vio_add(&rxq, bufs, n, false);
	if (!kit_check(head >= 0, "rx: no room for buffer %u", b))
		return false;
	rx_head_buf[head] = b;
	return true;
}

static void rx_kick(void)
{
	if (vio_kick(&rxq))
		rx_kicks++;
}

/* The buffer a used element names, or -1 (and a failure). */
static int rx_take(uint32_t id, uint32_t len)
{
	int b;

	rx_used++;
	if (!kit_check(id < rxq.size && rx_head_buf[id] >= 0,
		       "rx: used id %u is not a posted buffer", id))
		return -1;
	b = rx_head_buf[id];
	rx_head_buf[id] = -1;
	if (!kit_check(len <= rxsize, "rx: used len %u > buffer size %u",
		       len, rxsize)) {
		rx_post(b);
		return -1;
	}
	return b;
}

/* Waits a little for the next used element of a merged frame. */
static bool rx_next(uint32_t *id, uint32_t *len)
{
	return vio_wait_used(&rxq, 200000, false, id, len) == VIO_WAIT_USED;
}

/* Without MRG_RXBUF a frame must fit one buffer, or it is dropped. */
static bool frame_fits(uint32_t idx)
{
	return mrg || hdr_len + ETH_HLEN_ + payload_len(idx) <= rxsize;
}

static void rx_frame_done(unsigned int flen, unsigned int nbufs)
{
	uint16_t type;

	if (flen < ETH_HLEN_) {
		kit_fail("rx: a %u-byte frame", flen);
		rx_bad++;
		return;
	}
	type = frame[12] << 8 | frame[13];
	if (type != ETH_TYPE_RX) {
		/* not ours: the host stack's chatter, if any */
		if (rx_other++ < OTHER_SHOWN)
			kit_printf("rx: ignoring a %u-byte frame of ethertype %#x\n",
				   flen, type);
		return;
	}
	while (rx_idx < rx_want && !frame_fits(rx_idx))
		rx_idx++;
	if (rx_got >= rx_expect) {
		kit_fail("rx: frame beyond the %u expected (index %u)", rx_expect,
			 ((const struct u32u *)(frame + ETH_HLEN_))->v);
		rx_bad++;
		return;
	}
	if (nbufs > 1)
		rx_multi++;
	if (nbufs > max_num_buffers)
		max_num_buffers = nbufs;
	if (check_rx_frame(frame, flen, rx_idx)) {
		rx_got++;
		rx_idx++;
	} else {
		rx_bad++;
	}
}

/* Takes one received frame (all its buffers) if there is one. */
static bool rx_poll(void)
{
	const struct vio_net_hdr *h;
	uint32_t id, len;
	unsigned int nbufs, flen, k, need;
	int b;

	if (!vio_get_used(&rxq, &id, &len))
		return false;
	b = rx_take(id, len);
	if (b < 0)
		return true;
	h = (const struct vio_net_hdr *)rx_buf[b];
	if (!kit_check(len >= hdr_len, "rx: used len %u, less than the header",
		       len)) {
		rx_post(b);
		return true;
	}
	nbufs = hdr_len == 12 ? h->num_buffers : 1;
	kit_check(h->flags == 0 && h->gso_type == 0,
		  "rx: header flags %#x gso_type %u (nothing negotiated allows them)",
		  h->flags, h->gso_type);
	if (!mrg && hdr_len == 12)
		kit_check(nbufs == 1,
			  "rx: num_buffers %u without MRG_RXBUF (must be 1)",
			  nbufs);
	if (!kit_check(nbufs >= 1 && nbufs <= rxbufs,
		       "rx: num_buffers %u (%u buffers posted)", nbufs,
		       rxbufs)) {
		rx_post(b);
		rx_kick();
		rx_bad++;
		return true;
	}
	flen = len - hdr_len;
	memcpy(frame, rx_buf[b] + hdr_len, flen > FRAME_MAX ? FRAME_MAX : flen);
	if (nbufs > 1 && len < rxsize)
		rx_underfilled++;
	rx_post(b);
	for (k = 1; k < nbufs; k++) {
		if (!kit_check(rx_next(&id, &len),
			       "rx: buffer %u of %u of a merged frame never came",
			       k + 1, nbufs))
			break;
		b = rx_take(id, len);
		if (b < 0)
			break;
		if (flen < FRAME_MAX)
			memcpy(frame + flen, rx_buf[b],
			       flen + len > FRAME_MAX ? FRAME_MAX - flen : len);
		flen += len;
		if (k + 1 < nbufs && len < rxsize)
			rx_underfilled++;
		kit_check(len > 0, "rx: empty buffer %u of %u", k + 1, nbufs);
		rx_post(b);
	}
	rx_kick();
	if (k < nbufs) {
		rx_bad++;
		return true;
	}
	need = (hdr_len + flen + rxsize - 1) / rxsize;
	if (nbufs > need && rx_underfilled < OTHER_SHOWN)
		kit_printf("rx: a %u-byte frame in %u buffers where %u would do\n",
			   flen, nbufs, need);
	if (!kit_check(flen <= FRAME_MAX, "rx: a %u-byte frame (MTU 1500)",
		       flen)) {
		rx_bad++;
		return true;
	}
	rx_frame_done(flen, nbufs);
	return true;
}

/* ---- transmit ---- */

static bool tx_poll(void)
{
	uint32_t id, len;
	int s;

	if (!vio_get_used(&txq, &id, &len))
		return false;
	if (!kit_check(id < txq.size && tx_head_slot[id] >= 0,
		       "tx: used id %u was not in flight", id))
		return true;
	s = tx_head_slot[id];
	tx_head_slot[id] = -1;
	tx_slot_busy[s] = false;
	/* 2.7.8.2: len is what the device wrote, and it writes nothing here */
	kit_check(len == 0, "tx: used len %u for a device-readable chain",
		  len);
	tx_done++;
	return true;
}

static bool tx_send(uint32_t idx)
{
	struct vio_buf bufs[3];
	unsigned int s, n, flen;
	uint8_t *p;
	int head;

	for (s = 0; s < TX_SLOTS && tx_slot_busy[s]; s++)
		;
	if (s == TX_SLOTS || txq.nr_free < 3)
		return false;
	p = tx_slot[s];
	memset(p, 0, hdr_len);		/* flags 0, GSO_NONE, num_buffers 0 */
	flen = build_frame(p + hdr_len, idx);
	switch (idx % 3) {
	case 0:
		bufs[0] = (struct vio_buf){ (uintptr_t)p, hdr_len + flen, false };
		n = 1;
		break;
	case 1:
		bufs[0] = (struct vio_buf){ (uintptr_t)p, hdr_len, false };
		bufs[1] = (struct vio_buf){ (uintptr_t)p + hdr_len, flen, false };
		n = 2;
		break;
	default:
		bufs[0] = (struct vio_buf){ (uintptr_t)p, 5, false };
		bufs[1] = (struct vio_buf){ (uintptr_t)p + 5, hdr_len - 5 + 20,
					    false };
		bufs[2] = (struct vio_buf){ (uintptr_t)p + hdr_len + 20,
					    flen - 20, false };
		n = 3;
		break;
	}
	head = vio_add(&txq, bufs, n, use_indirect && (idx & 1));
	if (!kit_check(head >= 0, "tx: vio_add failed for frame %u", idx))
		return false;
	tx_head_slot[head] = s;
	tx_slot_busy[s] = true;
	if (vio_kick(&txq))
		tx_kicks++;
	tx_sent++;
	return true;
}

static bool used_pending(struct vio_queue *q)
{
	return *(volatile uint16_t *)&q->used->idx != q->last_used;
}

/*
 * Waits up to 100 ms for the vector, then takes it: the ISR read first
 * (it lowers a level INTx line; virtio-mmio wants it acknowledged), then
 * the EOI. A used ring that moved with no interrupt is a failure, once;
 * polling goes on so the run still ends.
 */
static void irq_wait(void)
{
	uint32_t isr;

	if (!vio_irq_wait(IRQ_VECTOR, 100000)) {
		if (!irq_missed && (used_pending(&rxq) || used_pending(&txq))) {
			kit_fail("used ring advanced (rx %u/%u, tx %u/%u) without an interrupt",
				 *(volatile uint16_t *)&rxq.used->idx,
				 rxq.last_used,
				 *(volatile uint16_t *)&txq.used->idx,
				 txq.last_used);
			irq_missed = true;
		}
		return;
	}
	if (transport != VIO_PCI) {
		isr = vio_isr(&dev);
		vio_isr_ack(&dev, isr);
	}
	vio_irq_accept();
	irqs++;
	kit_check(!vio_irq_pending(IRQ_CONFIG_VECTOR),
		  "a configuration change interrupt");
}

/* Polls both queues until done() or timeout_us; false on timeout. */
static bool run_until(bool (*done)(void), uint64_t timeout_us, bool send)
{
	uint64_t start = kit_now_us();
	unsigned int spins = 0;

	while (!done()) {
		bool any = false;

		while (tx_poll())
			any = true;
		while (rx_poll())
			any = true;
		if (send && tx_sent < tx_want && tx_send(tx_sent))
			any = true;
		if (any)
			continue;
		if (use_irq && !irq_missed) {
			if (kit_now_us() - start > timeout_us)
				return false;
			irq_wait();
			continue;
		}
		if (++spins % 64)
			continue;
		if (kit_now_us() - start > timeout_us)
			return false;
		cpu_relax();
	}
	return true;
}

static bool tx_all_done(void)
{
	return tx_done == tx_want;
}

static bool all_done(void)
{
	return tx_done == tx_want && rx_got == rx_expect;
}

static bool never(void)
{
	return false;
}

static void *alloc_or_fail(size_t n)
{
	void *p = kit_zalloc(n);

	if (!p) {
		kit_fail("out of heap (%lu bytes)", (unsigned long)n);
		kit_finish();
	}
	return p;
}

static void post_all_rx(void)
{
	unsigned int i;

	for (i = 0; i < rxbufs; i++)
		rx_post(i);
	rx_kick();
}

/* Waits for this phase's frames both ways; false if they did not come. */
static bool phase(uint64_t wait_us)
{
	if (run_until(all_done, wait_us, true))
		return true;
	kit_check(tx_done == tx_want,
		  "tx: %u of %u frames sent, %u completed in %llu ms",
		  tx_sent, tx_want, tx_done, (unsigned long long)wait_us / 1000);
	kit_check(rx_got == rx_expect,
		  "rx: %u of %u frames received in %llu ms", rx_got, rx_expect,
		  (unsigned long long)wait_us / 1000);
	return false;
}

/*
 * A device reset in the middle of a run: the rings are dropped and set up
 * anew (4.x: after a reset the device must not use the old ones), then
 * the same traffic again. The frames lkvm may still hold from before are
 * none: the host injects the second batch only once TX resumes.
 */
static bool reset_and_again(uint64_t wait_us)
{
	unsigned int i, n = rx_want;

	kit_check(vio_reset(&dev), "reset did not complete");
	vio_queue_free(&rxq);
	vio_queue_free(&txq);
	for (i = 0; i < TX_SLOTS; i++)
		tx_slot_busy[i] = false;
	if (!setup())
		return false;
	tx_want *= 2;
	rx_want *= 2;
	for (i = n; i < rx_want; i++)
		rx_expect += frame_fits(i);
	kit_printf("reset: set up again, %u more frames each way\n", n);
	if (!early)
		post_all_rx();
	return phase(wait_us);
}

static void bad_tx(const char *what)
{
	uint32_t size = !strcmp(what, "tx_short") ? 6 :
			!strcmp(what, "tx_hdr_only") ? hdr_len : 72000;
	uint8_t *p = kit_zalloc(size);
	struct vio_buf b[3];
	unsigned int n = 1, s;
	uint32_t id, len;
	enum vio_wait w;
	int head;

	if (strcmp(what, "tx_short") && strcmp(what, "tx_hdr_only") &&
	    strcmp(what, "tx_huge")) {
		kit_fail("bad=%s: not tx_short, tx_hdr_only or tx_huge", what);
		return;
	}
	if (!kit_check(p, "out of heap"))
		return;
	b[0] = (struct vio_buf){ (uintptr_t)p, size, false };
	if (size == 72000) {
		for (s = 0; s < 3; s++)
			b[s] = (struct vio_buf){ (uintptr_t)p + 24000 * s, 24000,
						 false };
		n = 3;
	}
	head = vio_add(&txq, b, n, false);
	if (!kit_check(head >= 0, "bad %s: vio_add", what))
		return;
	vio_notify(&txq);
	w = vio_wait_used(&txq, 500000, true, &id, &len);
	if (w == VIO_WAIT_NEEDS_RESET) {
		kit_printf("bad %s: NEEDS_RESET\n", what);
		return;
	}
	if (!kit_check(w == VIO_WAIT_USED,
		       "bad %s: neither completed nor NEEDS_RESET in 500 ms",
		       what))
		return;
	kit_check(id == (uint32_t)head && len == 0,
		  "bad %s: used id %u len %u (head %d)", what, id, len, head);
	/* the queue still works: one more good frame */
	tx_want++;
	if (kit_check(run_until(tx_all_done, 1000000, true),
		      "bad %s: the good frame after it did not complete", what))
		kit_printf("bad %s: completed, traffic goes on\n", what);
	kit_free(p);
}

KIT_TEST(net)
{
	char buf[32];
	uint64_t wait_us;
	unsigned int i, before;

	transport = vio_cmdline_transport(VIO_MMIO);
	if (kit_cmdline_get("dst", buf, sizeof(buf)) &&
	    !kit_check(kit_parse_mac(buf, dst), "dst=%s: not a MAC", buf))
		kit_finish();
	seed = kit_cmdline_u64("seed", 1);
	tx_want = kit_cmdline_u64("tx", 8);
	rx_want = kit_cmdline_u64("rx", 8);
	rxbufs = kit_cmdline_u64("rxbufs", 16);
	rxsize = kit_cmdline_u64("rxsize", 2048);
	rxchain = kit_cmdline_u64("rxchain", 0);
	use_indirect = kit_cmdline_u64("indirect", 0);
	hold = kit_cmdline_u64("hold", 0);
	use_irq = kit_cmdline_u64("irq", 0);
	wait_us = kit_cmdline_u64("wait", 5000) * 1000;

	early = kit_cmdline_u64("early", 0);
	if (!kit_check(rxbufs >= 1 && rxbufs <= MAX_QSIZE && rxsize >= 16 &&
		       rxsize <= 65536, "rxbufs=%u rxsize=%u", rxbufs, rxsize))
		kit_finish();
	rx_buf = alloc_or_fail(sizeof(*rx_buf) * rxbufs);
	for (i = 0; i < rxbufs; i++)
		rx_buf[i] = alloc_or_fail(rxsize);
	rx_head_buf = alloc_or_fail(sizeof(int) * MAX_QSIZE);
	tx_head_slot = alloc_or_fail(sizeof(int) * MAX_QSIZE);
	for (i = 0; i < TX_SLOTS; i++)
		tx_slot[i] = alloc_or_fail(12 + FRAME_MAX);
	frame = alloc_or_fail(FRAME_MAX + 16);

	if (!find_device() || !setup())
		kit_finish();

	for (i = 0; i < rx_want; i++)
		rx_expect += frame_fits(i);
	if (rx_expect < rx_want)
		kit_printf("rx: %u of the %u frames do not fit a %u-byte buffer: they must be dropped\n",
			   rx_want - rx_expect, rx_want, rxsize);
	if (!hold && !early)
		post_all_rx();
	if (kit_cmdline_has("delay"))
		kit_udelay(kit_cmdline_u64("delay", 0) * 1000);

	if (hold) {
		if (!kit_check(run_until(tx_all_done, wait_us, true),
			       "tx: %u of %u frames sent, %u completed in %llu ms",
			       tx_sent, tx_want, tx_done,
			       (unsigned long long)wait_us / 1000))
			goto out;
		/* the host answers our first frame: let its frames wait */
		run_until(never, hold * 1000, false);
		kit_check(!rx_used, "rx: %u buffers used before any was posted",
			  rx_used);
		kit_printf("hold: %u ms without receive buffers, posting %u\n",
			   (unsigned int)hold, rxbufs);
		post_all_rx();
	}
	if (phase(wait_us) && kit_cmdline_u64("reset", 0))
		reset_and_again(wait_us);
	if (kit_cmdline_get("bad", buf, sizeof(buf)))
		bad_tx(buf);
	/* nothing more of ours may come: no duplicates */
	before = rx_got + rx_bad;
	run_until(never, 100000, false);
	kit_check(rx_got + rx_bad == before, "rx: %u more frames after the last",
		  rx_got + rx_bad - before);
out:
	kit_printf("rx: %u frames, %u buffers used, %u merged (at most %u buffers), %u underfilled, %u other frames\n",
		   rx_got, rx_used, rx_multi, max_num_buffers, rx_underfilled,
		   rx_other);
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "NEEDS_RESET set");
	if (use_irq)
		kit_printf("interrupts: %u taken\n", irqs);
	kit_printf("net: tx=%u tx_done=%u rx=%u rx_used=%u tx_kicks=%u rx_kicks=%u\n",
		   tx_sent, tx_done, rx_got, rx_used, tx_kicks, rx_kicks);
	kit_finish();
}
