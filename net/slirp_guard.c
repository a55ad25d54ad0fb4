// SPDX-License-Identifier: GPL-2.0
/*
 * Which guest frames would reach the host's loopback through libslirp
 * (see slirp_guard.h). Only the destination address matters: libslirp
 * reads Ethernet type 0x0800 and 0x86dd (no VLAN tags) and connects its
 * host sockets to the IP header's destination, fragments or not.
 */
#include <string.h>

#include "slirp_guard.h"

#define ETH_HLEN	14
#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86dd

/* 127.0.0.0/8 and 0.0.0.0/8 (connect() to 0.x reaches the host itself). */
static bool ip4_is_host_local(const uint8_t *a)
{
	return a[0] == 127 || a[0] == 0;
}

/*
 * ::/96 (::, ::1 and the old IPv4-compatible form) and ::ffff:0:0/96
 * holding a host-local IPv4 address: a dual-stack socket reaches that
 * IPv4 address itself.
 */
static bool ip6_is_host_local(const uint8_t *a)
{
	static const uint8_t zero[12];
	static const uint8_t mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
	};

	if (!memcmp(a, zero, 12))
		return true;
	return !memcmp(a, mapped, 12) && ip4_is_host_local(a + 12);
}

bool slirp_frame_to_host_loopback(const uint8_t *frame, size_t len)
{
	unsigned int type;

	if (len < ETH_HLEN)
		return false;
	type = frame[12] << 8 | frame[13];
	/* the destination: IPv4 at byte 16 of its header, IPv6 at byte 24 */
	if (type == ETH_P_IP && len >= ETH_HLEN + 20)
		return ip4_is_host_local(frame + ETH_HLEN + 16);
	if (type == ETH_P_IPV6 && len >= ETH_HLEN + 40)
		return ip6_is_host_local(frame + ETH_HLEN + 24);
	return false;
}
