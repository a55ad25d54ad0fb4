/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Network backends for virtio-net and the -n option that picks them.
 *
 * A backend hands the device one file descriptor per queue pair. Each
 * read() or write() on it carries one Ethernet frame behind the
 * virtio-net header (10 or 12 bytes, see set_header_len): the tap speaks
 * that format natively (IFF_VNET_HDR); the user-mode backend (libslirp)
 * speaks it over a socket pair to its own thread.
 */
#ifndef LKVM_NET_H
#define LKVM_NET_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "lkvm/virtio/poll.h"

#define NET_MAX_QUEUE_PAIRS	8
#define NET_MAX_HOSTFWD		8
#define NET_SCRIPT_MAX		256

enum net_mode {
	NET_MODE_NONE,
	NET_MODE_TAP,
	NET_MODE_USER,
};

/* hostfwd=tcp|udp:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT */
struct net_hostfwd {
	bool udp;
	struct in_addr host_addr;	/* 127.0.0.1 unless given */
	uint16_t host_port;
	struct in_addr guest_addr;	/* 0: the address DHCP hands out */
	uint16_t guest_port;
};

/*
 * -n user's host_loopback=: whether the guest reaches the host's own
 * loopback services (10.0.2.2 standing for 127.0.0.1, as in QEMU). DEFAULT
 * is ON for lkvm run and OFF for lkvm sandbox (sandbox_configure()).
 */
enum net_host_loopback {
	NET_HOST_LOOPBACK_DEFAULT,
	NET_HOST_LOOPBACK_ON,
	NET_HOST_LOOPBACK_OFF,
};

struct net_config {
	enum net_mode mode;
	char tapif[IFNAMSIZ];		/* empty: let the kernel pick tapN */
	char script[NET_SCRIPT_MAX];	/* run as "script IFNAME" once up */
	uint8_t mac[6];
	bool mac_given;
	unsigned int queues;		/* queue pairs asked for (>= 1) */
	unsigned int nr_hostfwd;
	struct net_hostfwd hostfwd[NET_MAX_HOSTFWD];
	bool restricted;		/* restrict=on: nothing outside but the
					   hostfwd rules' connections in */
	enum net_host_loopback host_loopback;
	enum virtio_poll_mode poll;	/* poll=; VIRTIO_POLL_UNSET: --poll's */
};

struct net_backend;

struct net_backend_ops {
	/* The header in front of each frame: 12, or 10 for legacy drivers. */
	int (*set_header_len)(struct net_backend *be, int len);
	/* What the backend may hand the guest: TUN_F_* (csum, TSO). */
	int (*set_offloads)(struct net_backend *be, unsigned int tun_flags);
	/* Whether the backend may steer frames to queue pair idx. */
	int (*enable_queue)(struct net_backend *be, unsigned int idx,
			    bool enable);
	void (*close)(struct net_backend *be);
};

/*
 * Owned by its virtio-net device. fds[i] is read and written by the I/O
 * thread of queue pair i only; the ops are called from the thread that
 * handles the device's status and control queue.
 */
struct net_backend {
	const struct net_backend_ops *ops;
	int fds[NET_MAX_QUEUE_PAIRS];
	unsigned int nr_queues;
	bool offloads;			/* TUN_F_CSUM/TSO4/TSO6 can be set */
	char name[IFNAMSIZ];		/* for messages: the tap, or "user" */
	void *priv;
};

/* Parse "mode=tap,tapif=NAME,guest_mac=..." or "tap"/"user"/"none"; -1 + message. */
int net_parse_option(const char *arg, struct net_config *cfg);

/* A MAC that stays the same for the same VM name and NIC index. */
void net_default_mac(const char *vm_name, unsigned int index, uint8_t mac[6]);

/*
 * Attach to (or create) cfg->tapif with `queues` queues (IFF_MULTI_QUEUE
 * when more than one), non-blocking, 12-byte vnet header; then run
 * cfg->script if one is given. -1 + a one-line message.
 */
int tap_backend_open(struct net_backend *be, const struct net_config *cfg,
		     unsigned int queues);

/* User-mode networking through libslirp: one queue, no offloads. */
int slirp_backend_open(struct net_backend *be, const struct net_config *cfg);

/*
 * The backend cfg->mode names, with `queues` queue pairs where it can
 * (user mode has one): -1 + a one-line message. Closing a closed (or
 * zeroed) backend does nothing.
 */
int net_backend_open(struct net_backend *be, const struct net_config *cfg,
		     unsigned int queues);
void net_backend_close(struct net_backend *be);

#endif
