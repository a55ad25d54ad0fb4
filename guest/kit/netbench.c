// SPDX-License-Identifier: GPL-2.0
/*
 * netbench.elf: what moving one frame through lkvm's virtio-net costs, seen
 * from a guest. A minimal polling driver sends `frames` identical frames
 * (TX), or takes `frames` frames the host injects into the tap (RX), as
 * fast as it can: every ring slot stays in use, each completion is
 * re-posted at once, interrupts are suppressed and kicks go out only when
 * the device asks for them. On a software KVM every guest instruction
 * costs about a microsecond, so the loop does nothing else.
 *
 *   transport=mmio|pci|legacy  (default pci)
 *   mode=tx64|tx64k|rx64|rx64k (default tx64)
 *   frames=N                   (default 20000)
 *   dst=MAC                    TX frames' destination (default broadcast)
 *
 * Frames, as tests/bench/net_ring_bench.c sends them: 64-byte UDP/IPv4, or
 * a 64 KiB TCP/IPv4 segment (45 x 1448 bytes) with a TSO header; CSUM,
 * HOST_TSO4, GUEST_CSUM and GUEST_TSO4 are negotiated in every mode. RX
 * buffers are one descriptor each (mergeable): 256 of 2 KiB for rx64, 128
 * of 4 KiB for rx64k (the heap is 1 MiB); a frame must arrive whole.
 *
 * Prints "netbench: N frames MODE in T us, K kicks, E errors" and exits
 * with the failure count; tests/bench/net_bench.py reads it.
 */
#include <linux/virtio_net.h>

#include "virtio_pci.h"

#define SMALL_FRAME	64
#define MSS		1448
#define BIG_FRAME	(14 + 20 + 20 + 45 * MSS)
#define HDR_LEN		12

static struct vio_dev dev;
static struct vio_queue rxq, txq;

static bool find(const char *t)
{
	struct vio_dev devs[VIO_MMIO_SLOTS];
	unsigned int n, i;

	if (!strcmp(t, "pci") || !strcmp(t, "legacy"))
		return vio_pci_find(&dev, !strcmp(t, "legacy"));
	if (strcmp(t, "mmio"))
		return false;
	n = vio_find(devs, ARRAY_SIZE(devs));
	for (i = 0; i < n; i++) {
		if (devs[i].device_id == VIRTIO_ID_NET) {
			dev = devs[i];
			return true;
		}
	}
	return false;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint16_t ip_csum(const uint8_t *p, unsigned int len)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* [header|frame]: the same bytes as net_ring_bench's TX frames. */
static unsigned int build_frame(uint8_t *out, bool big, const uint8_t *dst,
				const uint8_t *src)
{
	struct virtio_net_hdr *h = (void *)out;
	uint8_t *f = out + HDR_LEN, *ip = f + 14, *l4 = ip + 20;
	unsigned int len = big ? BIG_FRAME : SMALL_FRAME;
	static const uint8_t addrs[8] = { 10, 0, 0, 2, 10, 0, 0, 3 };

	memset(out, 0, HDR_LEN + len);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, len - 14);
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = big ? 6 : 17;
	memcpy(ip + 12, addrs, 8);
	put16(ip + 10, ~ip_csum(ip, 20));
	put16(l4, 40000);
	put16(l4 + 2, 5001);
	if (!big) {
		put16(l4 + 4, len - 34);
		return len;
	}
	l4[7] = 1;			/* seq 1 */
	l4[11] = 1;			/* ack 1 */
	l4[12] = 5 << 4;
	l4[13] = 0x18;
	put16(l4 + 14, 65535);
	/* partial checksum: the pseudo-header sum, as a TSO sender leaves it */
	{
		uint8_t ph[12] = { 10, 0, 0, 2, 10, 0, 0, 3, 0, 6 };

		put16(ph + 10, len - 34);
		put16(l4 + 16, ip_csum(ph, 12));
	}
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h->hdr_len = 54;
	h->gso_size = MSS;
	h->csum_start = 34;
	h->csum_offset = 16;
	return len;
}

static inline uint16_t used_idx(struct vio_queue *q)
{
	return *(volatile uint16_t *)&q->used->idx;
}

/*
 * The PM timer wraps every 4.7 s and kit_now_us() only sees wraps between
 * its calls: look at it now and then.
 */
static void keep_clock(uint32_t done)
{
	static uint32_t mark;

	if (done - mark >= 256) {
		kit_now_us();
		mark = done;
	}
}

/*
 * Every slot holds the same [header|frame], built before the clock starts
 * (filling 64 KiB takes the emulated guest a good fraction of a second).
 */
static bool tx_prepare(bool big, const uint8_t *dst, const uint8_t *mac)
{
	uint8_t *buf = kit_malloc(HDR_LEN + BIG_FRAME);
	uint32_t len;
	uint16_t k;

	if (!kit_check(buf != NULL, "heap"))
		return false;
	len = HDR_LEN + build_frame(buf, big, dst, mac);
	for (k = 0; k < txq.size; k++)
		vio_raw_desc(&txq, k, (uintptr_t)buf, len, 0, 0);
	return true;
}

/* Each completion goes straight back. */
static uint32_t run_tx(uint32_t total)
{
	uint32_t submitted = 0, done = 0;
	uint16_t mask = txq.size - 1, used, k;

	for (k = 0; k < txq.size && submitted < total; k++, submitted++)
		vio_raw_publish(&txq, k, 1);
	vio_kick(&txq);
	while (done < total) {
		used = used_idx(&txq);
		if (used == txq.last_used) {
			cpu_relax();
			continue;
		}
		barrier();
		do {
			uint32_t head = txq.used->ring[txq.last_used++ & mask].id;

			done++;
			if (submitted < total) {
				vio_raw_publish(&txq, head, 1);
				submitted++;
			}
		} while (txq.last_used != used);
		vio_kick(&txq);
		keep_clock(done);
	}
	return done;
}

/*
 * nbufs one-descriptor buffers of bufsize; a frame spans num_buffers of
 * them (its first header says how many) and must add up to want bytes.
 */
static uint32_t run_rx(uint32_t total, unsigned int nbufs,
		       unsigned int bufsize, uint32_t want, uint32_t *errors)
{
	uint8_t *bufs = kit_malloc((size_t)nbufs * bufsize);
	uint32_t done = 0, got = 0;
	uint16_t mask = rxq.size - 1, used, k, rest = 0;

	if (!kit_check(bufs != NULL && nbufs <= rxq.size, "heap or ring")) {
		(*errors)++;
		return 0;
	}
	for (k = 0; k < nbufs; k++) {
		vio_raw_desc(&rxq, k, (uintptr_t)bufs + (size_t)k * bufsize,
			     bufsize, VRING_DESC_F_WRITE, 0);
		vio_raw_publish(&rxq, k, 1);
	}
	vio_kick(&rxq);
	while (done < total) {
		used = used_idx(&rxq);
		if (used == rxq.last_used) {
			cpu_relax();
			continue;
		}
		barrier();
		do {
			struct vring_used_elem *e =
				&rxq.used->ring[rxq.last_used++ & mask];

			if (!rest) {
				struct virtio_net_hdr_mrg_rxbuf *h = (void *)
					(bufs + (size_t)e->id * bufsize);

				rest = h->num_buffers ? h->num_buffers : 1;
				*errors += !h->num_buffers;
				got = 0;
			}
			got += e->len;
			if (!--rest) {
				done++;
				*errors += got != want;
			}
			vio_raw_publish(&rxq, e->id, 1);
		} while (rxq.last_used != used);
		vio_kick(&rxq);
		keep_clock(done);
	}
	return done;
}

KIT_TEST(netbench)
{
	uint64_t want = 1ULL << VIRTIO_NET_F_MAC | 1ULL << VIRTIO_NET_F_STATUS |
			1ULL << VIRTIO_NET_F_MRG_RXBUF | 1ULL << VIRTIO_NET_F_CSUM |
			1ULL << VIRTIO_NET_F_GUEST_CSUM |
			1ULL << VIRTIO_NET_F_HOST_TSO4 |
			1ULL << VIRTIO_NET_F_GUEST_TSO4;
	uint32_t total = kit_cmdline_u64("frames", 20000), done, errors = 0;
	uint8_t dst[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, mac[6];
	char t[16] = "pci", mode[16] = "tx64", buf[32];
	bool rx, big;
	uint64_t t0, t1;
	unsigned int i;

	kit_cmdline_get("transport", t, sizeof(t));
	kit_cmdline_get("mode", mode, sizeof(mode));
	if (kit_cmdline_get("dst", buf, sizeof(buf)) &&
	    !kit_check(kit_parse_mac(buf, dst), "dst=%s: not a MAC", buf))
		kit_finish();
	rx = mode[0] == 'r';
	big = !strcmp(mode + 2, "64k");
	if (!kit_check(!strcmp(mode + 2, "64") || big, "mode=%s", mode) ||
	    !kit_check(find(t), "no virtio-net on transport %s", t) ||
	    !kit_check(dev.device_id == VIRTIO_ID_NET, "device %u is not net",
		       dev.device_id) ||
	    !kit_check(!vio_negotiate(&dev, want), "feature negotiation") ||
	    !kit_check((dev.features & want) == want, "offloads not offered") ||
	    !kit_check(!vio_queue_setup(&rxq, &dev, 0, 256), "rx queue setup") ||
	    !kit_check(!vio_queue_setup(&txq, &dev, 1, 256), "tx queue setup"))
		kit_finish();
	for (i = 0; i < 6; i++)
		mac[i] = vio_config_read8(&dev, i);
	/* a polling driver: no interrupts wanted */
	rxq.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	txq.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	vio_driver_ok(&dev);

	if (!rx && !tx_prepare(big, dst, mac))
		kit_finish();
	t0 = kit_now_us();
	if (rx)
		done = run_rx(total, big ? 128 : 256, big ? 4096 : 2048,
			      HDR_LEN + (big ? BIG_FRAME : SMALL_FRAME), &errors);
	else
		done = run_tx(total);
	t1 = kit_now_us();

	kit_check(!errors, "%u frames wrong", errors);
	kit_printf("netbench: %u frames %s in %lu us, %lu kicks, %u errors\n",
		   done, mode, t1 - t0, vio_kicks, errors);
	kit_finish();
}
