// SPDX-License-Identifier: GPL-2.0
/*
 * User-mode networking through libslirp (-n user): the guest gets QEMU's
 * default network without privileges. 10.0.2.0/24, DHCP from 10.0.2.15,
 * 10.0.2.2 is the host (its loopback included), 10.0.2.3 a DNS proxy to
 * the host's resolvers; IPv6 fec0::/64 the same way (fec0::2, fec0::3).
 * hostfwd= rules listen on the host and connect into the guest.
 * host_loopback=off keeps the host's loopback out of reach: 10.0.2.2
 * stands for nothing, and frames the guest addresses to the loopback
 * itself are dropped (slirp_guard.c). restrict=on is QEMU's: the guest
 * reaches nothing outside, only hostfwd connections come in.
 *
 * libslirp has no locking, so one thread owns it: the device's I/O thread
 * and the slirp thread talk through a SOCK_SEQPACKET socket pair, one
 * frame per message, each behind the virtio-net header the device speaks
 * (what a tap with IFF_VNET_HDR would carry). The slirp thread polls its
 * end, the host sockets slirp asks for and a stop eventfd.
 *
 * Backpressure: when the device has not taken what the slirp thread sent
 * (the guest posts no receive buffers), the thread waits for room instead
 * of dropping, so slirp stops reading host sockets and the host's TCP
 * flow control pushes back on the peers. The device end never blocks:
 * when the slirp thread falls behind on what the guest sends, the device
 * gets EAGAIN and holds its transmit queue until there is room. As this
 * thread also reads what the guest sends, a guest that takes nothing for
 * SLIRP_ROOM_WAIT_MS has frames for it dropped from then on, until it
 * takes one again: its transmit queue must not wait on its receive queue.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "slirp_guard.h"
#include "slirp_lib.h"

#include "lkvm/net.h"
#include "lkvm/seccomp.h"
#include "lkvm/util.h"

#define SLIRP_HDR_MAX		12	/* virtio_net_hdr_mrg_rxbuf */
#define SLIRP_FRAME_MAX		65536	/* no guest MTU makes a longer frame */
/* Room for a few hundred full-size frames each way: bursts stay queued. */
#define SLIRP_SOCKBUF		(2 * 1024 * 1024)
/* Frames taken from the guest per wake-up before slirp's sockets run. */
#define SLIRP_RX_BATCH		64
/* A slow guest is waited for; one that takes no frame this long is deaf. */
#define SLIRP_ROOM_WAIT_MS	2000
#define SLIRP_GUEST_ERRORS_SHOWN	10

/* Poll slots 0 and 1 are ours; slirp's sockets follow. */
#define SLIRP_PFD_STOP		0
#define SLIRP_PFD_PEER		1
#define SLIRP_PFD_FIXED		2

/* A libslirp timer (SlirpConfig version 4: fired by id). */
struct slirp_timer {
	struct slirp_timer *next;
	SlirpTimerId id;
	void *cb_opaque;
	int64_t expire_ms;		/* -1: not armed */
};

/*
 * One user-mode network, set up by slirp_backend_open() before its thread
 * starts and torn down by slirp_close() after the thread is joined. While
 * the thread runs:
 *  - slirp, timers, pfds, nr_pfds, max_pfds, guest_errors, guest_deaf,
 *    frame: the slirp thread only (every libslirp call happens there);
 *  - dev_fd: the device's I/O thread; peer_fd: the slirp thread;
 *  - hdr_len: stored by the device's status thread at DRIVER_OK, loaded by
 *    the slirp thread, both with __atomic (one value per frame, no lock);
 *  - stop_fd: written once by slirp_close(), watched by the slirp thread.
 */
struct slirp_net {
	const struct slirp_lib *lib;	/* set at open, then read-only */
	Slirp *slirp;
	int dev_fd;
	int peer_fd;
	int stop_fd;
	int hdr_len;
	pthread_t thread;
	bool started;
	struct slirp_timer *timers;
	struct pollfd *pfds;
	unsigned int nr_pfds;
	unsigned int max_pfds;
	unsigned int guest_errors;
	bool guest_deaf;		/* took nothing for SLIRP_ROOM_WAIT_MS */
	bool guard_loopback;		/* set at open: host_loopback=off */
	uint8_t frame[SLIRP_HDR_MAX + SLIRP_FRAME_MAX];
};

static int64_t slirp_clock_ns(void *opaque)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t slirp_clock_ms(void)
{
	return slirp_clock_ns(NULL) / 1000000;
}

/*
 * Wait until the device end can take another frame: false if close()
 * asks the thread to stop, or if the guest took nothing for
 * SLIRP_ROOM_WAIT_MS (it is deaf then, until a frame goes in again).
 */
static bool slirp_wait_room(struct slirp_net *sn)
{
	struct pollfd pfd[2] = {
		{ .fd = sn->stop_fd, .events = POLLIN },
		{ .fd = sn->peer_fd, .events = POLLOUT },
	};
	int n;

	while ((n = poll(pfd, 2, SLIRP_ROOM_WAIT_MS)) < 0)
		if (errno != EINTR)
			return false;
	if (n == 0) {
		sn->guest_deaf = true;
		pr_warn_once("user net: the guest took no frame for %d ms: dropping frames for it until it takes one",
			     SLIRP_ROOM_WAIT_MS);
	}
	return n > 0 && !pfd[0].revents;
}

/* slirp -> guest: one frame behind an all-zero header (no offloads). */
static ssize_t slirp_send_packet(const void *buf, size_t len, void *opaque)
{
	static const uint8_t zero_hdr[SLIRP_HDR_MAX];
	struct slirp_net *sn = opaque;
	struct iovec iov[2] = {
		{ .iov_base = (void *)zero_hdr,
		  .iov_len = __atomic_load_n(&sn->hdr_len, __ATOMIC_RELAXED) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	/*
	 * A frame that cannot go (stopping, a deaf guest, the device end
	 * gone) is lost, as on a wire: a negative return would only make
	 * libslirp print through glib.
	 */
	for (;;) {
		if (sendmsg(sn->peer_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
			sn->guest_deaf = false;
			return len;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			pr_warn_once("user net: cannot pass a frame to the guest: %s",
				     strerror(errno));
			return len;
		}
		if (sn->guest_deaf || !slirp_wait_room(sn))
			return len;
	}
}

/* A guest's malformed packet: worth a line, but a guest must not flood. */
static void slirp_guest_error(const char *msg, void *opaque)
{
	struct slirp_net *sn = opaque;

	if (sn->guest_errors < SLIRP_GUEST_ERRORS_SHOWN)
		pr_warn("user net: guest error: %s%s", msg,
			sn->guest_errors + 1 == SLIRP_GUEST_ERRORS_SHOWN ?
			" (further ones not shown)" : "");
	sn->guest_errors++;
}

static void *slirp_timer_new(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	struct slirp_net *sn = opaque;
	struct slirp_timer *t = calloc(1, sizeof(*t));

	if (!t) {
		pr_warn("user net: out of memory for a timer");
		return NULL;
	}
	t->id = id;
	t->cb_opaque = cb_opaque;
	t->expire_ms = -1;
	t->next = sn->timers;
	sn->timers = t;
	return t;
}

static void slirp_timer_free(void *timer, void *opaque)
{
	struct slirp_net *sn = opaque;
	struct slirp_timer **p;

	for (p = &sn->timers; *p; p = &(*p)->next) {
		if (*p == timer) {
			*p = (*p)->next;
			free(timer);
			return;
		}
	}
}

static void slirp_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
	struct slirp_timer *t = timer;

	if (t)
		t->expire_ms = expire_ms;
}

/*
 * The poll set is rebuilt from slirp_pollfds_fill() on every turn of the
 * loop, so there is no fd list to keep up to date here.
 */
static void slirp_register_poll_fd(int fd, void *opaque)
{
}

static void slirp_unregister_poll_fd(int fd, void *opaque)
{
}

/*
 * slirp asks to be polled again when a guestfwd socket has room; it runs
 * on this thread, which goes back to slirp_pollfds_fill() next anyway.
 */
static void slirp_notify(void *opaque)
{
}

static const SlirpCb slirp_callbacks = {
	.send_packet = slirp_send_packet,
	.guest_error = slirp_guest_error,
	.clock_get_ns = slirp_clock_ns,
	.timer_free = slirp_timer_free,
	.timer_mod = slirp_timer_mod,
	.register_poll_fd = slirp_register_poll_fd,
	.unregister_poll_fd = slirp_unregister_poll_fd,
	.notify = slirp_notify,
	.timer_new_opaque = slirp_timer_new,
};

static short slirp_to_poll_events(int events)
{
	return (events & SLIRP_POLL_IN ? POLLIN : 0) |
	       (events & SLIRP_POLL_OUT ? POLLOUT : 0) |
	       (events & SLIRP_POLL_PRI ? POLLPRI : 0) |
	       (events & SLIRP_POLL_ERR ? POLLERR : 0) |
	       (events & SLIRP_POLL_HUP ? POLLHUP : 0);
}

static int slirp_add_poll(int fd, int events, void *opaque)
{
	struct slirp_net *sn = opaque;

	if (sn->nr_pfds == sn->max_pfds) {
		unsigned int max = sn->max_pfds * 2;
		struct pollfd *p = realloc(sn->pfds, max * sizeof(*p));

		if (!p) {
			/* slirp skips a socket whose index is -1 this turn. */
			pr_warn_once("user net: out of memory for the poll set");
			return -1;
		}
		sn->pfds = p;
		sn->max_pfds = max;
	}
	sn->pfds[sn->nr_pfds] = (struct pollfd) {
		.fd = fd, .events = slirp_to_poll_events(events),
	};
	return sn->nr_pfds++;
}

static int slirp_get_revents(int idx, void *opaque)
{
	struct slirp_net *sn = opaque;
	short r;

	if (idx < SLIRP_PFD_FIXED || (unsigned int)idx >= sn->nr_pfds)
		return 0;
	r = sn->pfds[idx].revents;
	return (r & POLLIN ? SLIRP_POLL_IN : 0) |
	       (r & POLLOUT ? SLIRP_POLL_OUT : 0) |
	       (r & POLLPRI ? SLIRP_POLL_PRI : 0) |
	       (r & (POLLERR | POLLNVAL) ? SLIRP_POLL_ERR : 0) |
	       (r & POLLHUP ? SLIRP_POLL_HUP : 0);
}

/* Shorten slirp's poll timeout (ms) to the next armed timer. */
static uint32_t slirp_timers_timeout(struct slirp_net *sn, uint32_t timeout)
{
	int64_t now = slirp_clock_ms();
	struct slirp_timer *t;

	for (t = sn->timers; t; t = t->next) {
		if (t->expire_ms < 0)
			continue;
		if (t->expire_ms <= now)
			return 0;
		if (t->expire_ms - now < timeout)
			timeout = t->expire_ms - now;
	}
	return timeout;
}

/*
 * Fire what is due, one at a time: a handler may re-arm or free timers,
 * so the list is searched afresh after each.
 */
static void slirp_run_timers(struct slirp_net *sn)
{
	int64_t now = slirp_clock_ms();
	struct slirp_timer *t;

	for (;;) {
		for (t = sn->timers; t; t = t->next)
			if (t->expire_ms >= 0 && t->expire_ms <= now)
				break;
		if (!t)
			return;
		t->expire_ms = -1;
		sn->lib->handle_timer(sn->slirp, t->id, t->cb_opaque);
	}
}

/* guest -> slirp: the frames the device wrote, header stripped. */
static void slirp_from_guest(struct slirp_net *sn)
{
	int i;

	for (i = 0; i < SLIRP_RX_BATCH; i++) {
		int hdr_len = __atomic_load_n(&sn->hdr_len, __ATOMIC_RELAXED);
		ssize_t n = recv(sn->peer_fd, sn->frame, sizeof(sn->frame),
				 MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;		/* EAGAIN: all taken */
		}
		if ((size_t)n > sizeof(sn->frame) || n <= hdr_len) {
			pr_warn_once("user net: dropped a %zd-byte frame from the guest",
				     n);
			continue;
		}
		if (sn->guard_loopback &&
		    slirp_frame_to_host_loopback(sn->frame + hdr_len,
						 n - hdr_len)) {
			pr_warn_once("user net: dropped the guest's packets addressed to the host's loopback (host_loopback=off)");
			continue;
		}
		sn->lib->input(sn->slirp, sn->frame + hdr_len, n - hdr_len);
	}
}

/* One turn: poll everything, then let slirp and the timers act. */
static bool slirp_poll_once(struct slirp_net *sn)
{
	uint32_t timeout = UINT32_MAX;
	int n;

	sn->pfds[SLIRP_PFD_STOP] = (struct pollfd) {
		.fd = sn->stop_fd, .events = POLLIN,
	};
	sn->pfds[SLIRP_PFD_PEER] = (struct pollfd) {
		.fd = sn->peer_fd, .events = POLLIN,
	};
	sn->nr_pfds = SLIRP_PFD_FIXED;
	sn->lib->pollfds_fill(sn->slirp, &timeout, slirp_add_poll, sn);
	timeout = slirp_timers_timeout(sn, timeout);
	n = poll(sn->pfds, sn->nr_pfds,
		 timeout == UINT32_MAX ? -1 : (int)MIN(timeout, (uint32_t)INT32_MAX));
	if (n < 0 && errno != EINTR) {
		pr_err("user net: poll: %s; the network stops", strerror(errno));
		return false;
	}
	if (n > 0 && sn->pfds[SLIRP_PFD_STOP].revents)
		return false;
	sn->lib->pollfds_poll(sn->slirp, n < 0, slirp_get_revents, sn);
	if (n > 0 && (sn->pfds[SLIRP_PFD_PEER].revents & POLLIN))
		slirp_from_guest(sn);
	slirp_run_timers(sn);
	return true;
}

static void *slirp_thread(void *arg)
{
	struct slirp_net *sn = arg;

	pthread_setname_np(pthread_self(), "slirp");
	if (seccomp_confine(SECCOMP_SLIRP)) {
		pr_err("user net: the network stops");
		return NULL;
	}
	while (slirp_poll_once(sn))
		;
	return NULL;
}

static int slirp_set_header_len(struct net_backend *be, int len)
{
	struct slirp_net *sn = be->priv;

	if (len != 10 && len != 12)
		return -EINVAL;
	__atomic_store_n(&sn->hdr_len, len, __ATOMIC_RELAXED);
	return 0;
}

/* Frames carry no partial checksums or GSO either way. */
static int slirp_set_offloads(struct net_backend *be, unsigned int tun_flags)
{
	return tun_flags ? -EINVAL : 0;
}

/* One queue pair, always served. */
static int slirp_enable_queue(struct net_backend *be, unsigned int idx,
			      bool enable)
{
	return 0;
}

static void slirp_net_free(struct slirp_net *sn)
{
	uint64_t one = 1;

	if (sn->started) {
		if (write(sn->stop_fd, &one, sizeof(one)) < 0)
			pr_warn("user net: cannot stop its thread: %s",
				strerror(errno));
		pthread_join(sn->thread, NULL);
	}
	/* The thread is gone: libslirp is this thread's now. */
	if (sn->slirp)
		sn->lib->cleanup(sn->slirp);
	while (sn->timers)
		slirp_timer_free(sn->timers, sn);
	if (sn->dev_fd >= 0)
		close(sn->dev_fd);
	if (sn->peer_fd >= 0)
		close(sn->peer_fd);
	if (sn->stop_fd >= 0)
		close(sn->stop_fd);
	free(sn->pfds);
	free(sn);
}

static void slirp_close(struct net_backend *be)
{
	if (!be->priv)
		return;
	slirp_net_free(be->priv);
	be->priv = NULL;
	be->fds[0] = -1;
	be->nr_queues = 0;
}

static const struct net_backend_ops slirp_ops = {
	.set_header_len = slirp_set_header_len,
	.set_offloads = slirp_set_offloads,
	.enable_queue = slirp_enable_queue,
	.close = slirp_close,
};

static struct in_addr ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a;
}

static struct in6_addr ip6(const char *s)
{
	struct in6_addr a;

	inet_pton(AF_INET6, s, &a);
	return a;
}

/* QEMU's defaults, so guests and habits carry over. */
static Slirp *slirp_create(struct slirp_net *sn, const struct net_config *cfg)
{
	SlirpConfig c = {
		.version = 4,
		.in_enabled = true,
		.vnetwork = ip4("10.0.2.0"),
		.vnetmask = ip4("255.255.255.0"),
		.vhost = ip4("10.0.2.2"),
		.vdhcp_start = ip4("10.0.2.15"),
		.vnameserver = ip4("10.0.2.3"),
		.in6_enabled = true,
		.vprefix_addr6 = ip6("fec0::"),
		.vprefix_len = 64,
		.vhost6 = ip6("fec0::2"),
		.vnameserver6 = ip6("fec0::3"),
		.restricted = cfg->restricted,
		/* 10.0.2.2 reaches the host's own services, as with QEMU */
		.disable_host_loopback = sn->guard_loopback,
	};
	Slirp *slirp = sn->lib->new(&c, &slirp_callbacks, sn);

	if (!slirp)
		pr_err("user net: libslirp refused its configuration");
	return slirp;
}

static int slirp_add_fwd(struct slirp_net *sn, const struct net_hostfwd *fwd)
{
	struct in_addr guest = fwd->guest_addr;
	char host_s[INET_ADDRSTRLEN], guest_s[INET_ADDRSTRLEN];
	const char *proto = fwd->udp ? "udp" : "tcp";

	if (!guest.s_addr)
		guest = ip4("10.0.2.15");
	inet_ntop(AF_INET, &fwd->host_addr, host_s, sizeof(host_s));
	inet_ntop(AF_INET, &guest, guest_s, sizeof(guest_s));
	errno = 0;
	if (sn->lib->add_hostfwd(sn->slirp, fwd->udp, fwd->host_addr,
				 fwd->host_port, guest, fwd->guest_port) < 0) {
		pr_err("-n user: hostfwd %s %s:%u: cannot listen on the host%s%s",
		       proto, host_s, fwd->host_port, errno ? ": " : "",
		       errno ? strerror(errno) : "");
		return -1;
	}
	pr_info("user net: %s %s:%u -> guest %s:%u", proto, host_s,
		fwd->host_port, guest_s, fwd->guest_port);
	return 0;
}

/* The pair's buffers bound what waits between the threads. */
static void slirp_size_buffers(int fd)
{
	int size = SLIRP_SOCKBUF;

	/* FORCE goes past net.core.[rw]mem_max, for CAP_NET_ADMIN only. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static int slirp_open_fds(struct slirp_net *sn)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0) {
		pr_err("user net: socketpair: %s", strerror(errno));
		return -1;
	}
	sn->dev_fd = sv[0];
	sn->peer_fd = sv[1];
	slirp_size_buffers(sn->dev_fd);
	slirp_size_buffers(sn->peer_fd);
	sn->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sn->stop_fd < 0) {
		pr_err("user net: eventfd: %s", strerror(errno));
		return -1;
	}
	sn->max_pfds = 16;
	sn->pfds = calloc(sn->max_pfds, sizeof(*sn->pfds));
	if (!sn->pfds) {
		pr_err("out of memory");
		return -1;
	}
	return 0;
}

/*
 * Signals are the main thread's business (signalfd); a SIGPIPE from a send
 * inside libslirp to a host peer that went away stays pending here instead
 * of killing lkvm.
 */
static int slirp_start_thread(struct slirp_net *sn)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&sn->thread, NULL, slirp_thread, sn);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pr_err("user net: cannot start its thread: %s", strerror(err));
		return -1;
	}
	sn->started = true;
	return 0;
}

int slirp_backend_open(struct net_backend *be, const struct net_config *cfg)
{
	struct slirp_net *sn = calloc(1, sizeof(*sn));
	unsigned int i;

	memset(be, 0, sizeof(*be));
	if (!sn) {
		pr_err("out of memory");
		return -1;
	}
	sn->lib = slirp_lib();
	if (!sn->lib) {
		free(sn);
		return -1;
	}
	sn->dev_fd = sn->peer_fd = sn->stop_fd = -1;
	sn->hdr_len = SLIRP_HDR_MAX;
	if (slirp_open_fds(sn))
		goto fail;
	/* Set up here, before the thread exists; from then on it is its. */
	sn->guard_loopback = cfg->restricted ||
			     cfg->host_loopback == NET_HOST_LOOPBACK_OFF;
	sn->slirp = slirp_create(sn, cfg);
	if (!sn->slirp)
		goto fail;
	for (i = 0; i < cfg->nr_hostfwd; i++)
		if (slirp_add_fwd(sn, &cfg->hostfwd[i]))
			goto fail;
	if (slirp_start_thread(sn))
		goto fail;
	pr_info("user net: guest 10.0.2.15 by DHCP, host 10.0.2.2, DNS 10.0.2.3%s",
		cfg->restricted ? "; restrict=on: nothing outside is reachable" :
		sn->guard_loopback ? "; host_loopback=off: not the host's loopback" :
		"");
	be->ops = &slirp_ops;
	be->fds[0] = sn->dev_fd;
	be->nr_queues = 1;
	be->offloads = false;
	snprintf(be->name, sizeof(be->name), "user");
	be->priv = sn;
	return 0;
fail:
	slirp_net_free(sn);
	return -1;
}
