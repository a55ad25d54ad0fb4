// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for virtio-blk (make fuzz-blk): the real device
 * (virtio/blk.c over disk/raw.c) on a fake VM, its queue served from the
 * fuzzer's thread (no ioeventfd; its I/O thread is a pool's, never
 * started), over one of three small memfd images: plain, `direct`
 * (O_DIRECT, so unaligned requests take the bounce path) and read-only.
 *
 * The input describes requests of every type, with headers, data and
 * status laid out in fuzzed ways (split, short, missing, read-only where
 * writable belongs, zero-length, aliased, beyond seg_max or size_max, in
 * indirect tables, outside RAM). A reference model of the device, written
 * from the virtio spec and lkvm's advertised limits (not from blk.c),
 * serves the same chains in the same order on a copy of guest memory and
 * of the image. Afterwards guest memory must equal the model's byte for
 * byte (status bytes, data read, nothing written elsewhere), the used
 * ring must hold what the model used (ids, lengths), the image must hold
 * what the model wrote, and the device must need a reset exactly when
 * the model met a chain the ring rules refuse.
 */
#include <endian.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/virtio_blk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/disk.h"
#include "lkvm/guest_mem.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "../unit/fake_vm.h"
#include "fuzz_common.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

/* Region 1: rings and ordinary buffers. Region 2: room for one huge one. */
#define RAM_GPA		0x10000ULL
#define RAM_SIZE	0x10000ULL
#define RAM2_GPA	0x100000ULL
#define RAM2_SIZE	((1ULL << 20) + 0x1000)
#define NOWHERE_GPA	0x40000000ULL

#define SECTOR		512ULL
#define IMG_SECTORS	4096ULL			/* 2 MiB: a size_max read fits */
#define IMG_SIZE	(IMG_SECTORS * SECTOR + 100)	/* tail not visible */
#define SEG_MAX		254			/* what the device advertises */
#define SIZE_MAX_BYTES	(1U << 20)
#define DISCARD_SEG_MAX	32
#define QSIZE_MAX	256
#define MAX_BUFS	(2 * QSIZE_MAX)
#define MAX_CHAINS	QSIZE_MAX

enum { DEV_PLAIN, DEV_DIRECT, DEV_RO, NR_DEVS };

struct dev {
	struct virtio_blk *blk;
	struct virtio_device *vdev;
	int img_fd;			/* our own view of the image */
	char path[32];
	bool readonly;
	char serial[DISK_SERIAL_LEN];
};

static struct {
	struct fake_vm fake;
	struct iothread_pool pool;
	struct dev devs[NR_DEVS];
	uint8_t *ram, *ram2;		/* guest memory, exactly sized */
	uint8_t *exp, *exp2;		/* what the model says it must hold */
	uint8_t *pattern;		/* every image's contents at the start */
	uint8_t *mirror;		/* the model's image */
} g;

/* ---- set-up, once ---- */

static uint8_t pattern_byte(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 9) * 13) | 1;	/* never 0 */
}

static void make_dev(struct dev *d, bool direct, bool readonly)
{
	/* format=raw: the model lets the guest write anything to sector 0 */
	struct disk_params dc = { .direct = direct, .readonly = readonly,
				  .aio = DISK_AIO_SYNC,
				  .format = DISK_FORMAT_RAW };
	/*
	 * Synchronous requests: the model expects every chain used, in
	 * order, by the time the notify returns. The io_uring path takes
	 * the same checks (blk_rw_map()) before it submits anything.
	 */
	struct virtio_blk_options opts = {
		.nr_queues = 1, .pool = &g.pool,
	};
	char buf[DISK_SERIAL_LEN + 1];
	struct disk disk;
	struct stat st;

	d->img_fd = memfd_create("fuzz-blk", MFD_CLOEXEC);
	CHECK(d->img_fd >= 0);
	CHECK(pwrite(d->img_fd, g.pattern, IMG_SIZE, 0) == (ssize_t)IMG_SIZE);
	snprintf(d->path, sizeof(d->path), "/proc/self/fd/%d", d->img_fd);
	dc.path = d->path;
	CHECK(!disk_open(&disk, &dc));
	opts.disk = &disk;
	d->blk = virtio_blk_create(&g.fake.vm, &opts);
	CHECK(d->blk);
	d->vdev = virtio_blk_device(d->blk);
	virtio_device_attach(d->vdev, &fz_transport);
	d->readonly = readonly;
	/* The serial lkvm documents: "lkvm-" and the image's identity. */
	CHECK(!fstat(d->img_fd, &st));
	snprintf(buf, sizeof(buf), "lkvm-%08llx%07llx",
		 (unsigned long long)st.st_dev & 0xffffffff,
		 (unsigned long long)st.st_ino & 0xfffffff);
	memcpy(d->serial, buf, DISK_SERIAL_LEN);
}

static void setup_once(void)
{
	uint64_t i;

	if (g.ram)
		return;
	log_threshold = LOG_SILENT;
	g.ram = aligned_alloc(4096, RAM_SIZE);
	g.ram2 = aligned_alloc(4096, RAM2_SIZE);
	g.exp = malloc(RAM_SIZE);
	g.exp2 = malloc(RAM2_SIZE);
	g.pattern = malloc(IMG_SIZE);
	g.mirror = malloc(IMG_SIZE);
	CHECK(g.ram && g.ram2 && g.exp && g.exp2 && g.pattern && g.mirror);
	for (i = 0; i < IMG_SIZE; i++)
		g.pattern[i] = pattern_byte(i);
	memcpy(g.mirror, g.pattern, IMG_SIZE);
	memset(g.ram2, 0x5a, RAM2_SIZE);
	memset(g.exp2, 0x5a, RAM2_SIZE);
	CHECK(!fake_vm_init(&g.fake, 0, 1));
	CHECK(!guest_mem_add(&g.fake.vm.mem, RAM_GPA, RAM_SIZE, g.ram));
	CHECK(!guest_mem_add(&g.fake.vm.mem, RAM2_GPA, RAM2_SIZE, g.ram2));
	/* A pool that is never started: nothing but us serves the queues. */
	CHECK(!iothread_pool_create(&g.pool, &g.fake.vm, 1));
	make_dev(&g.devs[DEV_PLAIN], false, false);
	make_dev(&g.devs[DEV_DIRECT], true, false);
	make_dev(&g.devs[DEV_RO], false, true);
	CHECK(pwrite(g.devs[0].img_fd, g.pattern, SECTOR, 0) == SECTOR);
}

/* ---- the driver's side: chains the input describes ---- */

struct mbuf {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

struct mchain {
	uint16_t head;
	bool indirect;
	unsigned int nr;
	struct mbuf *b;
};

struct gen {
	struct input *in;
	uint16_t qsize;
	bool indirect_ok;
	uint64_t desc, avail, used;	/* the rings */
	uint64_t data, data_end;	/* bump allocator in region 1 */
	bool ram2_taken;
	uint16_t next_desc;
	unsigned int nr_chains, nr_bufs;
	struct mchain chains[MAX_CHAINS];
	struct mbuf bufs[MAX_BUFS * 2];
	uint64_t last_status;		/* for aliasing an earlier status */
};

static uint8_t *ram_ptr(uint64_t gpa, uint64_t len)
{
	return guest_mem_ptr(&g.fake.vm.mem, gpa, len);
}

/* Where the model keeps the byte the guest has at gpa. */
static uint8_t *exp_ptr(uint64_t gpa)
{
	if (gpa >= RAM2_GPA)
		return g.exp2 + (gpa - RAM2_GPA);
	return g.exp + (gpa - RAM_GPA);
}

static void put16(uint64_t gpa, uint16_t v)
{
	v = htole16(v);
	memcpy(ram_ptr(gpa, 2), &v, 2);
}

/* Room for len bytes in region 1, 512-aligned or deliberately not. */
static bool alloc(struct gen *gn, uint32_t len, bool aligned, uint64_t *gpa)
{
	uint64_t a = aligned ? ALIGN_UP(gn->data, SECTOR) : gn->data + 3;

	if (a + len > gn->data_end || a + len < a)
		return false;
	*gpa = a;
	gn->data = a + len;
	return true;
}

static bool add_buf(struct gen *gn, struct mchain *c, uint32_t len,
		    bool write, bool aligned)
{
	struct mbuf *b;

	if (gn->nr_bufs == ARRAY_SIZE(gn->bufs) || c->nr == MAX_BUFS)
		return false;
	b = &gn->bufs[gn->nr_bufs];
	b->len = len;
	b->write = write;
	if (len > RAM_SIZE / 2) {
		/* a huge one: region 2 holds one per input */
		if (gn->ram2_taken || len > RAM2_SIZE)
			return false;
		gn->ram2_taken = true;
		b->gpa = RAM2_GPA + (aligned ? 0 : 1);
	} else if (!alloc(gn, len, aligned, &b->gpa)) {
		return false;
	}
	gn->nr_bufs++;
	c->nr++;
	return true;
}

/* A data segment's length, in the shapes that matter to the device. */
static uint32_t seg_len(struct input *in)
{
	uint8_t m = take8(in);

	if (m < 0x80)
		return SECTOR * (1 + m % 8);
	if (m < 0xc0)
		return m & 0x3f;
	if (m < 0xf0)
		return take16(in) % 4096;
	if (m < 0xfc)
		return 0;
	if (m < 0xfe)
		return SIZE_MAX_BYTES;
	return SIZE_MAX_BYTES + SECTOR;
}

static uint64_t pick_sector(struct input *in)
{
	uint8_t m = take8(in);

	if (m < 0xc0)
		return take16(in) % (IMG_SECTORS + 8);
	if (m < 0xf0)
		return IMG_SECTORS - take8(in) % 16;
	return take64(in);
}

static uint32_t pick_type(struct input *in)
{
	static const uint32_t types[] = {
		VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_FLUSH,
		VIRTIO_BLK_T_GET_ID, VIRTIO_BLK_T_DISCARD,
		VIRTIO_BLK_T_WRITE_ZEROES, VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT,
	};
	uint8_t m = take8(in);

	if (m >= 0xf0)
		return take32(in);		/* unknown, most likely */
	if (m >= 0xe0)
		return m & 0xf;			/* SCSI, FLUSH_OUT, GET_LIFETIME.. */
	return types[m % ARRAY_SIZE(types)];
}

/* Fill a readable buffer: bytes from a seed, so the input stays short. */
static void fill(const struct mbuf *b, uint8_t seed)
{
	uint8_t *p = ram_ptr(b->gpa, b->len);
	uint32_t i, x = seed * 2654435761u + 1;

	for (i = 0; i < b->len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = x >> 24;
	}
}

/* The header in 1-2 readable buffers, or cut short. */
static void gen_header(struct gen *gn, struct mchain *c)
{
	struct input *in = gn->in;
	struct virtio_blk_outhdr h = {
		.type = htole32(pick_type(in)),
		.sector = htole64(pick_sector(in)),
	};
	uint8_t how = take8(in) % 8, split = 1 + take8(in) % 15;
	const uint8_t *src = (const uint8_t *)&h;
	unsigned int first = c->nr;

	if (how == 7) {		/* too short */
		if (add_buf(gn, c, split, false, true))
			memcpy(ram_ptr(gn->bufs[gn->nr_bufs - 1].gpa, split), src,
			       split);
		return;
	}
	if (how >= 5) {		/* split in two */
		if (!add_buf(gn, c, split, false, true) ||
		    !add_buf(gn, c, sizeof(h) - split, false, how == 5))
			return;
		memcpy(ram_ptr(c->b[first].gpa, split), src, split);
		memcpy(ram_ptr(c->b[first + 1].gpa, sizeof(h) - split),
		       src + split, sizeof(h) - split);
		return;
	}
	if (add_buf(gn, c, sizeof(h), false, true))
		memcpy(ram_ptr(c->b[first].gpa, sizeof(h)), &h, sizeof(h));
}

/* DISCARD / WRITE_ZEROES segments, in one buffer or two. */
static void gen_discard_segs(struct gen *gn, struct mchain *c)
{
	struct input *in = gn->in;
	uint8_t m = take8(in);
	unsigned int i, nr = m >= 0xf8 ? DISCARD_SEG_MAX + (m & 1) : m % 4;
	uint32_t len = nr * 16 + (take8(in) == 0xff ? 5 : 0);
	struct virtio_blk_discard_write_zeroes s;
	uint8_t *p, seg[DISCARD_SEG_MAX + 2][16] = { { 0 } };
	uint32_t split = len ? take8(in) % len : 0;

	for (i = 0; i < nr; i++) {
		uint8_t f = take8(in);

		s.sector = htole64(pick_sector(in));
		s.num_sectors = htole32(f >= 0xf8 ? take32(in) :
					take8(in) % 64);
		s.flags = htole32(f % 4 == 3 ? take32(in) : f % 3 == 2 ? 1 : 0);
		memcpy(seg[i], &s, sizeof(s));
	}
	p = (uint8_t *)seg;
	if (split) {
		if (!add_buf(gn, c, split, false, false))
			return;
		memcpy(ram_ptr(c->b[c->nr - 1].gpa, split), p, split);
	}
	if (len - split && add_buf(gn, c, len - split, false, true))
		memcpy(ram_ptr(c->b[c->nr - 1].gpa, len - split), p + split,
		       len - split);
}

/* Now and then something the driver should not do. */
static void corrupt(struct gen *gn, struct mchain *c)
{
	struct input *in = gn->in;
	struct mbuf *b, *other;
	uint8_t how;

	if (!c->nr || take8(in) < 0xf0)
		return;
	how = take8(in);
	b = &c->b[how % c->nr];
	switch ((how >> 4) % 6) {
	case 0:			/* readable where writable belongs, or back */
		b->write = !b->write;
		break;
	case 1:			/* not RAM */
		b->gpa = NOWHERE_GPA;
		break;
	case 2:			/* across the end of RAM */
		if (b->len > 1)
			b->gpa = RAM_GPA + RAM_SIZE - b->len / 2;
		break;
	/*
	 * Aliases stay inside what they alias: one that ran on over later
	 * allocations could have the device rewrite a later chain's indirect
	 * table, which the model takes as fixed.
	 */
	case 3:			/* the same memory as another buffer */
		other = &c->b[take8(in) % c->nr];
		if (b->len <= other->len)
			b->gpa = other->gpa;
		break;
	case 4:			/* over an earlier request's status */
		if (gn->last_status && b->len <= 1)
			b->gpa = gn->last_status;
		break;
	default:		/* empty */
		b->len = 0;
		break;
	}
}

static void gen_chain(struct gen *gn, struct mchain *c)
{
	struct input *in = gn->in;
	uint8_t shape = take8(in);
	unsigned int i, nr_out = take8(in) % 4, nr_in = take8(in) % 5;
	uint8_t st = take8(in) % 8;

	c->b = &gn->bufs[gn->nr_bufs];
	c->nr = 0;
	if (shape >= 0xf8) {	/* many segments: beyond seg_max */
		nr_in = (shape & 1) ? SEG_MAX + take8(in) % 4 : 0;
		nr_out = (shape & 1) ? 0 : SEG_MAX + take8(in) % 4;
	}
	gen_header(gn, c);
	if (shape % 4 == 3)
		gen_discard_segs(gn, c);
	for (i = 0; i < nr_out; i++) {
		uint32_t len = shape >= 0xf8 ? SECTOR : seg_len(in);

		if (!add_buf(gn, c, len, false, take8(in) % 4))
			break;
		fill(&c->b[c->nr - 1], take8(in));
	}
	for (i = 0; i < nr_in; i++) {
		uint32_t len = shape >= 0xf8 ? SECTOR : seg_len(in);

		if (!add_buf(gn, c, len, true, take8(in) % 4))
			break;
	}
	/* the status: its own byte, the last data byte, absent or empty */
	if (st < 5)
		add_buf(gn, c, 1, true, false);
	else if (st == 6)
		add_buf(gn, c, 0, true, false);
	if (c->nr && c->b[c->nr - 1].write && c->b[c->nr - 1].len)
		gn->last_status = c->b[c->nr - 1].gpa + c->b[c->nr - 1].len - 1;
	corrupt(gn, c);
	c->indirect = (shape & 4) || c->nr > gn->qsize;
}

static void set_desc(uint8_t *where, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	struct vring_desc d = {
		.addr = htole64(addr), .len = htole32(len),
		.flags = htole16(flags), .next = htole16(next),
	};

	memcpy(where, &d, sizeof(d));
}

/* Descriptors for c: in the table, or in an indirect table. */
static bool place_chain(struct gen *gn, struct mchain *c)
{
	unsigned int i, nr = c->nr;
	uint64_t table;

	if (!nr || gn->next_desc == gn->qsize)
		return false;
	c->head = gn->next_desc;
	if (!c->indirect && gn->next_desc + nr > gn->qsize)
		c->indirect = true;
	if (c->indirect) {
		if (!alloc(gn, 16 * nr, true, &table))
			return false;
		set_desc(ram_ptr(gn->desc + 16ULL * c->head, 16), table,
			 16 * c->nr, VRING_DESC_F_INDIRECT, 0);
		gn->next_desc++;
	} else {
		table = gn->desc + 16ULL * c->head;
		gn->next_desc += nr;
	}
	for (i = 0; i < c->nr; i++) {
		const struct mbuf *b = &c->b[i];
		uint16_t flags = b->write ? VRING_DESC_F_WRITE : 0;
		uint16_t next = c->indirect ? i + 1 : c->head + i + 1;

		if (i + 1 < c->nr)
			flags |= VRING_DESC_F_NEXT;
		set_desc(ram_ptr(table + 16ULL * i, 16), b->gpa, b->len, flags,
			 next);
	}
	return true;
}

/* ---- the reference model: what a correct device does with a chain ---- */

struct model {
	struct dev *dev;
	bool broken;			/* met a chain the ring refuses */
	unsigned int served;
	uint32_t used_len[MAX_CHAINS];
	uint8_t dirty[IMG_SECTORS / 8];	/* image sectors to check, restore */
};

/* The chain as the ring rules see it; false if they refuse it. */
static bool ring_accepts(const struct gen *gn, const struct mchain *c)
{
	bool seen_write = false;
	unsigned int i;

	if (c->indirect && (!gn->indirect_ok || c->nr > gn->qsize))
		return false;
	for (i = 0; i < c->nr; i++) {
		const struct mbuf *b = &c->b[i];

		if (!b->write && seen_write)
			return false;
		if (!ram_ptr(b->gpa, b->len))
			return false;
		seen_write |= b->write;
	}
	return true;
}

/* The chain's readable or writable buffers as one byte stream. */
struct stream {
	const struct mbuf *b[MAX_BUFS];
	unsigned int nr;
	uint64_t len;
};

static void split_chain(const struct mchain *c, struct stream *out,
			struct stream *in)
{
	unsigned int i;

	out->nr = in->nr = 0;
	out->len = in->len = 0;
	for (i = 0; i < c->nr; i++) {
		struct stream *s = c->b[i].write ? in : out;

		s->b[s->nr++] = &c->b[i];
		s->len += c->b[i].len;
	}
}

/* Copy [off, off + len) of a stream out of, or into, the model's RAM. */
static void stream_copy(const struct stream *s, uint64_t off, uint8_t *buf,
			uint64_t len, bool into)
{
	unsigned int i;

	for (i = 0; i < s->nr && len; i++) {
		uint64_t n, blen = s->b[i]->len;

		if (off >= blen) {
			off -= blen;
			continue;
		}
		n = MIN(len, blen - off);
		if (into)
			memmove(exp_ptr(s->b[i]->gpa) + off, buf, n);
		else
			memmove(buf, exp_ptr(s->b[i]->gpa) + off, n);
		buf += n;
		len -= n;
		off = 0;
	}
}

/* Within seg_max segments of at most size_max bytes (empty ones aside)? */
static bool segments_ok(const struct stream *s, uint64_t off, uint64_t len)
{
	unsigned int i, nr = 0;

	for (i = 0; i < s->nr && len; i++) {
		uint64_t n, blen = s->b[i]->len;

		if (off >= blen) {
			off -= blen;
			continue;
		}
		n = MIN(len, blen - off);
		if (n > SIZE_MAX_BYTES || ++nr > SEG_MAX)
			return false;
		len -= n;
		off = 0;
	}
	return true;
}

static bool range_ok(uint64_t sector, uint64_t bytes)
{
	return !(bytes % SECTOR) && sector <= IMG_SECTORS &&
	       bytes / SECTOR <= IMG_SECTORS - sector;
}

static void mark_dirty(struct model *m, uint64_t sector, uint64_t n)
{
	for (; n--; sector++)
		m->dirty[sector / 8] |= 1 << (sector % 8);
}

static uint8_t model_rw(struct model *m, const struct stream *out,
			const struct stream *in, uint64_t sector, bool write)
{
	uint64_t len = write ? out->len - 16 : in->len - 1;
	uint8_t *buf;

	if (write && m->dev->readonly)
		return VIRTIO_BLK_S_IOERR;
	if (write ? in->len != 1 : out->len != 16)
		return VIRTIO_BLK_S_IOERR;	/* data going the wrong way */
	if (!range_ok(sector, len) ||
	    !segments_ok(write ? out : in, write ? 16 : 0, len))
		return VIRTIO_BLK_S_IOERR;
	buf = g.mirror + sector * SECTOR;
	if (write) {
		stream_copy(out, 16, buf, len, false);
		mark_dirty(m, sector, len / SECTOR);
	} else {
		stream_copy(in, 0, buf, len, true);
	}
	return VIRTIO_BLK_S_OK;
}

static uint8_t model_discard(struct model *m, const struct stream *out,
			     bool zeroes)
{
	uint64_t payload = out->len - 16, i;

	if (m->dev->readonly)
		return VIRTIO_BLK_S_IOERR;
	if (!payload || payload % 16 || payload / 16 > DISCARD_SEG_MAX)
		return VIRTIO_BLK_S_UNSUPP;
	for (i = 0; i < payload / 16; i++) {
		struct virtio_blk_discard_write_zeroes s;
		uint64_t sector, n;
		uint32_t flags;

		stream_copy(out, 16 + 16 * i, (uint8_t *)&s, 16, false);
		sector = le64toh(s.sector);
		n = le32toh(s.num_sectors);
		flags = le32toh(s.flags);
		if (!range_ok(sector, n * SECTOR) || flags & ~1u ||
		    (!zeroes && flags))
			return VIRTIO_BLK_S_UNSUPP;
		/* An empty segment is nothing to do. */
		if (!n)
			continue;
		memset(g.mirror + sector * SECTOR, 0, n * SECTOR);
		mark_dirty(m, sector, n);
	}
	return VIRTIO_BLK_S_OK;
}

static void model_serve(struct model *m, const struct gen *gn,
			unsigned int from, unsigned int to)
{
	static struct stream out, in;
	unsigned int k;

	for (k = from; k < to && !m->broken; k++) {
		const struct mchain *c = &gn->chains[k];
		struct virtio_blk_outhdr h;
		uint32_t written = 1;
		uint8_t status;

		if (!ring_accepts(gn, c)) {
			m->broken = true;
			return;
		}
		split_chain(c, &out, &in);
		m->used_len[m->served++] = 0;
		if (!in.nr || !in.b[in.nr - 1]->len)
			continue;	/* nowhere for a status: used, untouched */
		stream_copy(&out, 0, (uint8_t *)&h, sizeof(h), false);
		if (out.len < sizeof(h))
			status = VIRTIO_BLK_S_IOERR;
		else if (le32toh(h.type) == VIRTIO_BLK_T_IN) {
			status = model_rw(m, &out, &in, le64toh(h.sector), false);
			if (status == VIRTIO_BLK_S_OK)
				written = in.len;
		} else if (le32toh(h.type) == VIRTIO_BLK_T_OUT) {
			status = model_rw(m, &out, &in, le64toh(h.sector), true);
		} else if (le32toh(h.type) == VIRTIO_BLK_T_FLUSH) {
			status = VIRTIO_BLK_S_OK;
		} else if (le32toh(h.type) == VIRTIO_BLK_T_GET_ID) {
			uint64_t n = MIN(in.len - 1, (uint64_t)DISK_SERIAL_LEN);

			stream_copy(&in, 0, (uint8_t *)m->dev->serial, n, true);
			written += n;
			status = VIRTIO_BLK_S_OK;
		} else if (le32toh(h.type) == VIRTIO_BLK_T_DISCARD ||
			   le32toh(h.type) == VIRTIO_BLK_T_WRITE_ZEROES) {
			status = model_discard(m, &out, le32toh(h.type) ==
					       VIRTIO_BLK_T_WRITE_ZEROES);
		} else {
			status = VIRTIO_BLK_S_UNSUPP;
		}
		stream_copy(&in, in.len - 1, &status, 1, true);
		m->used_len[m->served - 1] = written;
	}
}

/* ---- one input ---- */

static struct gen gn;
static struct model model;

static void bring_up(struct virtio_device *vdev, uint32_t features0)
{
	uint8_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

	virtio_set_status(vdev, 0);
	virtio_set_status(vdev, s);
	virtio_set_guest_features(vdev, 0,
				  features0 & virtio_get_host_features(vdev, 0));
	virtio_set_guest_features(vdev, 1, 1);	/* VERSION_1 */
	virtio_set_status(vdev, s | VIRTIO_CONFIG_S_FEATURES_OK);
	CHECK(virtio_get_status(vdev) & VIRTIO_CONFIG_S_FEATURES_OK);
}

static void layout(struct gen *gn, uint16_t qsize)
{
	memset(gn, 0, offsetof(struct gen, chains));
	gn->qsize = qsize;
	gn->desc = RAM_GPA;
	gn->avail = gn->desc + 16ULL * qsize;
	gn->used = ALIGN_UP(gn->avail + 6 + 2ULL * qsize, 4);
	gn->data = ALIGN_UP(gn->used + 6 + 8ULL * qsize, 16);
	gn->data_end = RAM_GPA + RAM_SIZE;
}

static void generate(struct gen *gn)
{
	while (gn->in->n > 4 && gn->nr_chains < gn->qsize) {
		struct mchain *c = &gn->chains[gn->nr_chains];

		gen_chain(gn, c);
		if (!place_chain(gn, c))
			break;
		put16(gn->avail + 4 + 2ULL * gn->nr_chains, c->head);
		gn->nr_chains++;
	}
}

static void check_used(const struct gen *gn, const struct model *m)
{
	const uint8_t *u = ram_ptr(gn->used, 4 + 8ULL * gn->qsize);
	unsigned int i;
	uint16_t idx;

	memcpy(&idx, u + 2, 2);
	CHECK(le16toh(idx) == m->served);
	for (i = 0; i < m->served; i++) {
		uint32_t e[2];

		memcpy(e, u + 4 + 8 * i, 8);
		CHECK(le32toh(e[0]) == gn->chains[i].head);
		CHECK(le32toh(e[1]) == m->used_len[i]);
	}
	/* the used ring is the device's: take it as it is, then compare */
	memcpy(exp_ptr(gn->used), u, 6 + 8ULL * gn->qsize);
}

/* The image holds what the model wrote; then back to the pattern. */
static void check_image(struct model *m)
{
	static uint8_t buf[SECTOR];
	uint64_t s;

	for (s = 0; s < IMG_SECTORS; s++) {
		uint64_t off = s * SECTOR;

		if (!(m->dirty[s / 8] & (1 << (s % 8))))
			continue;
		CHECK(pread(m->dev->img_fd, buf, SECTOR, off) == SECTOR);
		CHECK(!memcmp(buf, g.mirror + off, SECTOR));
		CHECK(pwrite(m->dev->img_fd, g.pattern + off, SECTOR, off) ==
		      SECTOR);
		memcpy(g.mirror + off, g.pattern + off, SECTOR);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .n = size };
	uint8_t mode = take8(&in), split = take8(&in), flags = take8(&in);
	uint32_t features0 = take32(&in);
	struct dev *d;
	struct virtio_queue *q;
	unsigned int k1;

	setup_once();
	d = &g.devs[mode % NR_DEVS];
	q = &d->vdev->queues[0];
	bring_up(d->vdev, features0);
	layout(&gn, 1U << (1 + (mode >> 2) % 8));
	gn.in = &in;
	gn.indirect_ok = virtio_has_feature(d->vdev,
					    VIRTIO_RING_F_INDIRECT_DESC);
	memset(g.ram, 0, RAM_SIZE);
	generate(&gn);
	k1 = MIN((unsigned int)split, gn.nr_chains);
	put16(gn.avail, flags & VRING_AVAIL_F_NO_INTERRUPT);
	put16(gn.avail + 2, k1);
	put16(gn.avail + 4 + 2ULL * gn.qsize, take8(&in));	/* used_event */
	memcpy(g.exp, g.ram, RAM_SIZE);
	if (gn.ram2_taken)
		memcpy(g.exp2, g.ram2, RAM2_SIZE);
	memset(&model, 0, sizeof(model));
	model.dev = d;

	/* The driver's queue, then DRIVER_OK: the device serves batch 1. */
	pthread_mutex_lock(&d->vdev->lock);
	q->size = gn.qsize;
	q->desc_gpa = gn.desc;
	q->avail_gpa = gn.avail;
	q->used_gpa = gn.used;
	virtio_queue_set_enabled(d->vdev, q, true);
	pthread_mutex_unlock(&d->vdev->lock);
	model_serve(&model, &gn, 0, k1);
	virtio_set_status(d->vdev, VIRTIO_CONFIG_S_ACKNOWLEDGE |
			  VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK |
			  VIRTIO_CONFIG_S_DRIVER_OK);
	/* The rest as a second batch, with a kick. */
	if (k1 < gn.nr_chains) {
		put16(gn.avail + 2, gn.nr_chains);
		memcpy(exp_ptr(gn.avail + 2), ram_ptr(gn.avail + 2, 2), 2);
		model_serve(&model, &gn, k1, gn.nr_chains);
		virtio_queue_notify(d->vdev, 0);
	}

	CHECK(!!(virtio_get_status(d->vdev) & VIRTIO_CONFIG_S_NEEDS_RESET) ==
	      model.broken);
	check_used(&gn, &model);
	CHECK(!memcmp(g.ram, g.exp, RAM_SIZE));
	CHECK(!memcmp(g.ram2, g.exp2, RAM2_SIZE));
	if (gn.ram2_taken) {
		memset(g.ram2, 0x5a, RAM2_SIZE);
		memset(g.exp2, 0x5a, RAM2_SIZE);
	}
	check_image(&model);
	virtio_set_status(d->vdev, 0);
	return 0;
}
