// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of virtio-net's control queue and receive filter
 * (virtio/net_ctrl.c): commands go through a real split ring in a fake
 * guest memory to net_ctrl_kick(), and their effect is read back through
 * net_filter_accepts() and a fake backend. The guest-kit side of the same
 * is guest/kit/netctrl.c.
 */
#include <endian.h>
#include <linux/if_tun.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/guest_mem.h"
#include "lkvm/util.h"
#include "../../virtio/net_internal.h"

#define RAM_GPA		0x100000ULL
#define RAM_SIZE	(1 * MiB)
#define QSIZE		16
#define DESC_GPA	RAM_GPA
#define AVAIL_GPA	(RAM_GPA + 0x1000)
#define USED_GPA	(RAM_GPA + 0x2000)
#define DATA_GPA	(RAM_GPA + 0x10000)
#define ACK_GPA		(RAM_GPA + 0xf0000)

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t new_mac[6] = { 0x52, 0x54, 0x00, 0x65, 0x43, 0x21 };
static const uint8_t uc_tab[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x07 };
static const uint8_t uc_other[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t mc_in[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
static const uint8_t mc_out[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfc };

static struct {
	struct guest_mem mem;
	uint8_t *ram;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx, used_seen;
	struct virtio_net *net;
	struct net_queue_pair pairs[3];
	/* what the fake transport and backend saw */
	unsigned int config_signals;
	int enabled[NET_MAX_QUEUE_PAIRS];
	int refuse;			/* enable_queue fails for this pair */
	int offloads;
	unsigned int ctrl;		/* the control queue's index */
} t;

static void *gpa(uint64_t a)
{
	return guest_mem_ptr(&t.mem, a, 1);
}

/* ---- fakes ---- */

static void fake_signal_queue(struct virtio_transport *tr,
			      struct virtio_queue *q)
{
}

static void fake_signal_config(struct virtio_transport *tr)
{
	t.config_signals++;
}

static const struct virtio_transport_ops fake_transport_ops = {
	.signal_queue = fake_signal_queue,
	.signal_config = fake_signal_config,
};
static struct virtio_transport fake_transport = { .ops = &fake_transport_ops };

static const struct virtio_device_ops fake_ops = { .name = "net" };

static int fake_enable_queue(struct net_backend *be, unsigned int idx,
			     bool enable)
{
	if ((int)idx == t.refuse)
		return -1;
	t.enabled[idx] = enable;
	return 0;
}

static int fake_set_offloads(struct net_backend *be, unsigned int flags)
{
	t.offloads = flags;
	return 0;
}

static const struct net_backend_ops fake_backend = {
	.enable_queue = fake_enable_queue,
	.set_offloads = fake_set_offloads,
};

/* ---- set-up: a device with `pairs` pairs and these features ---- */

static void device(uint64_t features, unsigned int pairs)
{
	struct virtio_net *net = t.net;
	struct virtio_queue *q;
	unsigned int i;

	q = &net->vdev.queues[t.ctrl];
	if (q->ring.bufs)
		virtq_exit(&q->ring);
	/* 5.1.2: after the pairs with MQ, else at 2 */
	t.ctrl = features & (1ULL << VIRTIO_NET_F_MQ) ? 2 * pairs : 2;
	q = &net->vdev.queues[t.ctrl];
	memset(net, 0, sizeof(*net));
	memset(t.ram, 0, 0x3000);
	memset(t.enabled, 0xff, sizeof(t.enabled));
	t.refuse = -1;
	t.offloads = -1;
	t.config_signals = 0;
	t.avail_idx = t.used_seen = 0;
	net->vdev.ops = &fake_ops;
	virtio_device_attach(&net->vdev, &fake_transport);
	net->vdev.guest_features = features | (1ULL << VIRTIO_F_VERSION_1);
	net->vdev.status = VIRTIO_CONFIG_S_DRIVER_OK;
	net->nr_pairs = pairs;
	pthread_mutex_init(&net->vdev.config_lock, NULL);
	memcpy(net->perm_mac, our_mac, 6);
	memcpy(net->config.mac, our_mac, 6);
	net->vdev.config = (uint8_t *)&net->config;
	net->vdev.config_size = offsetof(struct virtio_net_config, mtu);
	net->backend.ops = &fake_backend;
	net->backend.nr_queues = pairs;
	net->backend.offloads = true;
	for (i = 0; i < pairs; i++) {
		memset(&t.pairs[i], 0, sizeof(t.pairs[i]));
		t.pairs[i].net = net;
		t.pairs[i].index = i;
		net->pairs[i] = &t.pairs[i];
	}
	for (i = 0; i < VIRTIO_MAX_QUEUES; i++) {
		pthread_mutex_init(&net->vdev.queues[i].lock, NULL);
		net->vdev.queues[i].index = i;
		net->vdev.queues[i].vdev = &net->vdev;
	}
	net_filter_init(&net->filter);
	net_filter_reset(&net->filter, our_mac);
	assert_int_equal(virtq_init(&q->ring, &t.mem, QSIZE, DESC_GPA,
				    AVAIL_GPA, USED_GPA, false, true), 0);
	q->live = true;
}

static const uint64_t all_ctrl =
	(1ULL << VIRTIO_NET_F_MAC) |
	(1ULL << VIRTIO_NET_F_CTRL_VQ) | (1ULL << VIRTIO_NET_F_CTRL_RX) |
	(1ULL << VIRTIO_NET_F_CTRL_RX_EXTRA) |
	(1ULL << VIRTIO_NET_F_CTRL_MAC_ADDR);

static int group_setup(void **state)
{
	log_threshold = LOG_SILENT;
	t.ram = aligned_alloc(4096, RAM_SIZE);
	t.net = calloc(1, sizeof(*t.net));
	if (!t.ram || !t.net || guest_mem_add(&t.mem, RAM_GPA, RAM_SIZE, t.ram))
		return -1;
	t.desc = gpa(DESC_GPA);
	t.avail = gpa(AVAIL_GPA);
	t.used = gpa(USED_GPA);
	return 0;
}

static int group_teardown(void **state)
{
	if (t.net->vdev.queues[t.ctrl].ring.bufs)
		virtq_exit(&t.net->vdev.queues[t.ctrl].ring);
	free(t.net);
	free(t.ram);
	return 0;
}

static int setup(void **state)
{
	device(all_ctrl, 1);
	return 0;
}

/* ---- the driver side ---- */

struct seg {
	uint32_t len;
	bool write;
};

/*
 * One command: `data` (class, command, data) spread over the readable
 * segments of `segs` in order, then the writable ones (the ack goes in
 * the first byte of the first non-empty one). Each command completes
 * before the next, so its chain always starts at descriptor 0. Returns
 * the ack, -1 when the device used the chain without writing, -2 when it
 * did not use it.
 */
static int submit(const void *data, size_t len, const struct seg *segs,
		  unsigned int n, uint32_t *used_len)
{
	uint64_t at = DATA_GPA;
	size_t off = 0;
	unsigned int i;
	struct vring_used_elem *e;

	assert_true(n <= QSIZE);
	for (i = 0; i < n; i++) {
		uint64_t a = segs[i].write ? ACK_GPA + 16 * i : at;

		if (segs[i].write) {
			memset(gpa(a), 0xee, 16);
		} else {
			memcpy(gpa(a), (const uint8_t *)data + off, segs[i].len);
			off += segs[i].len;
			at += ALIGN_UP(segs[i].len, 64) + 64;
		}
		t.desc[i].addr = htole64(a);
		t.desc[i].len = htole32(segs[i].len);
		t.desc[i].flags = htole16((segs[i].write ? VRING_DESC_F_WRITE : 0) |
					  (i + 1 < n ? VRING_DESC_F_NEXT : 0));
		t.desc[i].next = htole16(i + 1);
	}
	assert_int_equal(off, len);
	t.avail->ring[t.avail_idx % QSIZE] = 0;
	t.avail_idx++;
	__atomic_store_n(&t.avail->idx, htole16(t.avail_idx), __ATOMIC_RELEASE);
	pthread_mutex_lock(&t.net->vdev.queues[t.ctrl].lock);
	net_ctrl_kick(t.net, &t.net->vdev.queues[t.ctrl]);
	pthread_mutex_unlock(&t.net->vdev.queues[t.ctrl].lock);
	if (le16toh(t.used->idx) == t.used_seen)
		return -2;
	e = &t.used->ring[t.used_seen % QSIZE];
	t.used_seen++;
	assert_int_equal(le32toh(e->id), 0);
	if (used_len)
		*used_len = le32toh(e->len);
	if (!le32toh(e->len))
		return -1;
	for (i = 0; i < n; i++)
		if (segs[i].write && segs[i].len)
			return *(uint8_t *)gpa(ACK_GPA + 16 * i);
	fail_msg("used len %u without a writable byte", le32toh(e->len));
	return -3;
}

/* The usual layout: [class, command, data][ack]. */
static int cmd(uint8_t class, uint8_t command, const void *data, size_t len)
{
	static uint8_t buf[4096 + 2];
	struct seg segs[2] = { { 2 + len, false }, { 1, true } };
	uint32_t used_len = 0;
	int ack;

	assert_true(len + 2 <= sizeof(buf));
	buf[0] = class;
	buf[1] = command;
	memcpy(buf + 2, data, len);
	ack = submit(buf, 2 + len, segs, 2, &used_len);
	if (ack >= 0)
		assert_int_equal(used_len, 1);
	return ack;
}

static int rx_mode(uint8_t command, uint8_t on)
{
	return cmd(VIRTIO_NET_CTRL_RX, command, &on, 1);
}

/* MAC_TABLE_SET with the given tables, or made-up entries where NULL. */
static int mac_table(unsigned int nu, const uint8_t (*uni)[6], unsigned int nm,
		     const uint8_t (*multi)[6])
{
	uint8_t buf[4 + 6 * 150 + 4 + 6 * 150];
	size_t off = 0;
	uint32_t n;
	unsigned int i;

	assert_true(nu <= 150 && nm <= 150);
	n = htole32(nu);
	memcpy(buf, &n, 4);
	off = 4;
	for (i = 0; i < nu; i++, off += 6) {
		const uint8_t made[6] = { 0x52, 0x54, 0, 0xfe, 0, i };

		memcpy(buf + off, uni ? uni[i] : made, 6);
	}
	n = htole32(nm);
	memcpy(buf + off, &n, 4);
	off += 4;
	for (i = 0; i < nm; i++, off += 6) {
		const uint8_t made[6] = { 0x01, 0x00, 0x5e, 0x7e, 0, i };

		memcpy(buf + off, multi ? multi[i] : made, 6);
	}
	return cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, off);
}

/* Does the filter take a frame to dst? */
static bool takes(const uint8_t *dst)
{
	uint8_t frame[60] = { 0 };

	memcpy(frame, dst, 6);
	memcpy(frame + 6, uc_other, 6);
	return net_filter_accepts(&t.net->filter, frame, sizeof(frame));
}

/* The filter's answers for our_mac, new_mac, uc_tab, uc_other, bcast, mc_in, mc_out. */
static void expect_filter(const char *want)
{
	const uint8_t *dsts[] = { our_mac, new_mac, uc_tab, uc_other, bcast,
				  mc_in, mc_out };
	char got[8];
	unsigned int i;

	for (i = 0; i < 7; i++)
		got[i] = takes(dsts[i]) ? '1' : '0';
	got[7] = 0;
	assert_string_equal(got, want);
}

static void expect_ok_unbroken(void)
{
	assert_false(t.net->vdev.status & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(t.net->vdev.times_broken, 0);
}

/* ---- tests ---- */

static void test_promiscuous_at_first(void **state)
{
	expect_filter("1111111");
	/* a runt has no destination to judge */
	assert_false(net_filter_accepts(&t.net->filter, bcast, 5));
}

static void test_rx_modes(void **state)
{
	const uint8_t uni[1][6] = { { 0x52, 0x54, 0x00, 0x00, 0x00, 0x07 } };
	const uint8_t multi[1][6] = { { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb } };

	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	/*              mac new tab oth bc in out */
	expect_filter("1000100");
	assert_int_equal(mac_table(1, uni, 1, multi), VIRTIO_NET_OK);
	expect_filter("1010110");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLMULTI, 1), VIRTIO_NET_OK);
	expect_filter("1010111");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOBCAST, 1), VIRTIO_NET_OK);
	expect_filter("1010011");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLMULTI, 0), VIRTIO_NET_OK);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOBCAST, 0), VIRTIO_NET_OK);
	/* NOMULTI wins over the table; broadcast is not multicast here */
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOMULTI, 1), VIRTIO_NET_OK);
	expect_filter("1010100");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOMULTI, 0), VIRTIO_NET_OK);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLUNI, 1), VIRTIO_NET_OK);
	expect_filter("1111110");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLUNI, 0), VIRTIO_NET_OK);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOUNI, 1), VIRTIO_NET_OK);
	expect_filter("0000110");
	/* PROMISC over everything; any non-zero byte is "on" */
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0x80), VIRTIO_NET_OK);
	expect_filter("1111111");
	expect_ok_unbroken();
}

static void test_mac_addr_set(void **state)
{
	struct virtio_device *vdev = &t.net->vdev;
	uint32_t gen = virtio_config_generation(vdev);

	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			     new_mac, 6), VIRTIO_NET_OK);
	expect_filter("0100100");
	assert_memory_equal(t.net->filter.mac, new_mac, 6);
	/* the config space says so too, in a new generation */
	assert_memory_equal(t.net->config.mac, new_mac, 6);
	assert_int_equal(virtio_config_generation(vdev), gen + 1);
	/* the same address again: nothing for a driver to read again */
	assert_int_equal(cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			     new_mac, 6), VIRTIO_NET_OK);
	assert_int_equal(virtio_config_generation(vdev), gen + 1);
	/* without VIRTIO_NET_F_MAC the config space has no MAC to change */
	device(all_ctrl & ~(1ULL << VIRTIO_NET_F_MAC), 1);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			     new_mac, 6), VIRTIO_NET_OK);
	assert_memory_equal(t.net->filter.mac, new_mac, 6);
	assert_memory_equal(t.net->config.mac, our_mac, 6);
	/* the filter's reset (net_reset's part; kit: netctrl.elf) */
	net_filter_reset(&t.net->filter, our_mac);
	expect_filter("1111111");
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	expect_filter("1000100");
}

static void test_mac_table_limits(void **state)
{
	uint8_t uni[64][6], multi[64][6];
	unsigned int i;

	for (i = 0; i < 64; i++) {
		memcpy(uni[i], uc_other, 6);
		uni[i][3] = i;		/* uc_other itself is not among them */
		memcpy(multi[i], mc_out, 6);
		multi[i][4] = i + 1;
	}
	memcpy(uni[63], uc_tab, 6);
	memcpy(multi[63], mc_in, 6);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	/* 64 of each: the tables themselves, the last entry included */
	assert_int_equal(mac_table(64, uni, 64, multi), VIRTIO_NET_OK);
	expect_filter("1010110");
	assert_int_equal(t.net->filter.nr_uni, 64);
	/* 65: every address of that class */
	assert_int_equal(mac_table(65, NULL, 1, multi + 63), VIRTIO_NET_OK);
	expect_filter("1111110");
	assert_int_equal(mac_table(0, NULL, 65, NULL), VIRTIO_NET_OK);
	expect_filter("1000111");
	/* and back to small tables: overflow is not sticky */
	assert_int_equal(mac_table(1, uni + 63, 1, multi + 63), VIRTIO_NET_OK);
	expect_filter("1010110");
}

/* Each bad command: ERR, nothing changed, the device not broken. */
static void test_malformed(void **state)
{
	static const struct {
		uint8_t class, command;
		unsigned int len;
		uint8_t data[16];
	} bad[] = {
		{ 99, 0, 1, { 0 } },
		{ VIRTIO_NET_CTRL_VLAN, VIRTIO_NET_CTRL_VLAN_ADD, 2, { 1 } },
		{ VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 0, { 0 } },
		{ VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 2, { 1, 1 } },
		{ VIRTIO_NET_CTRL_RX, 6, 1, { 1 } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 2, { 0 } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 8,
		  { 0xff, 0xff, 0xff, 0xff } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 8,
		  { 0xab, 0xaa, 0xaa, 0x2a } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 14,
		  { 3, 0, 0, 0, 0x52, 0x54, 0, 1, 2, 3 } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 10,
		  { 1, 0, 0, 0, 0x52, 0x54, 0, 1, 2, 3 } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, 11,
		  { 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3 } },
		{ VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, 5,
		  { 0x52, 0x54, 0, 1, 2 } },
		{ VIRTIO_NET_CTRL_MAC, 7, 6, { 0x52, 0x54, 0, 1, 2, 3 } },
		{ VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, { 1 } },
		{ VIRTIO_NET_CTRL_GUEST_OFFLOADS,
		  VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, 8, { 0 } },
	};
	const uint8_t uni[1][6] = { { 0x52, 0x54, 0x00, 0x00, 0x00, 0x07 } };
	const uint8_t multi[1][6] = { { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb } };
	static uint8_t big[4096];
	unsigned int i;

	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	assert_int_equal(mac_table(1, uni, 1, multi), VIRTIO_NET_OK);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		int ack = cmd(bad[i].class, bad[i].command, bad[i].data,
			      bad[i].len);

		if (ack != VIRTIO_NET_ERR)
			fail_msg("bad command %u (class %u command %u): ack %d",
				 i, bad[i].class, bad[i].command, ack);
		expect_filter("1010110");
	}
	assert_int_equal(cmd(VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC,
			     big, sizeof(big) - 2), VIRTIO_NET_ERR);
	expect_filter("1010110");
	expect_ok_unbroken();
}

static void test_odd_chains(void **state)
{
	const uint8_t promisc_on[3] = { VIRTIO_NET_CTRL_RX,
					VIRTIO_NET_CTRL_RX_PROMISC, 1 };
	const uint8_t promisc_off[3] = { VIRTIO_NET_CTRL_RX,
					 VIRTIO_NET_CTRL_RX_PROMISC, 0 };
	uint32_t used_len = 99;

	/* split one byte at a time, the ack after an empty writable buffer */
	{
		struct seg s[5] = { { 1, false }, { 1, false }, { 1, false },
				    { 0, true }, { 1, true } };

		assert_int_equal(submit(promisc_off, 3, s, 5, &used_len),
				 VIRTIO_NET_OK);
		assert_int_equal(used_len, 1);
		expect_filter("1000100");
	}
	/* no writable byte: used, nothing written, not applied */
	{
		struct seg s[1] = { { 3, false } };

		assert_int_equal(submit(promisc_on, 3, s, 1, &used_len), -1);
		assert_int_equal(used_len, 0);
		expect_filter("1000100");
	}
	/* only the class byte */
	{
		struct seg s[2] = { { 1, false }, { 1, true } };

		assert_int_equal(submit(promisc_on, 1, s, 2, NULL),
				 VIRTIO_NET_ERR);
	}
	/* nothing readable */
	{
		struct seg s[1] = { { 4, true } };

		assert_int_equal(submit(NULL, 0, s, 1, NULL), VIRTIO_NET_ERR);
	}
	expect_filter("1000100");
	expect_ok_unbroken();
}

static void test_feature_gates(void **state)
{
	device((1ULL << VIRTIO_NET_F_CTRL_VQ), 1);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_ERR);
	assert_int_equal(mac_table(0, NULL, 0, NULL), VIRTIO_NET_ERR);
	expect_filter("1111111");

	device((1ULL << VIRTIO_NET_F_CTRL_VQ) | (1ULL << VIRTIO_NET_F_CTRL_RX), 1);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_PROMISC, 0), VIRTIO_NET_OK);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLMULTI, 1), VIRTIO_NET_OK);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_ALLUNI, 1), VIRTIO_NET_ERR);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOMULTI, 1), VIRTIO_NET_ERR);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOUNI, 1), VIRTIO_NET_ERR);
	assert_int_equal(rx_mode(VIRTIO_NET_CTRL_RX_NOBCAST, 1), VIRTIO_NET_ERR);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			     new_mac, 6), VIRTIO_NET_ERR);
	expect_filter("1000111");
	expect_ok_unbroken();
}

static int pairs_set(uint16_t n)
{
	uint16_t le = htole16(n);

	return cmd(VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &le, 2);
}

static void test_mq(void **state)
{
	device(all_ctrl | (1ULL << VIRTIO_NET_F_MQ), 2);
	assert_int_equal(pairs_set(0), VIRTIO_NET_ERR);
	assert_int_equal(pairs_set(3), VIRTIO_NET_ERR);
	assert_int_equal(pairs_set(0x8000), VIRTIO_NET_ERR);
	assert_int_equal(t.enabled[1], -1);		/* untouched */
	assert_int_equal(pairs_set(2), VIRTIO_NET_OK);
	assert_int_equal(t.enabled[1], 1);
	assert_int_equal(t.net->active_pairs, 2);
	assert_int_equal(pairs_set(1), VIRTIO_NET_OK);
	assert_int_equal(t.enabled[1], 0);
	assert_int_equal(t.net->active_pairs, 1);
	expect_ok_unbroken();

	/* MQ offered but not taken */
	device(all_ctrl, 2);
	assert_int_equal(pairs_set(1), VIRTIO_NET_ERR);
	assert_int_equal(t.enabled[1], -1);
}

/* A backend that cannot switch a queue: the command fails, nothing moved. */
static void test_mq_backend_refuses(void **state)
{
	device(all_ctrl | (1ULL << VIRTIO_NET_F_MQ), 3);
	assert_int_equal(pairs_set(1), VIRTIO_NET_OK);
	t.refuse = 2;
	assert_int_equal(pairs_set(3), VIRTIO_NET_ERR);
	assert_int_equal(t.net->active_pairs, 1);
	assert_int_equal(t.enabled[1], 0);		/* put back */
	t.refuse = -1;
	assert_int_equal(pairs_set(3), VIRTIO_NET_OK);
	assert_int_equal(t.net->active_pairs, 3);
	assert_int_equal(t.enabled[1], 1);
	assert_int_equal(t.enabled[2], 1);
}

static void test_guest_offloads(void **state)
{
	uint64_t csum = htole64(1ULL << VIRTIO_NET_F_GUEST_CSUM);
	uint64_t tso4 = htole64((1ULL << VIRTIO_NET_F_GUEST_CSUM) |
				(1ULL << VIRTIO_NET_F_GUEST_TSO4));
	uint64_t none = 0;

	device(all_ctrl | (1ULL << VIRTIO_NET_F_CTRL_GUEST_OFFLOADS) |
	       (1ULL << VIRTIO_NET_F_GUEST_CSUM), 1);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_GUEST_OFFLOADS,
			     VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, &csum, 8),
			 VIRTIO_NET_OK);
	assert_int_equal(t.offloads, TUN_F_CSUM);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_GUEST_OFFLOADS,
			     VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, &none, 8),
			 VIRTIO_NET_OK);
	assert_int_equal(t.offloads, 0);
	/* TSO4 was not negotiated: it cannot be switched on */
	t.offloads = -1;
	assert_int_equal(cmd(VIRTIO_NET_CTRL_GUEST_OFFLOADS,
			     VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, &tso4, 8),
			 VIRTIO_NET_ERR);
	assert_int_equal(t.offloads, -1);
	assert_int_equal(cmd(VIRTIO_NET_CTRL_GUEST_OFFLOADS,
			     VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, &csum, 4),
			 VIRTIO_NET_ERR);
}

/* A broken ring is NEEDS_RESET, said to the driver, counted once. */
static void test_broken_ring(void **state)
{
	t.avail->ring[0] = htole16(QSIZE + 3);
	t.avail_idx++;
	__atomic_store_n(&t.avail->idx, htole16(t.avail_idx), __ATOMIC_RELEASE);
	net_ctrl_kick(t.net, &t.net->vdev.queues[t.ctrl]);
	assert_true(t.net->vdev.status & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(t.net->vdev.times_broken, 1);
	assert_int_equal(t.config_signals, 1);
	assert_int_equal(le16toh(t.used->idx), 0);
	/* more kicks: still broken, said once */
	net_ctrl_kick(t.net, &t.net->vdev.queues[t.ctrl]);
	assert_int_equal(t.net->vdev.times_broken, 1);
	assert_int_equal(t.config_signals, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_promiscuous_at_first, setup),
		cmocka_unit_test_setup(test_rx_modes, setup),
		cmocka_unit_test_setup(test_mac_addr_set, setup),
		cmocka_unit_test_setup(test_mac_table_limits, setup),
		cmocka_unit_test_setup(test_malformed, setup),
		cmocka_unit_test_setup(test_odd_chains, setup),
		cmocka_unit_test_setup(test_feature_gates, setup),
		cmocka_unit_test_setup(test_mq, setup),
		cmocka_unit_test_setup(test_mq_backend_refuses, setup),
		cmocka_unit_test_setup(test_guest_offloads, setup),
		cmocka_unit_test_setup(test_broken_ring, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
