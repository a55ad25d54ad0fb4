// SPDX-License-Identifier: GPL-2.0
/*
 * A bulk TCP transfer with a known payload, for the nested virtio-net tests
 * (tests/nested/net-job.sh in L1, net-check.sh in the L2 guest). busybox nc
 * moves 1 KiB per read()/write() and, with md5sum behind it, manages under
 * 1 MB/s under nested TCG; this does 1 MiB writes and hashes as it reads.
 *
 *   net-blast send ADDR|listen PORT MIB BLOCK
 *   net-blast recv ADDR|listen PORT
 *
 * "listen" accepts one connection on PORT (any address), otherwise it
 * connects to ADDR:PORT (retrying for 10 s while refused). send writes MIB
 * MiB, each an 8-digit chunk number ("%08d") and the 1 MiB - 8 bytes of the
 * file BLOCK, shuts its side down and waits for the peer to close. recv
 * reads to EOF and then closes. Both print one line:
 *
 *   bytes=N secs=S              (send)
 *   bytes=N md5=HEX secs=S      (recv)
 *
 * and exit 0, or print "net-blast: ..." on stderr and exit 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MIB		(1u << 20)
#define HDR		8		/* "%08d" before each block */
#define RECV_BUF	(256u << 10)

/* MD5 (RFC 1321). */
struct md5 {
	uint32_t h[4];
	uint64_t len;
	uint8_t buf[64];
};

static const uint32_t md5_k[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
	0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
	0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
	0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
	0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
	0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
	0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
	0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static const uint8_t md5_r[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static void md5_init(struct md5 *m)
{
	m->h[0] = 0x67452301;
	m->h[1] = 0xefcdab89;
	m->h[2] = 0x98badcfe;
	m->h[3] = 0x10325476;
	m->len = 0;
}

static void md5_block(struct md5 *m, const uint8_t *p)
{
	uint32_t w[16], a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];
	int i;

	for (i = 0; i < 16; i++)
		w[i] = p[4 * i] | p[4 * i + 1] << 8 | p[4 * i + 2] << 16 |
		       (uint32_t)p[4 * i + 3] << 24;
	for (i = 0; i < 64; i++) {
		uint32_t f, t;
		int g;

		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = a + f + md5_k[i] + w[g];
		a = d;
		d = c;
		c = b;
		b += t << md5_r[i] | t >> (32 - md5_r[i]);
	}
	m->h[0] += a;
	m->h[1] += b;
	m->h[2] += c;
	m->h[3] += d;
}

static void md5_update(struct md5 *m, const uint8_t *p, size_t n)
{
	size_t used = m->len % 64;

	m->len += n;
	if (used) {
		size_t take = 64 - used < n ? 64 - used : n;

		memcpy(m->buf + used, p, take);
		p += take;
		n -= take;
		if (used + take < 64)
			return;
		md5_block(m, m->buf);
	}
	for (; n >= 64; p += 64, n -= 64)
		md5_block(m, p);
	memcpy(m->buf, p, n);
}

static void md5_hex(struct md5 *m, char out[33])
{
	static const uint8_t pad[64] = { 0x80 };
	uint64_t bits = m->len * 8;
	uint8_t len[8];
	int i;

	for (i = 0; i < 8; i++)
		len[i] = bits >> (8 * i);
	md5_update(m, pad, 1 + (119 - m->len % 64) % 64);
	md5_update(m, len, 8);
	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", (m->h[i / 4] >> (8 * (i % 4))) & 0xff);
}

static void die(const char *what)
{
	fprintf(stderr, "net-blast: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_conn(const char *addr, const char *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd, one = 1, tries;

	sin.sin_port = htons(atoi(port));
	if (!strcmp(addr, "listen")) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);

		if (lfd < 0)
			die("socket");
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(lfd, 1))
			die("bind/listen");
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		close(lfd);
		return fd;
	}
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		errno = EINVAL;
		die(addr);
	}
	for (tries = 0;; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		if (errno != ECONNREFUSED || tries >= 100)
			die("connect");
		close(fd);
		usleep(100000);
	}
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		n -= w;
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[MIB];
	uint64_t bytes = 0;
	struct md5 m;
	char hex[33];
	double t0;
	int fd;

	if (argc < 4 || (!strcmp(argv[1], "send") ? argc != 6 :
			 strcmp(argv[1], "recv") || argc != 4)) {
		fprintf(stderr, "usage: net-blast send ADDR|listen PORT MIB BLOCK\n"
				"       net-blast recv ADDR|listen PORT\n");
		return 2;
	}
	md5_init(&m);
	if (!strcmp(argv[1], "send")) {
		long mib = atol(argv[4]), c;
		int bfd = open(argv[5], O_RDONLY);

		if (mib < 0 || mib > 99999999) {
			fprintf(stderr, "net-blast: MIB out of range\n");
			return 2;
		}
		if (bfd < 0)
			die(argv[5]);
		if (read(bfd, buf + HDR, MIB - HDR) != MIB - HDR) {
			errno = EINVAL;
			die(argv[5]);
		}
		close(bfd);
		fd = open_conn(argv[2], argv[3]);
		t0 = now();
		for (c = 0; c < mib; c++) {
			char hdr[24];

			snprintf(hdr, sizeof(hdr), "%08ld", c);
			memcpy(buf, hdr, HDR);
			write_all(fd, buf, MIB);
			bytes += MIB;
		}
		if (shutdown(fd, SHUT_WR))
			die("shutdown");
		/* The peer closes when it has read everything. */
		while (read(fd, buf, MIB) > 0)
			;
		close(fd);
		printf("bytes=%llu secs=%.2f\n", (unsigned long long)bytes,
		       now() - t0);
		return 0;
	}
	{
		fd = open_conn(argv[2], argv[3]);
		t0 = now();
		for (;;) {
			ssize_t r = read(fd, buf, RECV_BUF);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("read");
			if (!r)
				break;
			md5_update(&m, buf, r);
			bytes += r;
		}
	}
	close(fd);
	md5_hex(&m, hex);
	printf("bytes=%llu md5=%s secs=%.2f\n", (unsigned long long)bytes, hex,
	       now() - t0);
	return 0;
}
