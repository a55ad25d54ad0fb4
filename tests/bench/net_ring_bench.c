// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-net throughput without guest cost, next to the tap's own limit.
 * The host's KVM emulates every guest instruction, so a guest driver caps
 * any VMM far below what its network device could do. As in blk_ring_bench,
 * a host thread here plays the driver (ring_driver.c) on shared rings in
 * fake guest memory; the device is lkvm's own virtio-net on a tap, served
 * by its I/O thread.
 *
 * The tap's limit is measured the same way without lkvm: one thread writes
 * the same frames into a tap fd (TX), or reads them from it (RX).
 *
 * Every run happens in a network namespace of its own (unshare), which ends
 * with the process; the tap is 10.0.0.1/24 there, IPv6 and forwarding off.
 * TX frames (guest to tap) go to the tap's MAC and to 10.0.0.3, a peer that
 * is not local: the stack takes each frame up to IP routing and drops it
 * there (forwarding is off), after the tap accepted it. RX frames are
 * injected into the tap from an AF_PACKET socket bound to it (a second
 * thread, at most a window of frames ahead of the reader, so nothing is
 * dropped for lack of room), and read by lkvm or by the reader thread.
 *
 * Sizes: 64-byte UDP/IPv4 frames, and 64 KiB TCP/IPv4 segments (65214
 * bytes, 45 MSS of 1448) carried whole through the tap with TSO: the
 * driver negotiates CSUM, HOST_TSO4, GUEST_CSUM and GUEST_TSO4 in every
 * mode, and the tap reader sets the same offloads.
 *
 *   net_ring_bench lkvm|tap tx64|tx64k|rx64|rx64k SECONDS [POLL]
 *   net_ring_bench inject rx64|rx64k TAPNAME SECONDS FRAMES
 *
 * POLL is the device's --poll (default off). The first form prints one
 * line:
 *   side mode frames/s io-thread-us/frame process-us/frame frames
 *   tap-packets tap-dropped errors kicks/frame interrupts/frame
 * io-thread: lkvm's net I/O thread, or the tap writer/reader thread;
 * process: every thread (the driver and the injector included);
 * tap-packets/dropped: the tap's own counters for the direction measured.
 *
 * "inject" feeds an existing tap in the caller's namespace (the guest-kit
 * bench): it waits until something attaches to the tap, then keeps at most
 * a window of frames unread (by the tap's tx counter) until FRAMES were
 * read or SECONDS passed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <linux/sockios.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "lkvm/virtio/net.h"
#include "ring_driver.h"

#define TAP_NAME	"lkvmnb0"
#define MEM_SIZE	(64ULL << 20)
#define QSIZE		RING_QSIZE
#define FRAME_OFF	(2 * RING_AREA)	/* TX: [hdr|frame], one for all slots */
#define RXBUF_OFF	0x100000	/* RX: QSIZE buffers */
#define HDR_LEN		12		/* virtio_net_hdr_mrg_rxbuf */
#define MSS		1448
#define BIG_SEGS	45
#define SMALL_FRAME	64
#define MAX_FRAME	(14 + 20 + 20 + MSS * BIG_SEGS)
#define INJECT_BATCH	32
#define WAIT_MS		100		/* every wait is bounded */

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

struct mode {
	const char *name;
	bool rx;
	bool big;
	unsigned int rxbuf;	/* receive buffer size (mergeable, one desc) */
	unsigned int window;	/* RX: frames injected but not yet read */
};

static const struct mode modes[] = {
	{ "tx64", false, false, 0, 0 },
	{ "tx64k", false, true, 0, 0 },
	/* Linux posts ~1.5 KiB mergeable buffers for small frames... */
	{ "rx64", true, false, 2048, 128 },
	/* ...and up to a page each once big frames come: 16 per frame here. */
	{ "rx64k", true, true, 4096, 8 },
};

/* The injector and whoever reads the frames share these. */
struct flow {
	const struct mode *m;
	int pkt_fd;
	uint8_t frame[10 + MAX_FRAME];	/* virtio_net_hdr (10 bytes) + frame */
	size_t frame_len;		/* without the header */
	_Atomic uint64_t injected;
	_Atomic uint64_t consumed;
	_Atomic bool stop;
	double cpu_s;			/* the injector's own CPU time */
};

struct bench {
	const struct mode *m;
	struct ring_driver rd;		/* on the queue measured */
	size_t frame_len;		/* the expected frame, without header */
};

/* ---- the namespace and the tap ---- */

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/*
 * A namespace of our own: whatever the tap carries stays in it, and it
 * goes away with the process. No IPv6 (its autoconfiguration would send
 * frames of its own) and no forwarding (a new namespace may inherit it).
 */
static int netns_enter(void)
{
	if (unshare(CLONE_NEWNET)) {
		perror("unshare(CLONE_NEWNET) (needs root)");
		return -1;
	}
	write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	if (write_file("/proc/sys/net/ipv4/ip_forward", "0")) {
		perror("net.ipv4.ip_forward");
		return -1;
	}
	return 0;
}

static int if_ioctl(unsigned long req, struct ifreq *ifr)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ret;

	if (s < 0)
		return -1;
	ret = ioctl(s, req, ifr);
	close(s);
	return ret;
}

/* 10.0.0.1/24, up; returns the tap's MAC and ifindex. */
static int tap_configure(const char *name, uint8_t mac[6], int *ifindex)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0x0a000001);
	if (if_ioctl(SIOCSIFADDR, &ifr))
		goto fail;
	sin->sin_addr.s_addr = htonl(0xffffff00);
	if (if_ioctl(SIOCSIFNETMASK, &ifr) || if_ioctl(SIOCGIFFLAGS, &ifr))
		goto fail;
	ifr.ifr_flags |= IFF_UP;
	if (if_ioctl(SIOCSIFFLAGS, &ifr) || if_ioctl(SIOCGIFHWADDR, &ifr))
		goto fail;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (if_ioctl(SIOCGIFINDEX, &ifr))
		goto fail;
	*ifindex = ifr.ifr_ifindex;
	return 0;
fail:
	perror(name);
	return -1;
}

/*
 * Something reads the tap, and (for 64 KiB frames) it has TSO on: until
 * the guest's driver negotiated GUEST_TSO4 the kernel would cut the frames
 * up, or drop them.
 */
static bool tap_ready(const char *name, bool tso)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GTSO };
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (if_ioctl(SIOCGIFFLAGS, &ifr) || !(ifr.ifr_flags & IFF_RUNNING))
		return false;
	ifr.ifr_data = (void *)&ev;
	return !tso || (!if_ioctl(SIOCETHTOOL, &ifr) && ev.data);
}

/* The tap's counters from /proc/net/dev (this namespace's). */
struct tap_stats {
	uint64_t rx_packets, rx_dropped, tx_packets, tx_dropped;
};

static int tap_read_stats(const char *name, struct tap_stats *st)
{
	FILE *f = fopen("/proc/net/dev", "re");
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *p = line;
		unsigned long long v[16];

		if (!colon)
			continue;
		*colon = 0;
		while (*p == ' ')
			p++;
		if (strcmp(p, name))
			continue;
		if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			   &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
			   &v[15]) == 16) {
			*st = (struct tap_stats) {
				.rx_packets = v[1], .rx_dropped = v[3],
				.tx_packets = v[9], .tx_dropped = v[11],
			};
			ret = 0;
		}
		break;
	}
	fclose(f);
	return ret;
}

/* A tap fd set up as lkvm's would be once a driver negotiated TSO. */
static int tap_open_like_lkvm(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	int len = HDR_LEN;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) ||
	    ioctl(fd, TUNSETVNETHDRSZ, &len) ||
	    ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4)) {
		perror("tap");
		return -1;
	}
	return fd;
}

/* ---- frames ---- */

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

/*
 * One frame and its virtio-net header (hdr_len bytes, 10 or 12): a 64-byte
 * UDP datagram, or a 64 KiB TCP segment for the tap to take whole (GSO
 * TCPV4, partial checksum: the TCP checksum field holds the pseudo-header
 * sum, as a TSO sender leaves it). Returns the frame's length.
 */
static size_t build_frame(uint8_t *out, unsigned int hdr_len, bool big,
			  const uint8_t dst[6], const uint8_t src[6],
			  uint32_t saddr, uint32_t daddr)
{
	struct virtio_net_hdr *h = (void *)out;
	uint8_t *f = out + hdr_len, *ip = f + 14, *l4 = ip + 20;
	size_t len = big ? MAX_FRAME : SMALL_FRAME;
	size_t l4_len = len - 14 - 20;
	uint32_t sum;

	memset(out, 0, hdr_len + len);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, ETH_P_IP);
	ip[0] = 0x45;
	put16(ip + 2, len - 14);
	ip[6] = 0x40;			/* DF */
	ip[8] = 64;
	ip[9] = big ? IPPROTO_TCP : IPPROTO_UDP;
	put32(ip + 12, saddr);
	put32(ip + 16, daddr);
	put16(ip + 10, ~csum_fold(csum_add(0, ip, 20)));
	put16(l4, 40000);
	put16(l4 + 2, 5001);
	memset(l4 + (big ? 20 : 8), 0x5a, l4_len - (big ? 20 : 8));
	if (!big) {
		put16(l4 + 4, l4_len);	/* UDP checksum 0: none */
		return len;
	}
	put32(l4 + 4, 1);		/* seq */
	put32(l4 + 8, 1);		/* ack */
	l4[12] = 5 << 4;
	l4[13] = 0x18;			/* PSH, ACK */
	put16(l4 + 14, 65535);
	sum = csum_add(0, ip + 12, 8) + IPPROTO_TCP + l4_len;
	put16(l4 + 16, csum_fold(sum));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h->hdr_len = 14 + 20 + 20;
	h->gso_size = MSS;
	h->csum_start = 14 + 20;
	h->csum_offset = 16;
	return len;
}

/* ---- the injector (RX modes) ---- */

static int injector_open(struct flow *fl, int ifindex, const uint8_t tap_mac[6])
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET, .sll_ifindex = ifindex,
	};
	int one = 1, sndbuf = 8 << 20;

	/* Protocol 0: a sender only, never handed any frame of the tap. */
	fl->pkt_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fl->pkt_fd < 0 ||
	    setsockopt(fl->pkt_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(fl->pkt_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one,
		       sizeof(one)) ||
	    bind(fl->pkt_fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("AF_PACKET socket on the tap");
		return -1;
	}
	setsockopt(fl->pkt_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	fl->frame_len = build_frame(fl->frame, 10, fl->m->big, guest_mac, tap_mac,
				    0x0a000001, 0x0a000002);
	return 0;
}

static int inject_batch(struct flow *fl, unsigned int n)
{
	struct iovec iov = { fl->frame, 10 + fl->frame_len };
	struct mmsghdr msgs[INJECT_BATCH];
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		msgs[i] = (struct mmsghdr) {
			.msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 },
		};
	do {
		ret = sendmmsg(fl->pkt_fd, msgs, n, 0);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0 && errno == ENOBUFS)
		return 0;	/* the tap dropped one: the caller sends again */
	if (ret < 0)
		perror("sendmmsg");
	return ret;
}

/*
 * Called by the reader after it counted frames. The injector polls this
 * count rather than being woken, so that the reader (lkvm's driver, or the
 * tap reader) pays the same for flow control either way: one atomic add.
 */
static void flow_consumed(struct flow *fl, unsigned int n)
{
	atomic_fetch_add(&fl->consumed, n);
}

static void *injector_thread(void *opaque)
{
	struct flow *fl = opaque;
	unsigned int w = fl->m->window, idle = 0;
	struct timespec nap = { 0, 20000 };
	struct tap_stats st0, st;

	tap_read_stats(TAP_NAME, &st0);
	while (!atomic_load(&fl->stop)) {
		uint64_t out = atomic_load(&fl->injected) -
			       atomic_load(&fl->consumed);
		int n;

		if (out >= w) {
			nanosleep(&nap, NULL);
			/*
			 * Nothing read for ~100 ms: frames the tap dropped
			 * would hold the window forever; forget them.
			 */
			if (++idle < 5000)
				continue;
			idle = 0;
			if (!tap_read_stats(TAP_NAME, &st) &&
			    st.tx_dropped > st0.tx_dropped) {
				atomic_fetch_sub(&fl->injected,
						 st.tx_dropped - st0.tx_dropped);
				st0 = st;
			}
			continue;
		}
		idle = 0;
		n = inject_batch(fl, MIN((uint64_t)INJECT_BATCH, w - out));
		if (n < 0)
			break;
		atomic_fetch_add(&fl->injected, n);
	}
	fl->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

/* ---- lkvm's device, driven from this thread (ring_driver.c) ---- */

/*
 * Negotiate what Linux's driver would take from lkvm (offloads included,
 * in every mode, so the tap is set up the same way each time), program
 * both queues, DRIVER_OK.
 */
static int bench_start(struct bench *b)
{
	struct virtio_device *vdev = b->rd.vdev;
	uint32_t want0 = 1u << VIRTIO_NET_F_CSUM | 1u << VIRTIO_NET_F_GUEST_CSUM |
			 1u << VIRTIO_NET_F_MAC | 1u << VIRTIO_NET_F_GUEST_TSO4 |
			 1u << VIRTIO_NET_F_HOST_TSO4 | 1u << VIRTIO_NET_F_MRG_RXBUF |
			 1u << VIRTIO_NET_F_STATUS | 1u << VIRTIO_RING_F_EVENT_IDX;
	uint32_t got0 = virtio_get_host_features(vdev, 0) & want0;

	if (got0 != want0 || !(virtio_get_host_features(vdev, 1) & 1)) {
		fprintf(stderr, "features %#x offered, %#x wanted\n",
			virtio_get_host_features(vdev, 0), want0);
		return -1;
	}
	return ring_driver_start(&b->rd, want0, 2);
}

struct result {
	uint64_t frames, errors;
	uint64_t kicks, interrupts;	/* lkvm: the driver's, the device's */
	double secs, io_cpu_s, cpu_s;
	struct tap_stats tap;		/* read before the tap goes away */
};

/* TX: every slot is one descriptor holding [header|frame], all the same. */
static void lkvm_tx(struct bench *b, double seconds, struct result *r)
{
	struct ring_driver *rd = &b->rd;
	uint32_t len = HDR_LEN + b->frame_len;
	double t0 = now_s(CLOCK_MONOTONIC);
	unsigned int i;

	for (i = 0; i < QSIZE; i++)
		rd->desc[i] = (struct vring_desc) {
			.addr = ring_gpa(FRAME_OFF), .len = len,
		};
	for (i = 0; i < QSIZE; i++)
		ring_driver_add(rd, i);
	ring_driver_publish(rd, 0);
	do {
		uint16_t used = __atomic_load_n(&rd->used->idx,
						__ATOMIC_ACQUIRE);
		uint16_t old = rd->avail_idx;

		for (; rd->last_used != used; rd->last_used++) {
			uint16_t id = rd->used->ring[rd->last_used % QSIZE].id;

			ring_driver_add(rd, id);
			r->frames++;
		}
		if (rd->avail_idx != old)
			ring_driver_publish(rd, old);
		ring_driver_wait(rd);
	} while (now_s(CLOCK_MONOTONIC) - t0 < seconds);
	r->secs = now_s(CLOCK_MONOTONIC) - t0;
}

/*
 * RX: QSIZE one-descriptor buffers, re-posted as soon as they come back.
 * A frame takes num_buffers of them (its first header says how many); its
 * total length must be the frame's, whole, TSO and all.
 */
static void lkvm_rx(struct bench *b, struct flow *fl, double seconds,
		    struct result *r)
{
	struct ring_driver *rd = &b->rd;
	uint32_t want = HDR_LEN + b->frame_len, got = 0;
	unsigned int i, rest = 0;
	double t0 = now_s(CLOCK_MONOTONIC);

	for (i = 0; i < QSIZE; i++) {
		rd->desc[i] = (struct vring_desc) {
			.addr = ring_gpa(RXBUF_OFF + (size_t)i * b->m->rxbuf),
			.len = b->m->rxbuf, .flags = VRING_DESC_F_WRITE,
		};
		ring_driver_add(rd, i);
	}
	ring_driver_publish(rd, 0);
	do {
		uint16_t used = __atomic_load_n(&rd->used->idx,
						__ATOMIC_ACQUIRE);
		uint16_t old = rd->avail_idx;
		unsigned int frames = 0;

		for (; rd->last_used != used; rd->last_used++) {
			struct vring_used_elem *e =
				&rd->used->ring[rd->last_used % QSIZE];

			if (!rest) {
				struct virtio_net_hdr_mrg_rxbuf *h = (void *)
					(rd->mem + RXBUF_OFF +
					 (size_t)e->id * b->m->rxbuf);

				rest = h->num_buffers;
				got = 0;
				if (!rest) {
					r->errors++;
					rest = 1;
				}
			}
			got += e->len;
			if (!--rest) {
				frames++;
				r->errors += got != want;
			}
			ring_driver_add(rd, e->id);
		}
		if (frames) {
			r->frames += frames;
			flow_consumed(fl, frames);
		}
		if (rd->avail_idx != old)
			ring_driver_publish(rd, old);
		ring_driver_wait(rd);
	} while (now_s(CLOCK_MONOTONIC) - t0 < seconds);
	r->secs = now_s(CLOCK_MONOTONIC) - t0;
}

/*
 * The I/O thread's CPU time so far, from /proc: the first thread whose name
 * starts with `name` (one queue pair, one I/O thread).
 */
static double thread_cpu_s(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	double cpu = -1;

	while (d && (de = readdir(d))) {
		char path[300], comm[32] = "";
		unsigned long long ns;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strncmp(comm, name, strlen(name)))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat",
			 de->d_name);
		f = fopen(path, "re");
		if (f && fscanf(f, "%llu", &ns) == 1)
			cpu = ns / 1e9;
		if (f)
			fclose(f);
		break;
	}
	if (d)
		closedir(d);
	return cpu;
}

static int start_injector(struct flow *fl, pthread_t *th, int ifindex,
			  const uint8_t tap_mac[6])
{
	if (injector_open(fl, ifindex, tap_mac) ||
	    pthread_create(th, NULL, injector_thread, fl)) {
		fprintf(stderr, "cannot start the injector\n");
		return -1;
	}
	return 0;
}

static void stop_injector(struct flow *fl, pthread_t th)
{
	atomic_store(&fl->stop, true);
	pthread_join(th, NULL);
}

static int run_lkvm(const struct mode *m, double seconds, struct flow *fl,
		    const struct virtio_poll_config *poll, struct result *r)
{
	struct vm_config cfg = { .nr_cpus = 1 };
	struct virtio_net_options opts = {
		.net = { .mode = NET_MODE_TAP, .tapif = TAP_NAME, .queues = 1 },
		.use_ioeventfd = true,
		.poll = *poll,
	};
	struct bench b = { .m = m };
	struct net_backend be;
	struct virtio_net *net;
	struct vm vm;
	uint8_t tap_mac[6];
	pthread_t inj;
	double t0 = now_s(CLOCK_MONOTONIC), io0, cpu0;
	int ifindex;

	memcpy(opts.net.mac, guest_mac, 6);
	/* No KVM and no vCPU: the device only needs the memory map. */
	if (vm_init(&vm, &cfg)) {
		fprintf(stderr, "cannot create a VM for the device\n");
		return -1;
	}
	if (ring_driver_init(&b.rd, &vm, MEM_SIZE, WAIT_MS))
		return -1;
	if (net_backend_open(&be, &opts.net, 1))
		return -1;
	opts.backend = &be;
	net = virtio_net_create(&vm, &opts);
	if (!net || tap_configure(TAP_NAME, tap_mac, &ifindex))
		return -1;
	ring_driver_attach(&b.rd, virtio_net_device(net));
	/* TX frames: to the tap's MAC, for a peer the stack will not route. */
	b.frame_len = build_frame(b.rd.mem + FRAME_OFF, HDR_LEN, m->big, tap_mac,
				  guest_mac, 0x0a000002, 0x0a000003);
	ring_driver_use(&b.rd, m->rx ? 0 : 1);
	if (bench_start(&b))
		return -1;
	if (m->rx) {
		fl->m = m;
		if (start_injector(fl, &inj, ifindex, tap_mac))
			return -1;
		b.frame_len = fl->frame_len;
	}
	/* The thread names itself once it runs: give it a moment. */
	for (io0 = -1; io0 < 0 && now_s(CLOCK_MONOTONIC) < t0 + 1; usleep(1000))
		io0 = thread_cpu_s("net-io");
	if (io0 < 0) {
		fprintf(stderr, "no net-io thread\n");
		return -1;
	}
	cpu0 = process_cpu_s();
	if (m->rx)
		lkvm_rx(&b, fl, seconds, r);
	else
		lkvm_tx(&b, seconds, r);
	r->io_cpu_s = thread_cpu_s("net-io") - io0;
	r->cpu_s = process_cpu_s() - cpu0;
	if (m->rx)
		stop_injector(fl, inj);
	tap_read_stats(TAP_NAME, &r->tap);
	virtio_net_destroy(net);
	r->kicks = b.rd.kicks;
	r->interrupts = b.rd.q->interrupts;
	return 0;
}

static int run_tap(const struct mode *m, double seconds, struct flow *fl,
		   struct result *r)
{
	uint8_t tap_mac[6], *buf = malloc(HDR_LEN + MAX_FRAME + 64);
	size_t want;
	pthread_t inj;
	double t0, io0, cpu0;
	int fd, ifindex;

	fd = tap_open_like_lkvm(TAP_NAME);
	if (!buf || fd < 0 || tap_configure(TAP_NAME, tap_mac, &ifindex))
		return -1;
	if (m->rx) {
		fl->m = m;
		if (start_injector(fl, &inj, ifindex, tap_mac))
			return -1;
		want = HDR_LEN + fl->frame_len;
	} else {
		want = HDR_LEN + build_frame(buf, HDR_LEN, m->big, tap_mac,
					     guest_mac, 0x0a000002, 0x0a000003);
	}
	t0 = now_s(CLOCK_MONOTONIC);
	io0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	cpu0 = process_cpu_s();
	do {
		unsigned int i, frames = 0;

		for (i = 0; i < 64; i++) {
			ssize_t n = m->rx ? read(fd, buf, HDR_LEN + MAX_FRAME + 64)
					  : write(fd, buf, want);

			if (n >= 0) {
				frames++;
				r->errors += (size_t)n != want;
				continue;
			}
			if (errno == EAGAIN && m->rx) {
				struct pollfd p = { .fd = fd, .events = POLLIN };

				/* the injector waits for these to send more */
				flow_consumed(fl, frames);
				r->frames += frames;
				frames = 0;
				poll(&p, 1, WAIT_MS);
			} else if (errno != EINTR && errno != EAGAIN) {
				perror("tap");
				r->errors++;
				break;
			}
		}
		r->frames += frames;
		if (m->rx && frames)
			flow_consumed(fl, frames);
	} while (now_s(CLOCK_MONOTONIC) - t0 < seconds);
	r->secs = now_s(CLOCK_MONOTONIC) - t0;
	r->io_cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - io0;
	r->cpu_s = process_cpu_s() - cpu0;
	if (m->rx)
		stop_injector(fl, inj);
	tap_read_stats(TAP_NAME, &r->tap);
	close(fd);
	free(buf);
	return 0;
}

/* For the guest-kit bench: feed a tap lkvm reads, by its tx counter. */
static int run_inject(const struct mode *m, const char *tap, double seconds,
		      uint64_t frames)
{
	struct flow *fl = calloc(1, sizeof(*fl));
	struct tap_stats st0, st;
	struct ifreq ifr = { 0 };
	double t0 = now_s(CLOCK_MONOTONIC);
	uint64_t injected = 0, done = 0;

	if (!fl)
		return 1;
	fl->m = m;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap);
	while (!tap_ready(tap, m->big)) {
		if (now_s(CLOCK_MONOTONIC) - t0 > seconds) {
			fprintf(stderr, "%s: nothing attached, or no TSO\n", tap);
			return 1;
		}
		usleep(1000);
	}
	if (if_ioctl(SIOCGIFHWADDR, &ifr) || if_ioctl(SIOCGIFINDEX, &ifr) ||
	    injector_open(fl, ifr.ifr_ifindex, (uint8_t *)ifr.ifr_hwaddr.sa_data) ||
	    tap_read_stats(tap, &st0))
		return 1;
	printf("injecting\n");
	fflush(stdout);
	while (done < frames && now_s(CLOCK_MONOTONIC) - t0 < seconds) {
		uint64_t out = injected - done, n;
		int sent;

		if (out >= m->window || injected >= frames) {
			usleep(200);
		} else {
			n = MIN(MIN((uint64_t)INJECT_BATCH, m->window - out),
				frames - injected);
			sent = inject_batch(fl, n);
			if (sent < 0)
				return 1;
			injected += sent;
		}
		if (tap_read_stats(tap, &st))
			return 1;
		done = st.tx_packets - st0.tx_packets;
		/*
		 * A frame the tap dropped will never be read: not outstanding.
		 * (The tap may count a frame it cut up as several drops.)
		 */
		injected -= MIN(st.tx_dropped - st0.tx_dropped, injected - done);
		st0.tx_dropped = st.tx_dropped;
	}
	printf("inject: %llu frames read\n", (unsigned long long)done);
	return 0;
}

static const struct mode *find_mode(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static struct flow fl;
	const struct mode *m = argc > 2 ? find_mode(argv[2]) : NULL;
	struct result r = { 0 };
	double seconds;
	int ret;

	if (m && argc == 6 && !strcmp(argv[1], "inject") && m->rx)
		return run_inject(m, argv[3], atof(argv[4]),
				  strtoull(argv[5], NULL, 0));
	struct virtio_poll_config poll;

	virtio_poll_config_default(&poll);
	poll.mode = VIRTIO_POLL_OFF;
	if (!m || argc < 4 || argc > 5 ||
	    (argc == 5 && virtio_poll_parse(argv[4], &poll)) ||
	    (strcmp(argv[1], "lkvm") && strcmp(argv[1], "tap"))) {
		fprintf(stderr,
			"usage: %s lkvm|tap tx64|tx64k|rx64|rx64k SECONDS [POLL]\n"
			"       %s inject rx64|rx64k TAPNAME SECONDS FRAMES\n",
			argv[0], argv[0]);
		return 2;
	}
	seconds = atof(argv[3]);
	if (seconds <= 0 || seconds > 600 || netns_enter())
		return 2;
	ret = !strcmp(argv[1], "lkvm") ? run_lkvm(m, seconds, &fl, &poll, &r)
				       : run_tap(m, seconds, &fl, &r);
	if (ret || !r.frames) {
		fprintf(stderr, "%s %s: no frames\n", argv[1], m->name);
		return 1;
	}
	/*
	 * The tap's counters since the namespace began: what it took from
	 * the writer (rx_*), or handed to the reader (tx_*).
	 */
	printf("%s %s %.0f %.3f %.3f %llu %llu %llu %llu %.4f %.4f\n", argv[1],
	       m->name, r.frames / r.secs, r.io_cpu_s / r.frames * 1e6,
	       r.cpu_s / r.frames * 1e6, (unsigned long long)r.frames,
	       (unsigned long long)(m->rx ? r.tap.tx_packets : r.tap.rx_packets),
	       (unsigned long long)(m->rx ? r.tap.tx_dropped : r.tap.rx_dropped),
	       (unsigned long long)r.errors, (double)r.kicks / r.frames,
	       (double)r.interrupts / r.frames);
	return r.errors ? 1 : 0;
}
