// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the user-mode network backend (net/slirp.c), from the
 * device's side of its socket pair: frames in with a virtio-net header,
 * frames out. libslirp answers ARP and DHCP itself and forwards host
 * ports, so all of this runs on the host with no guest and no privileges.
 * The guest is hostile: it writes its own frames, to the host's loopback
 * among others, which host_loopback=off and restrict=on must keep out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

#define HDR	12
#define GUARD_S	30	/* SIGALRM ends a test that hangs */

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static uint32_t ip(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

static void open_user(struct net_backend *be, struct net_config *cfg)
{
	alarm(GUARD_S);
	assert_int_equal(slirp_backend_open(be, cfg), 0);
	assert_int_equal(be->nr_queues, 1);
	assert_true(be->fds[0] >= 0);
}

/* What the device does with a frame from the guest: one write. */
static void send_frame(struct net_backend *be, int hdr_len,
		       const uint8_t *frame, size_t len)
{
	uint8_t buf[2048] = { 0 };

	memcpy(buf + hdr_len, frame, len);
	assert_int_equal(write(be->fds[0], buf, hdr_len + len), hdr_len + len);
}

/* One frame for the guest, or 0 after timeout_ms without one. */
static ssize_t recv_frame(struct net_backend *be, uint8_t *buf, size_t size,
			  int timeout_ms)
{
	struct pollfd pfd = { .fd = be->fds[0], .events = POLLIN };

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	return read(be->fds[0], buf, size);
}

static size_t arp_request(uint8_t *f, const char *target)
{
	uint32_t sip = ip("10.0.2.15"), tip = ip(target);

	memset(f, 0xff, 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);		/* Ethernet */
	put16(f + 16, 0x0800);		/* IPv4 */
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1);		/* request */
	memcpy(f + 22, guest_mac, 6);
	memcpy(f + 28, &sip, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, &tip, 4);
	return 42;
}

/* The reply to arp_request(): from `who`, to us, behind hdr_len zeros. */
static void check_arp_reply(const uint8_t *buf, ssize_t n, int hdr_len,
			    const char *who)
{
	static const uint8_t zero[HDR];
	const uint8_t *f = buf + hdr_len;
	uint32_t sip = ip(who);

	assert_true(n >= hdr_len + 42);
	assert_memory_equal(buf, zero, hdr_len);
	assert_memory_equal(f, guest_mac, 6);
	assert_int_equal(get16(f + 12), 0x0806);
	assert_int_equal(get16(f + 20), 2);
	assert_memory_equal(f + 28, &sip, 4);
	assert_memory_equal(f + 32, guest_mac, 6);
}

static void test_backend_shape(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };
	struct net_backend be;

	open_user(&be, &cfg);
	assert_string_equal(be.name, "user");
	assert_false(be.offloads);
	assert_int_equal(be.ops->set_offloads(&be, 0), 0);
	assert_int_not_equal(be.ops->set_offloads(&be, TUN_F_CSUM), 0);
	assert_int_equal(be.ops->enable_queue(&be, 0, true), 0);
	assert_int_equal(be.ops->set_header_len(&be, 10), 0);
	assert_int_equal(be.ops->set_header_len(&be, 12), 0);
	assert_int_not_equal(be.ops->set_header_len(&be, 11), 0);
	net_backend_close(&be);
	assert_null(be.ops);
}

/* The gateway and the DNS alias answer ARP; the header length follows. */
static void test_arp_both_header_lengths(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };
	enum log_level saved = log_threshold;
	struct net_backend be;
	uint8_t f[64], buf[2048];
	ssize_t n;

	open_user(&be, &cfg);
	send_frame(&be, HDR, f, arp_request(f, "10.0.2.2"));
	n = recv_frame(&be, buf, sizeof(buf), 2000);
	check_arp_reply(buf, n, HDR, "10.0.2.2");

	/* A legacy driver's 10-byte header, as set at DRIVER_OK. */
	assert_int_equal(be.ops->set_header_len(&be, 10), 0);
	send_frame(&be, 10, f, arp_request(f, "10.0.2.3"));
	n = recv_frame(&be, buf, sizeof(buf), 2000);
	check_arp_reply(buf, n, 10, "10.0.2.3");

	/* Garbage shorter than the header is dropped, nothing breaks. */
	log_threshold = LOG_SILENT;
	assert_int_equal(write(be.fds[0], buf, 4), 4);
	send_frame(&be, 10, f, arp_request(f, "10.0.2.2"));
	n = recv_frame(&be, buf, sizeof(buf), 2000);
	log_threshold = saved;
	check_arp_reply(buf, n, 10, "10.0.2.2");
	net_backend_close(&be);
}

/* Sum of 16-bit words, for the checksums' pseudo-headers and bodies. */
static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static uint16_t ip_checksum(const uint8_t *p, size_t len)
{
	return fold(sum16(0, p, len));
}

#define BOOTP_LEN	548	/* fixed part 236, magic 4, options 308 */

/* DHCPDISCOVER from guest_mac: Ethernet, IPv4, UDP 68 -> 67, BOOTP. */
static size_t dhcp_discover(uint8_t *f)
{
	uint8_t *iph = f + 14, *udp = iph + 20, *bp = udp + 8;
	uint32_t bcast = 0xffffffff;

	memset(f, 0, 14 + 20 + 8 + BOOTP_LEN);
	memset(f, 0xff, 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, 0x0800);
	iph[0] = 0x45;
	put16(iph + 2, 20 + 8 + BOOTP_LEN);
	iph[8] = 64;
	iph[9] = 17;
	memcpy(iph + 16, &bcast, 4);
	put16(iph + 10, ip_checksum(iph, 20));
	put16(udp, 68);
	put16(udp + 2, 67);
	put16(udp + 4, 8 + BOOTP_LEN);	/* checksum 0: none, fine for IPv4 */
	bp[0] = 1;			/* BOOTREQUEST */
	bp[1] = 1;
	bp[2] = 6;
	memcpy(bp + 4, "\x12\x34\x56\x78", 4);
	memcpy(bp + 28, guest_mac, 6);
	memcpy(bp + 236, "\x63\x82\x53\x63", 4);
	memcpy(bp + 240, "\x35\x01\x01\xff", 4);	/* DISCOVER, end */
	return 14 + 20 + 8 + BOOTP_LEN;
}

/* The value of DHCP option `code` in a reply's options, or NULL. */
static const uint8_t *dhcp_option(const uint8_t *opt, const uint8_t *end,
				  uint8_t code)
{
	while (opt + 2 <= end && *opt != 255) {
		if (*opt == 0) {
			opt++;
			continue;
		}
		if (*opt == code && opt + 2 + opt[1] <= end)
			return opt + 2;
		opt += 2 + opt[1];
	}
	return NULL;
}

/* Wait for a frame matching `want`, skipping others; its length or 0. */
static ssize_t recv_matching(struct net_backend *be, uint8_t *buf,
			     size_t size,
			     bool (*want)(const uint8_t *f, ssize_t len))
{
	int tries;

	for (tries = 0; tries < 20; tries++) {
		ssize_t n = recv_frame(be, buf, size, 2000);

		if (n <= 0)
			return 0;
		if (want(buf + HDR, n - HDR))
			return n;
	}
	return 0;
}

static bool is_dhcp_reply(const uint8_t *f, ssize_t len)
{
	const uint8_t *iph = f + 14;

	return len > 14 + 20 + 8 + 240 && get16(f + 12) == 0x0800 &&
	       iph[9] == 17 && get16(iph + 20) == 67 && get16(iph + 22) == 68;
}

static void check_dhcp_offer(const uint8_t *f, ssize_t len)
{
	const uint8_t *bp = f + 14 + (f[14] & 0xf) * 4 + 8, *end = f + len;
	const uint8_t *type, *mask, *router, *dns;
	uint32_t yiaddr;

	assert_int_equal(bp[0], 2);				/* BOOTREPLY */
	assert_memory_equal(bp + 4, "\x12\x34\x56\x78", 4);	/* xid */
	memcpy(&yiaddr, bp + 16, 4);
	assert_int_equal(yiaddr, ip("10.0.2.15"));
	type = dhcp_option(bp + 240, end, 53);
	mask = dhcp_option(bp + 240, end, 1);
	router = dhcp_option(bp + 240, end, 3);
	dns = dhcp_option(bp + 240, end, 6);
	assert_non_null(type);
	assert_int_equal(*type, 2);				/* OFFER */
	assert_non_null(mask);
	assert_memory_equal(mask, "\xff\xff\xff\x00", 4);
	assert_non_null(router);
	assert_memory_equal(router, "\x0a\x00\x02\x02", 4);
	assert_non_null(dns);
	assert_memory_equal(dns, "\x0a\x00\x02\x03", 4);
}

static bool is_syn_to_guest_22(const uint8_t *f, ssize_t len)
{
	const uint8_t *iph = f + 14, *tcp = iph + (iph[0] & 0xf) * 4;
	uint32_t dst;

	if (len < 14 + 20 + 20 || get16(f + 12) != 0x0800 || iph[9] != 6)
		return false;
	memcpy(&dst, iph + 16, 4);
	return dst == ip("10.0.2.15") && get16(tcp + 2) == 22 &&
	       (tcp[13] & 0x02);
}

/* A listening socket on 127.0.0.1 with a kernel-chosen port. */
static int listen_any(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/*
 * Open a backend for cfg with a hostfwd rule to the guest's port 22 on a
 * free host port, get the guest its lease (how slirp learns where it
 * is), then connect to the port: the guest must see the SYN. The DHCP
 * offer goes to check (when given).
 */
static void check_hostfwd(struct net_config *cfg,
			  void (*check)(const uint8_t *f, ssize_t len))
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct net_backend be;
	uint8_t f[1024], buf[2048];
	uint16_t port;
	ssize_t n;
	int fd;

	/* A free port: the kernel's pick, released for slirp to take. */
	close(listen_any(&port));
	cfg->nr_hostfwd = 1;
	cfg->hostfwd[0] = (struct net_hostfwd) {
		.host_addr.s_addr = htonl(INADDR_LOOPBACK),
		.host_port = port, .guest_port = 22,
	};
	open_user(&be, cfg);
	send_frame(&be, HDR, f, dhcp_discover(f));
	n = recv_matching(&be, buf, sizeof(buf), is_dhcp_reply);
	assert_true(n > 0);
	if (check)
		check(buf + HDR, n - HDR);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_port = htons(port);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_true(recv_matching(&be, buf, sizeof(buf), is_syn_to_guest_22) >
		    0);
	close(fd);
	net_backend_close(&be);
}

/*
 * DHCP offers 10.0.2.15 with the gateway and DNS aliases; then a host
 * connection to the hostfwd port (guest address left to DHCP) turns into a
 * SYN to 10.0.2.15:22 on the guest's side.
 */
static void test_dhcp_then_hostfwd(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };

	check_hostfwd(&cfg, check_dhcp_offer);
}

static void test_hostfwd_port_busy(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER, .nr_hostfwd = 1 };
	enum log_level saved = log_threshold;
	struct net_backend be;
	uint16_t port;
	int busy = listen_any(&port);

	cfg.hostfwd[0] = (struct net_hostfwd) {
		.host_addr.s_addr = htonl(INADDR_LOOPBACK),
		.host_port = port, .guest_port = 22,
	};
	log_threshold = LOG_SILENT;
	assert_int_equal(slirp_backend_open(&be, &cfg), -1);
	log_threshold = saved;
	assert_null(be.ops);
	close(busy);
}

/* An Ethernet header from the guest, to libslirp (which reads no MAC). */
static void put_eth(uint8_t *f, uint16_t type)
{
	memset(f, 0x52, 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, type);
}

/* A bare SYN from the guest's port 40000 to dport, summed with pseudo. */
static void put_syn(uint8_t *tcp, uint16_t dport, uint32_t pseudo)
{
	memset(tcp, 0, 20);
	put16(tcp, 40000);
	put16(tcp + 2, dport);
	tcp[7] = 1;			/* seq 1 */
	tcp[12] = 5 << 4;		/* no options */
	tcp[13] = 0x02;			/* SYN */
	put16(tcp + 14, 65535);
	put16(tcp + 16, fold(sum16(pseudo + 6 + 20, tcp, 20)));
}

/*
 * The SYN a guest that writes its own frames sends to dst:dport over
 * IPv4, with every checksum right, as libslirp checks them.
 */
static size_t syn4(uint8_t *f, const char *dst, uint16_t dport)
{
	uint8_t *iph = f + 14;
	uint32_t src = ip("10.0.2.15"), d = ip(dst);

	put_eth(f, 0x0800);
	memset(iph, 0, 20);
	iph[0] = 0x45;
	put16(iph + 2, 40);
	iph[8] = 64;
	iph[9] = 6;
	memcpy(iph + 12, &src, 4);
	memcpy(iph + 16, &d, 4);
	put16(iph + 10, ip_checksum(iph, 20));
	put_syn(iph + 20, dport, sum16(0, iph + 12, 8));
	return 14 + 20 + 20;
}

/* The same over IPv6, from fec0::15. */
static size_t syn6(uint8_t *f, const char *dst, uint16_t dport)
{
	uint8_t *iph = f + 14;

	put_eth(f, 0x86dd);
	memset(iph, 0, 40);
	iph[0] = 0x60;
	put16(iph + 4, 20);
	iph[6] = 6;
	iph[7] = 64;
	assert_int_equal(inet_pton(AF_INET6, "fec0::15", iph + 8), 1);
	assert_int_equal(inet_pton(AF_INET6, dst, iph + 24), 1);
	put_syn(iph + 40, dport, sum16(0, iph + 8, 32));
	return 14 + 40 + 20;
}

/* A listener on the host's ::1 with a kernel-chosen port. */
static int listen_any6(uint16_t *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin6_port);
	return fd;
}

/* Did libslirp connect to the listener (within 1.5 s)? Takes it if so. */
static bool reached(int lfd)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&pfd, 1, 1500) <= 0)
		return false;
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	close(fd);
	return true;
}

/*
 * What the guest reaches of services on the host's loopback: through the
 * gateway alias 10.0.2.2, and addressed to the loopback itself (127.0.0.1,
 * 0.0.0.0, ::1, ::ffff:127.0.0.1), as a guest that writes its own frames
 * may. By default as QEMU: the alias does; host_loopback=off and
 * restrict=on: nothing does.
 */
static void check_loopback_reach(const struct net_config *cfg, bool want)
{
	static const char *const v4[] = { "10.0.2.2", "127.0.0.1", "0.0.0.0" };
	static const char *const v6[] = { "::1", "::ffff:127.0.0.1" };
	struct net_config c = *cfg;
	struct net_backend be;
	uint8_t f[128];
	uint16_t port, port6;
	int lfd = listen_any(&port), lfd6 = listen_any6(&port6);
	unsigned int i;

	open_user(&be, &c);
	for (i = 0; i < ARRAY_SIZE(v4); i++) {
		send_frame(&be, HDR, f, syn4(f, v4[i], port));
		if (reached(lfd) != want)
			fail_msg("%s:%u: %s", v4[i], port,
				 want ? "not reached" : "reached");
	}
	for (i = 0; i < ARRAY_SIZE(v6); i++) {
		/* a mapped address is IPv4's listener's */
		bool mapped = strchr(v6[i], '.') != NULL;

		send_frame(&be, HDR, f, syn6(f, v6[i], mapped ? port : port6));
		if (reached(mapped ? lfd : lfd6) != want)
			fail_msg("[%s]:%u: %s", v6[i], mapped ? port : port6,
				 want ? "not reached" : "reached");
	}
	net_backend_close(&be);
	close(lfd);
	close(lfd6);
}

static void test_loopback_by_default(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };

	check_loopback_reach(&cfg, true);
}

static void test_host_loopback_off(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER,
				  .host_loopback = NET_HOST_LOOPBACK_OFF };
	enum log_level saved = log_threshold;

	log_threshold = LOG_ERROR;	/* the drop is said once */
	check_loopback_reach(&cfg, false);
	log_threshold = saved;
}

/* restrict=on: nothing of the host, yet hostfwd still comes in. */
static void test_restrict_keeps_hostfwd(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER, .restricted = true };
	enum log_level saved = log_threshold;

	log_threshold = LOG_ERROR;
	check_loopback_reach(&cfg, false);
	log_threshold = saved;
	check_hostfwd(&cfg, NULL);
}

#define FILL_MAX	100000	/* far more than the socket buffers hold */

/*
 * Write requests until the backend stops taking them: both directions
 * full, the slirp thread waiting for the guest. Returns how many went in;
 * fails if the backend takes them all (it drops replies instead).
 */
static unsigned int fill(struct net_backend *be)
{
	struct pollfd pfd = { .fd = be->fds[0], .events = POLLOUT };
	uint8_t f[64], buf[HDR + 64] = { 0 };
	size_t len = arp_request(f, "10.0.2.2");
	unsigned int sent = 0;

	memcpy(buf + HDR, f, len);
	while (sent < FILL_MAX && poll(&pfd, 1, 300) > 0) {
		if (write(be->fds[0], buf, HDR + len) < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		sent++;
	}
	assert_true(sent < FILL_MAX);
	return sent;
}

/* A guest that takes no frames slows slirp down; nothing is dropped. */
static void test_backpressure_drops_nothing(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };
	struct net_backend be;
	unsigned int sent, got = 0;
	uint8_t buf[2048];
	ssize_t n;

	open_user(&be, &cfg);
	sent = fill(&be);
	/* More than one direction's buffer holds: the thread had to wait. */
	assert_true(sent > 100);
	while ((n = recv_frame(&be, buf, sizeof(buf), 500)) > 0) {
		check_arp_reply(buf, n, HDR, "10.0.2.2");
		got++;
	}
	assert_int_equal(got, sent);
	net_backend_close(&be);
}

/*
 * A guest that takes nothing for 2 s (SLIRP_ROOM_WAIT_MS) is not waited
 * for any more: what it sends is read again (its transmit queue must not
 * wait on its receive queue), what is for it is dropped, until it takes a
 * frame again.
 */
static void test_deaf_guest_keeps_sending(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };
	enum log_level saved = log_threshold;
	struct pollfd pfd;
	struct net_backend be;
	uint8_t f[64], buf[2048] = { 0 };
	size_t len = arp_request(f, "10.0.2.2");
	unsigned int i;
	ssize_t n;

	log_threshold = LOG_SILENT;	/* the thread says it is dropping */
	open_user(&be, &cfg);
	assert_true(fill(&be) > 100);
	memcpy(buf + HDR, f, len);
	pfd = (struct pollfd) { .fd = be.fds[0], .events = POLLOUT };
	for (i = 0; i < 1000; i++) {
		assert_int_equal(poll(&pfd, 1, 4000), 1);
		assert_int_equal(write(be.fds[0], buf, HDR + len), HDR + len);
	}
	/* What was queued for it is still there; then it is heard again. */
	while ((n = recv_frame(&be, buf, sizeof(buf), 300)) > 0)
		check_arp_reply(buf, n, HDR, "10.0.2.2");
	memcpy(buf + HDR, f, len);
	assert_int_equal(write(be.fds[0], buf, HDR + len), HDR + len);
	n = recv_frame(&be, buf, sizeof(buf), 2000);
	assert_true(n > 0);
	check_arp_reply(buf, n, HDR, "10.0.2.2");
	net_backend_close(&be);
	log_threshold = saved;
}

/* close() stops a thread that waits for room, and frees everything. */
static void test_close_while_waiting(void **state)
{
	struct net_config cfg = { .mode = NET_MODE_USER };
	struct net_backend be;

	open_user(&be, &cfg);
	assert_true(fill(&be) > 100);
	net_backend_close(&be);
	assert_null(be.ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_shape),
		cmocka_unit_test(test_arp_both_header_lengths),
		cmocka_unit_test(test_dhcp_then_hostfwd),
		cmocka_unit_test(test_hostfwd_port_busy),
		cmocka_unit_test(test_loopback_by_default),
		cmocka_unit_test(test_host_loopback_off),
		cmocka_unit_test(test_restrict_keeps_hostfwd),
		cmocka_unit_test(test_backpressure_drops_nothing),
		cmocka_unit_test(test_deaf_guest_keeps_sending),
		cmocka_unit_test(test_close_while_waiting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
