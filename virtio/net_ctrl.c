// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net's control queue and the receive filter it programs.
 *
 * Each chain is one command: a class/command header and its data, both
 * driver-written, then the one-byte ack the device writes. The data may
 * be split over descriptors in any way, so it is gathered first.
 *
 * The filter starts out promiscuous, as a device without CTRL_RX has to
 * be; Linux's driver turns that off (and sends its MAC tables) when the
 * interface comes up. A tap sees every frame the host bridges or routes
 * to it, so filtering matters once the tap is on a bridge.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/util.h"
#include "net_internal.h"

/*
 * A MAC table longer than NET_MAC_TABLE_SIZE means "all of that class",
 * but it still comes whole: Linux sends every address it has. 64 KiB is
 * some 10000 of them.
 */
#define NET_CTRL_MAX_DATA	(64 * 1024)

static const uint8_t broadcast[ETH_ADDR_LEN] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff
};

void net_filter_init(struct net_rx_filter *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->promisc = true;
}

void net_filter_reset(struct net_rx_filter *f, const uint8_t mac[ETH_ADDR_LEN])
{
	pthread_mutex_lock(&f->lock);
	f->promisc = true;
	f->allmulti = f->alluni = f->nomulti = f->nouni = f->nobcast = false;
	f->uni_overflow = f->multi_overflow = false;
	f->nr_uni = f->nr_multi = 0;
	memcpy(f->mac, mac, ETH_ADDR_LEN);
	pthread_mutex_unlock(&f->lock);
}

void net_filter_set_mac(struct net_rx_filter *f,
			const uint8_t mac[ETH_ADDR_LEN])
{
	pthread_mutex_lock(&f->lock);
	memcpy(f->mac, mac, ETH_ADDR_LEN);
	pthread_mutex_unlock(&f->lock);
}

static bool mac_in(const uint8_t (*table)[ETH_ADDR_LEN], unsigned int n,
		   const uint8_t *mac)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!memcmp(table[i], mac, ETH_ADDR_LEN))
			return true;
	return false;
}

/* Caller holds f->lock. */
static bool filter_accepts_locked(const struct net_rx_filter *f,
				  const uint8_t *dst)
{
	if (f->promisc)
		return true;
	if (!memcmp(dst, broadcast, ETH_ADDR_LEN))
		return !f->nobcast;
	if (dst[0] & 1) {
		if (f->nomulti)
			return false;
		return f->allmulti || f->multi_overflow ||
		       mac_in(f->multi, f->nr_multi, dst);
	}
	if (f->nouni)
		return false;
	return f->alluni || f->uni_overflow ||
	       !memcmp(dst, f->mac, ETH_ADDR_LEN) ||
	       mac_in(f->uni, f->nr_uni, dst);
}

/* frame: the Ethernet frame, after the virtio-net header. */
bool net_filter_accepts(struct net_rx_filter *f, const uint8_t *frame,
			size_t len)
{
	bool ok;

	if (len < ETH_ADDR_LEN)
		return false;
	pthread_mutex_lock(&f->lock);
	ok = filter_accepts_locked(f, frame);
	pthread_mutex_unlock(&f->lock);
	return ok;
}

static uint8_t ctrl_rx_mode(struct virtio_net *net, uint8_t cmd,
			    const uint8_t *data, size_t len)
{
	struct net_rx_filter *f = &net->filter;
	bool *flag;

	if (len != 1)
		return VIRTIO_NET_ERR;
	switch (cmd) {
	case VIRTIO_NET_CTRL_RX_PROMISC: flag = &f->promisc; break;
	case VIRTIO_NET_CTRL_RX_ALLMULTI: flag = &f->allmulti; break;
	case VIRTIO_NET_CTRL_RX_ALLUNI: flag = &f->alluni; break;
	case VIRTIO_NET_CTRL_RX_NOMULTI: flag = &f->nomulti; break;
	case VIRTIO_NET_CTRL_RX_NOUNI: flag = &f->nouni; break;
	case VIRTIO_NET_CTRL_RX_NOBCAST: flag = &f->nobcast; break;
	default: return VIRTIO_NET_ERR;
	}
	if (cmd > VIRTIO_NET_CTRL_RX_ALLMULTI &&
	    !virtio_has_feature(&net->vdev, VIRTIO_NET_F_CTRL_RX_EXTRA))
		return VIRTIO_NET_ERR;
	pthread_mutex_lock(&f->lock);
	*flag = data[0];
	pthread_mutex_unlock(&f->lock);
	return VIRTIO_NET_OK;
}

/* One table of VIRTIO_NET_CTRL_MAC_TABLE_SET: le32 count, then MACs. */
static const uint8_t *mac_table(const uint8_t *p, const uint8_t *end,
				uint32_t *count)
{
	uint32_t n;

	if (end - p < 4)
		return NULL;
	memcpy(&n, p, 4);
	n = le32toh(n);
	p += 4;
	if ((size_t)(end - p) / ETH_ADDR_LEN < n)
		return NULL;
	*count = n;
	return p;
}

static void table_store(uint8_t (*table)[ETH_ADDR_LEN], unsigned int *nr,
			bool *overflow, const uint8_t *macs, uint32_t n)
{
	*overflow = n > NET_MAC_TABLE_SIZE;
	*nr = *overflow ? 0 : n;
	memcpy(table, macs, (size_t)*nr * ETH_ADDR_LEN);
}

static uint8_t ctrl_mac_table(struct virtio_net *net, const uint8_t *data,
			      size_t len)
{
	const uint8_t *end = data + len, *uni, *multi;
	struct net_rx_filter *f = &net->filter;
	uint32_t nr_uni, nr_multi;

	uni = mac_table(data, end, &nr_uni);
	if (!uni)
		return VIRTIO_NET_ERR;
	multi = mac_table(uni + (size_t)nr_uni * ETH_ADDR_LEN, end, &nr_multi);
	if (!multi || multi + (size_t)nr_multi * ETH_ADDR_LEN != end)
		return VIRTIO_NET_ERR;
	pthread_mutex_lock(&f->lock);
	table_store(f->uni, &f->nr_uni, &f->uni_overflow, uni, nr_uni);
	table_store(f->multi, &f->nr_multi, &f->multi_overflow, multi,
		    nr_multi);
	pthread_mutex_unlock(&f->lock);
	return VIRTIO_NET_OK;
}

static uint8_t ctrl_mac(struct virtio_net *net, uint8_t cmd,
			const uint8_t *data, size_t len)
{
	if (cmd == VIRTIO_NET_CTRL_MAC_TABLE_SET)
		return ctrl_mac_table(net, data, len);
	if (cmd != VIRTIO_NET_CTRL_MAC_ADDR_SET || len != ETH_ADDR_LEN ||
	    !virtio_has_feature(&net->vdev, VIRTIO_NET_F_CTRL_MAC_ADDR))
		return VIRTIO_NET_ERR;
	/* In config space before the command is done (virtio 5.1.6.5.2.1). */
	if (virtio_has_feature(&net->vdev, VIRTIO_NET_F_MAC))
		virtio_config_update(&net->vdev,
				     offsetof(struct virtio_net_config, mac),
				     data, ETH_ADDR_LEN);
	net_filter_set_mac(&net->filter, data);
	return VIRTIO_NET_OK;
}

static uint8_t ctrl_mq(struct virtio_net *net, uint8_t cmd,
		       const uint8_t *data, size_t len)
{
	uint16_t pairs;

	if (cmd != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || len != 2 ||
	    !virtio_has_feature(&net->vdev, VIRTIO_NET_F_MQ))
		return VIRTIO_NET_ERR;
	memcpy(&pairs, data, 2);
	pairs = le16toh(pairs);
	if (pairs < 1 || pairs > net->nr_pairs)
		return VIRTIO_NET_ERR;
	return net_set_active_pairs(net, pairs) ? VIRTIO_NET_ERR : VIRTIO_NET_OK;
}

static uint8_t ctrl_guest_offloads(struct virtio_net *net, uint8_t cmd,
				   const uint8_t *data, size_t len)
{
	const uint64_t dynamic = (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
				 (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
				 (1ULL << VIRTIO_NET_F_GUEST_TSO6);
	uint64_t offloads;

	if (cmd != VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET || len != 8 ||
	    !virtio_has_feature(&net->vdev,
				VIRTIO_NET_F_CTRL_GUEST_OFFLOADS))
		return VIRTIO_NET_ERR;
	memcpy(&offloads, data, 8);
	offloads = le64toh(offloads);
	/* Only what was negotiated may be switched back on. */
	if (offloads & ~(net->vdev.guest_features & dynamic))
		return VIRTIO_NET_ERR;
	return net_set_guest_offloads(net, offloads) ? VIRTIO_NET_ERR :
						       VIRTIO_NET_OK;
}

static uint8_t ctrl_command(struct virtio_net *net, const uint8_t *buf,
			    size_t len)
{
	const uint8_t *data = buf + 2;
	size_t data_len = len - 2;

	switch (buf[0]) {
	case VIRTIO_NET_CTRL_RX:
		if (!virtio_has_feature(&net->vdev, VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		return ctrl_rx_mode(net, buf[1], data, data_len);
	case VIRTIO_NET_CTRL_MAC:
		if (!virtio_has_feature(&net->vdev, VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		return ctrl_mac(net, buf[1], data, data_len);
	case VIRTIO_NET_CTRL_MQ:
		return ctrl_mq(net, buf[1], data, data_len);
	case VIRTIO_NET_CTRL_GUEST_OFFLOADS:
		return ctrl_guest_offloads(net, buf[1], data, data_len);
	default:
		return VIRTIO_NET_ERR;	/* VLAN, ANNOUNCE: not offered */
	}
}

/* Gather the driver-written part (free() it); NULL if it cannot be a command. */
static uint8_t *ctrl_gather(const struct virtq_chain *c, size_t *len)
{
	uint8_t *buf;

	if (c->out_len < 2 || c->out_len > NET_CTRL_MAX_DATA || !c->in_len)
		return NULL;
	buf = calloc(1, c->out_len);
	if (!buf)
		return NULL;
	virtq_chain_read(c, 0, buf, c->out_len);
	*len = c->out_len;
	return buf;
}

/* The ack goes in the first device-writable byte; returns bytes written. */
static uint32_t ctrl_ack(const struct virtq_chain *c, uint8_t ack)
{
	unsigned int i;

	for (i = 0; i < c->nr_in; i++) {
		if (c->in[i].len) {
			*(uint8_t *)c->in[i].hva = ack;
			return 1;
		}
	}
	return 0;
}

static enum virtio_chain_result ctrl_handle(struct virtio_queue *q,
					    const struct virtq_chain *c,
					    void *opaque, uint32_t *written)
{
	struct virtio_net *net = opaque;
	uint8_t ack = VIRTIO_NET_ERR;
	size_t len;
	uint8_t *buf = ctrl_gather(c, &len);

	if (buf) {
		ack = ctrl_command(net, buf, len);
		free(buf);
	} else {
		pr_debug("virtio-net: malformed control command");
	}
	*written = ctrl_ack(c, ack);
	return VIRTIO_CHAIN_USED;
}

/* Caller holds q->lock. */
void net_ctrl_kick(struct virtio_net *net, struct virtio_queue *q)
{
	virtio_queue_serve(&net->vdev, q, ctrl_handle, net);
}
