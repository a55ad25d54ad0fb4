/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network backends for virtio-net and the -n option that picks them. The
 * tap backend hands frames to and from a host tap device, each behind the
 * 12-byte virtio-net header (IFF_VNET_HDR), so they pass unchanged.
 */
#ifndef LKVM_NET_H
#define LKVM_NET_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

enum net_mode {
	NET_MODE_NONE,
	NET_MODE_TAP,
};

struct net_config {
	enum net_mode mode;
	char tapif[IFNAMSIZ];		/* empty: let the kernel pick tapN */
	uint8_t mac[6];
	bool mac_given;
};

/* Owned by its virtio-net device; the fd is used by its I/O thread only. */
struct tap {
	int fd;
	char ifname[IFNAMSIZ];
	bool offloads;			/* TUNSETOFFLOAD works: csum + TSO */
};

/* Parse "mode=tap,tapif=NAME,guest_mac=..." or "tap"/"none"; -1 + message. */
int net_parse_option(const char *arg, struct net_config *cfg);

/* A MAC that stays the same for the same VM name and NIC index. */
void net_default_mac(const char *vm_name, unsigned int index, uint8_t mac[6]);

/* Attach to (or create) the tap; non-blocking, 12-byte vnet header. */
int tap_open(struct tap *tap, const char *ifname);
void tap_close(struct tap *tap);
/* The virtio-net header in front of each frame: 10 or 12 bytes. */
int tap_set_header_len(struct tap *tap, int len);
/* What the tap may hand us: TUN_F_* flags (partial csum, TSO). */
int tap_set_offloads(struct tap *tap, unsigned int tun_flags);

#endif
