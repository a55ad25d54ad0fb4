// SPDX-License-Identifier: GPL-2.0
/*
 * p9.elf: lkvm's virtio-9p (--9p DIR,TAG[,ro]) driven from inside the
 * guest with hand-built 9P2000.L messages, on the transport= the command
 * line names (default modern virtio-pci). Two shares of the same host
 * directory are expected, found by the tag in their config space: kit9p
 * (read-write) and kitro (read-only). tests/kit/test_virtio_9p.py lays
 * the directory out and checks the host side afterwards.
 *
 * What is checked, one function each: version and attach; reading a file
 * (request and reply split over several buffers); ".." never leaves the
 * root; bad names refused; symlinks never followed (walked through,
 * opened, created over, written through); readdir; creating, writing,
 * renaming, removing; fifos, device nodes and set-user-ID bits; fid
 * bookkeeping; xattrs; every change refused with EROFS on the read-only
 * share; and malformed messages, each answered with an error (or
 * NEEDS_RESET, after which the device is reset and set up again) with
 * the device still working afterwards, and a request answered with an
 * error having changed nothing.
 *
 *   xattr       the host set user.kit on hello.txt and on the outside
 *               secret: check xattrs too
 *   race[=N]    only the race: N times (300) walk to swap/secret.txt and
 *               read it while the host swaps share/swap (a directory)
 *               with a symlink to a directory outside the share; the
 *               guest must only ever read "inside".
 *
 * It ends with "9p: TAG: N requests, M resets, E errors" per share, for
 * the test to compare with --stats.
 */
#include <linux/virtio_pci.h>

#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define VIRTIO_9P_MOUNT_TAG	0	/* feature bit: the tag in config */
#define MAX_SHARES		4
#define MSIZE			8192	/* what we ask for */
#define BUF_SIZE		(MSIZE + 64)
#define TIMEOUT_US		2000000
#define HDR			7	/* size[4] type[1] tag[2] */
#define NOTAG			0xffff
#define NOFID			0xffffffffu

/* Message types (9P2000.L). */
enum {
	RLERROR = 7, TSTATFS = 8, TLOPEN = 12, TLCREATE = 14, TSYMLINK = 16,
	TMKNOD = 18, TRENAME = 20, TREADLINK = 22, TGETATTR = 24,
	TSETATTR = 26, TXATTRWALK = 30, TXATTRCREATE = 32, TREADDIR = 40,
	TFSYNC = 50, TLOCK = 52, TGETLOCK = 54, TLINK = 70, TMKDIR = 72,
	TRENAMEAT = 74, TUNLINKAT = 76, TVERSION = 100, TAUTH = 102,
	TATTACH = 104, TFLUSH = 108, TWALK = 110, TREAD = 116, TWRITE = 118,
	TCLUNK = 120, TREMOVE = 122,
};

#define QTDIR		0x80
#define QTSYMLINK	0x02
#define QTFILE		0x00

/* Linux errnos and open flags, as 9P2000.L carries them. */
#define EBADF		9
#define EEXIST		17
#define EINVAL		22
#define EROFS		30
#define ELOOP		40
#define EMSGSIZE	90
#define ENOENT		2
#define O_RDONLY	0
#define O_WRONLY	1
#define O_RDWR		2
#define O_CREAT		0100
#define O_EXCL		0200
#define O_TRUNC		01000
#define O_DIRECTORY	0200000
#define S_IFMT		0170000
#define S_IFIFO		0010000
#define S_IFCHR		0020000
#define S_IFDIR		0040000
#define S_IFREG		0100000
#define S_IFLNK		0120000
#define DT_DIR		4
#define DT_REG		8
#define DT_LNK		10
#define AT_REMOVEDIR	0x200

#define GETATTR_BASIC	0x7ffull
#define SETATTR_MODE	0x1
#define SETATTR_SIZE	0x8
#define SETATTR_MTIME	0x20
#define SETATTR_MTIME_SET 0x100
#define LOCK_WRLCK	1
#define LOCK_UNLCK	2

static const char hello[] = "hello from host\n";
static const char secret_inside[] = "inside";

struct qid {
	uint8_t type;
	uint32_t version;
	uint64_t path;
};

struct share {
	char tag[32];			/* from its config space */
	struct vio_dev dev;
	struct vio_queue vq;
	uint8_t *tx, *rx, *flat;	/* request, reply, gathered reply */
	uint16_t next_tag;
	uint32_t msize;
	struct qid root;		/* fid 0 after attach */
	unsigned int requests, resets, errors;	/* for --stats */
	bool broken;			/* NEEDS_RESET seen: set up again */
};

/* A T-message being built in s->tx. */
struct msg {
	struct share *s;
	uint32_t len;
	uint16_t tag;
};

/* An R-message being read: a cursor that stops at the used length. */
struct reply {
	const uint8_t *p;
	uint32_t len, off;
	uint8_t type;			/* 0: no reply came */
	uint32_t ecode;			/* Rlerror's errno */
	bool overrun;
	bool needs_reset;
};

static struct share shares[MAX_SHARES];
static unsigned int nr_shares;

/* ---- finding the devices ---- */

static unsigned int find_devices(struct vio_dev *devs)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);
	struct vio_dev all[VIO_MMIO_SLOTS];
	unsigned int i, n = 0, found;

	if (t == VIO_MMIO) {
		found = vio_find(all, VIO_MMIO_SLOTS);
		for (i = 0; i < found && n < MAX_SHARES; i++)
			if (all[i].device_id == VIRTIO_ID_9P)
				devs[n++] = all[i];
		return n;
	}
	/* vio_pci_find() takes the first virtio function: walk them all */
	for (i = 0; n < MAX_SHARES &&
		    vio_pci_find_from(&devs[n], t == VIO_PCI_LEGACY, i);) {
		i = devs[n].slot + 1;
		if (devs[n].device_id == VIRTIO_ID_9P)
			n++;
	}
	return n;
}

/* le16 tag_len, then the tag, not NUL-terminated (virtio 1.2, 5.3.4). */
static bool read_tag(struct share *s)
{
	unsigned int len = vio_config_read8(&s->dev, 0) |
			   vio_config_read8(&s->dev, 1) << 8;

	if (!kit_check(len && len < sizeof(s->tag),
		       "9p slot %u: tag_len %u", s->dev.slot, len))
		return false;
	for (unsigned int i = 0; i < len; i++)
		s->tag[i] = vio_config_read8(&s->dev, 2 + i);
	s->tag[len] = '\0';
	return kit_check(strlen(s->tag) == len, "9p slot %u: a NUL in the tag",
			 s->dev.slot);
}

static uint32_t queue_max(struct vio_dev *d)
{
	if (d->transport == VIO_MMIO) {
		vio_write(d, VIRTIO_MMIO_QUEUE_SEL, 0);
		return vio_read(d, VIRTIO_MMIO_QUEUE_NUM_MAX);
	}
	return vio_pci_queue_max(d, 0);
}

/* Negotiation and the one queue; the 9P session is set up separately. */
static bool device_up(struct share *s)
{
	if (s->vq.desc)
		vio_queue_free(&s->vq);
	if (vio_negotiate(&s->dev, 1ull << VIRTIO_9P_MOUNT_TAG))
		return false;
	/* before setup: modern virtio-pci reads back the size we set */
	kit_check(queue_max(&s->dev) == 128, "9p slot %u: queue size %u",
		  s->dev.slot, queue_max(&s->dev));
	if (!kit_check(s->dev.offered & (1ull << VIRTIO_9P_MOUNT_TAG),
		       "9p slot %u: no MOUNT_TAG feature", s->dev.slot) ||
	    !kit_check(!vio_queue_setup(&s->vq, &s->dev, 0, 32),
		       "9p slot %u: queue setup", s->dev.slot))
		return false;
	vio_driver_ok(&s->dev);
	s->broken = false;
	return true;
}

/* ---- messages ---- */

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void le32(uint8_t *p, uint32_t v)
{
	le16(p, v);
	le16(p + 2, v >> 16);
}

static struct msg tbegin(struct share *s, uint8_t type)
{
	struct msg m = { .s = s, .len = HDR };

	/* Tversion goes with NOTAG; no other request may use it */
	m.tag = type == TVERSION ? NOTAG : s->next_tag++ % NOTAG;
	s->tx[4] = type;
	le16(s->tx + 5, m.tag);
	return m;
}

static uint8_t *room(struct msg *m, uint32_t n)
{
	uint8_t *p = m->s->tx + m->len;

	if (m->len + n > BUF_SIZE) {
		kit_fail("9p: a request of over %u bytes", BUF_SIZE);
		kit_finish();
	}
	m->len += n;
	return p;
}

static void put8(struct msg *m, uint8_t v)
{
	*room(m, 1) = v;
}

static void put16(struct msg *m, uint16_t v)
{
	le16(room(m, 2), v);
}

static void put32(struct msg *m, uint32_t v)
{
	le32(room(m, 4), v);
}

static void put64(struct msg *m, uint64_t v)
{
	le32(room(m, 4), v);
	le32(room(m, 4), v >> 32);
}

static void putn(struct msg *m, const void *p, uint32_t n)
{
	memcpy(room(m, n), p, n);
}

static void putstr(struct msg *m, const char *str)
{
	put16(m, strlen(str));
	putn(m, str, strlen(str));
}

static uint64_t rd(struct reply *r, unsigned int n)
{
	uint64_t v = 0;

	if (r->off + n > r->len) {
		r->overrun = true;
		r->off = r->len;
		return 0;
	}
	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	return v;
}

static uint8_t get8(struct reply *r)
{
	return rd(r, 1);
}

static uint16_t get16(struct reply *r)
{
	return rd(r, 2);
}

static uint32_t get32(struct reply *r)
{
	return rd(r, 4);
}

static uint64_t get64(struct reply *r)
{
	return rd(r, 8);
}

static struct qid get_qid(struct reply *r)
{
	struct qid q;

	q.type = get8(r);
	q.version = get32(r);
	q.path = get64(r);
	return q;
}

/* A string into buf (cut to fit, NUL-terminated); its wire length. */
static uint16_t get_str(struct reply *r, char *buf, size_t size)
{
	uint16_t len = get16(r);

	if (r->off + len > r->len) {
		r->overrun = true;
		len = 0;
	}
	for (size_t i = 0; i < size; i++)
		buf[i] = i < len && i + 1 < size ? r->p[r->off + i] : '\0';
	r->off += len;
	return len;
}

/* The reply was read to its last byte, and not past it. */
static bool parsed(struct reply *r, const char *what)
{
	return kit_check(!r->overrun && r->off == r->len,
			 "%s: a reply of %u bytes (type %u) parsed as %u%s",
			 what, r->len, r->type, r->off,
			 r->overrun ? ", past its end" : "");
}

/* ---- the transport ---- */

/* One chain; false when no used buffer came (NEEDS_RESET or timeout). */
static bool submit(struct share *s, const struct vio_buf *b, unsigned int n,
		   uint32_t *len, bool *needs_reset)
{
	enum vio_wait w;
	uint32_t id;

	*needs_reset = false;
	if (!kit_check(vio_add(&s->vq, b, n, false) >= 0, "%s: ring full",
		       s->tag))
		return false;
	vio_kick(&s->vq);
	s->requests++;
	w = vio_wait_used(&s->vq, TIMEOUT_US, true, &id, len);
	if (w == VIO_WAIT_NEEDS_RESET) {
		s->broken = *needs_reset = true;
		s->resets++;
	}
	kit_check(w != VIO_WAIT_TIMEOUT, "%s: no reply in %u ms", s->tag,
		  TIMEOUT_US / 1000);
	return w == VIO_WAIT_USED;
}

/* The header of what the device wrote to buf: size, type, our tag. */
static struct reply parse(struct share *s, const uint8_t *buf, uint32_t len,
			  uint16_t tag)
{
	struct reply r = { .p = buf, .len = len };
	uint32_t size = get32(&r);
	uint16_t rtag;

	if (!kit_check(len >= HDR && size == len,
		       "%s: used length %u, size field %u", s->tag, len, size))
		return (struct reply){ .p = buf };
	r.type = get8(&r);
	rtag = get16(&r);
	kit_check(tag == NOTAG || rtag == tag, "%s: reply tag %u for tag %u",
		  s->tag, rtag, tag);
	if (r.type == RLERROR) {
		s->errors++;
		r.ecode = get32(&r);
		parsed(&r, "Rlerror");
	}
	return r;
}

/* The writable buffers' bytes, in order, into s->flat. */
static void gather(struct share *s, const struct vio_buf *b, unsigned int n,
		   uint32_t len)
{
	uint32_t at = 0;

	for (unsigned int i = 0; i < n && at < len; i++) {
		uint32_t k = b[i].len < len - at ? b[i].len : len - at;

		if (!b[i].write)
			continue;
		memcpy(s->flat + at, (void *)(uintptr_t)b[i].addr, k);
		at += k;
	}
}

/* A hand-built chain; tag is the request's (NOTAG: any will do). */
static struct reply rpc_chain(struct share *s, const struct vio_buf *b,
			      unsigned int n, uint16_t tag)
{
	struct reply none = { .p = s->flat };
	uint32_t len, cap = 0;

	for (unsigned int i = 0; i < n; i++)
		cap += b[i].write ? b[i].len : 0;
	if (!submit(s, b, n, &len, &none.needs_reset))
		return none;
	if (!kit_check(len <= cap, "%s: used length %u, only %u writable",
		       s->tag, len, cap))
		return none;
	gather(s, b, n, len);
	return parse(s, s->flat, len, tag);
}

/* Sends m as built: one readable buffer, one writable of BUF_SIZE. */
static struct reply rpc(struct msg *m)
{
	struct share *s = m->s;
	struct vio_buf b[2] = {
		{ (uintptr_t)s->tx, m->len, false },
		{ (uintptr_t)s->rx, BUF_SIZE, true },
	};
	struct reply r = { .p = s->rx };

	le32(s->tx, m->len);
	if (submit(s, b, 2, &r.len, &r.needs_reset))
		r = parse(s, s->rx, r.len, m->tag);
	return r;
}

/* The reply is of type rtype; else says what came instead. */
static bool is(struct reply *r, uint8_t rtype, const char *what)
{
	if (r->type == rtype)
		return true;
	if (r->type == RLERROR)
		kit_fail("%s: Rlerror %u", what, r->ecode);
	else
		kit_fail("%s: reply type %u, expected %u", what, r->type,
			 rtype);
	return false;
}

/* Rlerror with err (0: any errno will do). */
static bool refused(struct reply *r, uint32_t err, const char *what)
{
	return kit_check(r->type == RLERROR && (!err || r->ecode == err),
			 "%s: type %u errno %u, expected Rlerror %u", what,
			 r->type, r->type == RLERROR ? r->ecode : 0, err);
}

/* ---- requests ---- */

static struct reply t_fid(struct share *s, uint8_t type, uint32_t fid)
{
	struct msg m = tbegin(s, type);

	put32(&m, fid);
	return rpc(&m);
}

static void clunk(struct share *s, uint32_t fid)
{
	struct reply r = t_fid(s, TCLUNK, fid);

	is(&r, TCLUNK + 1, "Tclunk");
}

static struct reply t_walk(struct share *s, uint32_t fid, uint32_t newfid,
			   const char *const *names, unsigned int n)
{
	struct msg m = tbegin(s, TWALK);

	put32(&m, fid);
	put32(&m, newfid);
	put16(&m, n);
	for (unsigned int i = 0; i < n; i++)
		putstr(&m, names[i]);
	return rpc(&m);
}

#define NAMES(...)	((const char *const[]){ __VA_ARGS__ })
#define WALK(s, fid, newfid, ...)					\
	t_walk(s, fid, newfid, NAMES(__VA_ARGS__),			\
	       sizeof(NAMES(__VA_ARGS__)) / sizeof(char *))

/* Rwalk's qids into q (up to max); their count, or -1 if not an Rwalk. */
static int walk_qids(struct reply *r, struct qid *q, unsigned int max)
{
	unsigned int n;

	if (r->type != TWALK + 1)
		return -1;
	n = get16(r);
	for (unsigned int i = 0; i < n; i++) {
		struct qid x = get_qid(r);

		if (i < max)
			q[i] = x;
	}
	parsed(r, "Rwalk");
	return n;
}

/* A walk that must reach the end; the last qid in *last. */
static bool walk_ok(struct reply *r, unsigned int n, struct qid *last,
		    const char *what)
{
	struct qid q[16];
	int got;

	if (!is(r, TWALK + 1, what))
		return false;
	got = walk_qids(r, q, 16);
	if (!kit_check(got == (int)n, "%s: %d qids for %u names", what, got,
		       n))
		return false;
	if (last && n)
		*last = q[n - 1];
	return true;
}

static struct reply t_lopen(struct share *s, uint32_t fid, uint32_t flags)
{
	struct msg m = tbegin(s, TLOPEN);

	put32(&m, fid);
	put32(&m, flags);
	return rpc(&m);
}

static struct reply t_read(struct share *s, uint32_t fid, uint64_t off,
			   uint32_t count)
{
	struct msg m = tbegin(s, TREAD);

	put32(&m, fid);
	put64(&m, off);
	put32(&m, count);
	return rpc(&m);
}

/* Rread's data, NUL-terminated into buf; its count, or -1. */
static int read_data(struct reply *r, char *buf, uint32_t size)
{
	uint32_t n;

	if (r->type != TREAD + 1)
		return -1;
	n = get32(r);
	if (!kit_check(n <= r->len - r->off, "Rread: count %u in %u bytes", n,
		       r->len - r->off))
		return -1;
	for (uint32_t i = 0; i < size; i++)
		buf[i] = i < n && i + 1 < size ? r->p[r->off + i] : '\0';
	r->off += n;
	parsed(r, "Rread");
	return n;
}

static struct reply t_write(struct share *s, uint32_t fid, uint64_t off,
			    const char *data)
{
	struct msg m = tbegin(s, TWRITE);

	put32(&m, fid);
	put64(&m, off);
	put32(&m, strlen(data));
	putn(&m, data, strlen(data));
	return rpc(&m);
}

struct attr {
	struct qid qid;
	uint32_t mode;
	uint64_t nlink, size;
};

static struct reply t_getattr(struct share *s, uint32_t fid)
{
	struct msg m = tbegin(s, TGETATTR);

	put32(&m, fid);
	put64(&m, GETATTR_BASIC);
	return rpc(&m);
}

static bool getattr(struct share *s, uint32_t fid, struct attr *a,
		    const char *what)
{
	struct reply r = t_getattr(s, fid);

	if (!is(&r, TGETATTR + 1, what))
		return false;
	get64(&r);			/* valid */
	a->qid = get_qid(&r);
	a->mode = get32(&r);
	get32(&r);			/* uid */
	get32(&r);			/* gid */
	a->nlink = get64(&r);
	get64(&r);			/* rdev */
	a->size = get64(&r);
	/* blksize, blocks, a/m/c/btime pairs, gen, data_version */
	for (unsigned int i = 0; i < 12; i++)
		get64(&r);
	return parsed(&r, what);
}

static struct reply t_setattr(struct share *s, uint32_t fid, uint32_t valid,
			      uint32_t mode, uint64_t size)
{
	struct msg m = tbegin(s, TSETATTR);

	put32(&m, fid);
	put32(&m, valid);
	put32(&m, mode);
	put32(&m, 0);			/* uid */
	put32(&m, 0);			/* gid */
	put64(&m, size);
	for (unsigned int i = 0; i < 4; i++)
		put64(&m, 0);		/* atime, mtime: the epoch */
	return rpc(&m);
}

static struct reply t_lcreate(struct share *s, uint32_t fid, const char *name,
			      uint32_t flags, uint32_t mode)
{
	struct msg m = tbegin(s, TLCREATE);

	put32(&m, fid);
	putstr(&m, name);
	put32(&m, flags);
	put32(&m, mode);
	put32(&m, 0);			/* gid */
	return rpc(&m);
}

/* A new file name in the root, open in fid; false (a failure) if not. */
static bool create(struct share *s, uint32_t fid, const char *name,
		   uint32_t flags, uint32_t mode)
{
	struct reply r = WALK(s, 0, fid);

	if (!is(&r, TWALK + 1, name))
		return false;
	r = t_lcreate(s, fid, name, flags, mode);
	if (is(&r, TLCREATE + 1, name))
		return true;
	clunk(s, fid);
	return false;
}

static struct reply t_mkdir(struct share *s, uint32_t dfid, const char *name)
{
	struct msg m = tbegin(s, TMKDIR);

	put32(&m, dfid);
	putstr(&m, name);
	put32(&m, 0755);
	put32(&m, 0);
	return rpc(&m);
}

static struct reply t_symlink(struct share *s, uint32_t dfid,
			      const char *name, const char *target)
{
	struct msg m = tbegin(s, TSYMLINK);

	put32(&m, dfid);
	putstr(&m, name);
	putstr(&m, target);
	put32(&m, 0);
	return rpc(&m);
}

static struct reply t_mknod(struct share *s, uint32_t dfid, const char *name,
			    uint32_t mode, uint32_t major, uint32_t minor)
{
	struct msg m = tbegin(s, TMKNOD);

	put32(&m, dfid);
	putstr(&m, name);
	put32(&m, mode);
	put32(&m, major);
	put32(&m, minor);
	put32(&m, 0);
	return rpc(&m);
}

static struct reply t_link(struct share *s, uint32_t dfid, uint32_t fid,
			   const char *name)
{
	struct msg m = tbegin(s, TLINK);

	put32(&m, dfid);
	put32(&m, fid);
	putstr(&m, name);
	return rpc(&m);
}

static struct reply t_rename(struct share *s, uint32_t fid, uint32_t dfid,
			     const char *name)
{
	struct msg m = tbegin(s, TRENAME);

	put32(&m, fid);
	put32(&m, dfid);
	putstr(&m, name);
	return rpc(&m);
}

static struct reply t_renameat(struct share *s, uint32_t olddir,
			       const char *oldname, uint32_t newdir,
			       const char *newname)
{
	struct msg m = tbegin(s, TRENAMEAT);

	put32(&m, olddir);
	putstr(&m, oldname);
	put32(&m, newdir);
	putstr(&m, newname);
	return rpc(&m);
}

static struct reply t_unlinkat(struct share *s, uint32_t dfid,
			       const char *name, uint32_t flags)
{
	struct msg m = tbegin(s, TUNLINKAT);

	put32(&m, dfid);
	putstr(&m, name);
	put32(&m, flags);
	return rpc(&m);
}

static struct reply t_xattrcreate(struct share *s, uint32_t fid,
				  const char *name, uint64_t size)
{
	struct msg m = tbegin(s, TXATTRCREATE);

	put32(&m, fid);
	putstr(&m, name);
	put64(&m, size);
	put32(&m, 0);
	return rpc(&m);
}

/* Treadlink's target into buf; false (and a failure) if none. */
static bool readlink(struct share *s, uint32_t fid, char *buf, size_t size)
{
	struct reply r = t_fid(s, TREADLINK, fid);

	if (!is(&r, TREADLINK + 1, "Treadlink"))
		return false;
	get_str(&r, buf, size);
	return parsed(&r, "Rreadlink");
}

/* ---- the session ---- */

static struct reply t_version(struct share *s, uint32_t msize,
			      const char *version)
{
	struct msg m = tbegin(s, TVERSION);

	put32(&m, msize);
	putstr(&m, version);
	return rpc(&m);
}

/* Tversion; the msize granted, 0 if refused or not "9P2000.L". */
static uint32_t version(struct share *s, uint32_t msize, const char *want,
			const char *expect)
{
	struct reply r = t_version(s, msize, want);
	char v[16];
	uint32_t got;

	if (!is(&r, TVERSION + 1, "Tversion"))
		return 0;
	got = get32(&r);
	get_str(&r, v, sizeof(v));
	if (!parsed(&r, "Rversion") ||
	    !kit_check(!strcmp(v, expect), "Tversion %s: version \"%s\"",
		       want, v))
		return 0;
	return got;
}

static bool attach(struct share *s, uint32_t fid)
{
	struct msg m = tbegin(s, TATTACH);
	struct reply r;

	put32(&m, fid);
	put32(&m, NOFID);		/* afid */
	putstr(&m, "kit");
	putstr(&m, "");
	put32(&m, 0);			/* n_uname: root */
	r = rpc(&m);
	if (!is(&r, TATTACH + 1, "Tattach"))
		return false;
	s->root = get_qid(&r);
	return parsed(&r, "Rattach") &&
	       kit_check(s->root.type == QTDIR, "root qid type %#x",
			 s->root.type);
}

/* The device up, msize MSIZE and fid 0 at the root. */
static bool session(struct share *s)
{
	if (!device_up(s))
		return false;
	s->msize = version(s, MSIZE, "9P2000.L", "9P2000.L");
	return kit_check(s->msize == MSIZE, "%s: msize %u", s->tag,
			 s->msize) && attach(s, 0);
}

/* After a NEEDS_RESET: reset and set everything up again. */
static bool ready(struct share *s)
{
	if (!s->broken)
		return true;
	kit_printf("9p: %s: reset after NEEDS_RESET\n", s->tag);
	return kit_check(session(s), "%s: no session after a reset", s->tag);
}

/* ---- checks ---- */

/* msize bounds, version strings, Tversion clunking fids, Tauth, Tflush. */
static void check_version(struct share *s)
{
	struct msg m;
	struct reply r;
	struct attr a;

	r = t_version(s, 1000, "9P2000.L");
	refused(&r, EINVAL, "Tversion msize 1000");
	version(s, MSIZE, "9P2000.u", "unknown");
	kit_check(version(s, 1 << 20, "9P2000.L", "9P2000.L") == 512 * 1024,
		  "Tversion 1 MiB: not cut to 512 KiB");
	if (!kit_check(session(s), "%s: version and attach", s->tag))
		kit_finish();
	/* a second Tversion starts afresh: fid 0 is gone */
	version(s, MSIZE, "9P2000.L", "9P2000.L");
	r = t_fid(s, TCLUNK, 0);
	refused(&r, EBADF, "fid 0 after Tversion");
	attach(s, 0);
	kit_check(getattr(s, 0, &a, "root Tgetattr") &&
		  a.qid.path == s->root.path && (a.mode & S_IFMT) == S_IFDIR,
		  "root: qid %#lx mode %#o", a.qid.path, a.mode);
	m = tbegin(s, TAUTH);
	put32(&m, 1);
	putstr(&m, "kit");
	putstr(&m, "");
	put32(&m, 0);
	r = rpc(&m);
	refused(&r, 0, "Tauth");
	m = tbegin(s, TFLUSH);
	put16(&m, 0x1234);
	r = rpc(&m);
	is(&r, TFLUSH + 1, "Tflush");
}

/* hello.txt with the request in 4 buffers and the reply in 3. */
static void read_split(struct share *s, uint32_t fid)
{
	struct msg m = tbegin(s, TREAD);
	uint8_t *rx = s->rx;
	struct vio_buf b[7] = {
		{ (uintptr_t)s->tx, 1, false },
		{ (uintptr_t)s->tx + 1, 3, false },
		{ (uintptr_t)s->tx + 4, 5, false },
		{ (uintptr_t)s->tx + 9, 14, false },
		{ (uintptr_t)rx, 5, true },
		{ (uintptr_t)rx + 100, 9, true },
		{ (uintptr_t)rx + 200, 4000, true },
	};
	struct reply r;
	char data[64];

	put32(&m, fid);
	put64(&m, 0);
	put32(&m, 4096);
	le32(s->tx, m.len);
	r = rpc_chain(s, b, 7, m.tag);
	kit_check(read_data(&r, data, sizeof(data)) == 16 &&
		  !strcmp(data, hello), "split Tread: \"%s\"", data);
}

static void check_read(struct share *s)
{
	struct qid q, hard;
	struct reply r;
	struct attr a;
	char data[64];

	r = WALK(s, 0, 1, "hello.txt");
	if (!walk_ok(&r, 1, &q, "walk hello.txt"))
		return;
	kit_check(q.type == QTFILE, "hello.txt qid type %#x", q.type);
	r = t_lopen(s, 1, O_RDONLY);
	is(&r, TLOPEN + 1, "Tlopen hello.txt");
	r = t_read(s, 1, 0, 4096);
	kit_check(read_data(&r, data, sizeof(data)) == 16 &&
		  !strcmp(data, hello), "hello.txt: \"%s\"", data);
	r = t_read(s, 1, 6, 4);
	kit_check(read_data(&r, data, sizeof(data)) == 4 &&
		  !strcmp(data, "from"), "hello.txt at 6: \"%s\"", data);
	r = t_read(s, 1, 16, 4096);
	kit_check(read_data(&r, data, sizeof(data)) == 0, "read at EOF");
	read_split(s, 1);
	kit_check(getattr(s, 1, &a, "Tgetattr hello.txt") && a.size == 16 &&
		  a.nlink == 2 && (a.mode & S_IFMT) == S_IFREG &&
		  a.qid.path == q.path,
		  "hello.txt: size %lu nlink %lu mode %#o", a.size, a.nlink,
		  a.mode);
	clunk(s, 1);
	r = WALK(s, 0, 1, "hard_in");
	if (walk_ok(&r, 1, &hard, "walk hard_in"))
		kit_check(hard.path == q.path, "hard_in: another qid path");
	clunk(s, 1);
}

/* `..` from the root stays there, in the qid and in what the fid names. */
static void walk_up(struct share *s, const char *const *names,
		    unsigned int n, const char *what)
{
	struct reply r = t_walk(s, 0, 2, names, n);
	struct qid q;
	struct attr a;

	if (!walk_ok(&r, n, &q, what))
		return;
	kit_check(q.path == s->root.path && q.type == QTDIR,
		  "%s: qid %#lx, the root's %#lx", what, q.path, s->root.path);
	kit_check(getattr(s, 2, &a, what) && a.qid.path == s->root.path,
		  "%s: the fid is not at the root", what);
	clunk(s, 2);
}

static void check_walk_up(struct share *s)
{
	walk_up(s, NAMES(".."), 1, "walk ..");
	walk_up(s, NAMES("..", ".."), 2, "walk ../..");
	walk_up(s, NAMES("sub", "..", ".."), 3, "walk sub/../..");
	walk_up(s, NAMES("sub", "deeper", "..", "..", "..", ".."), 6,
		"walk sub/deeper/../../../..");
}

/*
 * A walk of n names that must stop: Rlerror err, or (if allow_short) an
 * Rwalk of fewer qids, which makes no newfid (walk(5)).
 */
static void walk_bad(struct reply *r, unsigned int n, bool allow_short,
		     uint32_t err, const char *what)
{
	int got = walk_qids(r, NULL, 0);

	if (allow_short && got >= 0)
		kit_check(got < (int)n, "%s: walked %d of %u", what, got, n);
	else
		refused(r, err, what);
}

static void check_bad_names(struct share *s)
{
	struct msg m;
	struct reply r;

	r = WALK(s, 0, 3, "sub/inner.txt");
	walk_bad(&r, 1, false, EINVAL, "walk sub/inner.txt");
	r = WALK(s, 0, 3, "");
	walk_bad(&r, 1, false, EINVAL, "walk \"\"");
	r = WALK(s, 0, 3, ".");
	walk_bad(&r, 1, false, EINVAL, "walk .");
	r = WALK(s, 0, 3, "../outside");
	walk_bad(&r, 1, false, EINVAL, "walk ../outside");
	r = WALK(s, 0, 3, "sub", "a/b");
	walk_bad(&r, 2, true, EINVAL, "walk sub, a/b");
	/* a NUL inside a name must not cut it short to "hello.txt" */
	m = tbegin(s, TWALK);
	put32(&m, 0);
	put32(&m, 3);
	put16(&m, 1);
	put16(&m, 11);
	putn(&m, "hello.txt\0x", 11);
	r = rpc(&m);
	refused(&r, 0, "walk \"hello.txt\\0x\"");
	/* a missing name after a good one: a short Rwalk (walk(5)) */
	r = WALK(s, 0, 3, "..", "outside", "secret.txt");
	kit_check(walk_qids(&r, NULL, 0) == 1,
		  "walk ../outside/secret.txt: type %u, not 1 qid", r.type);
	r = WALK(s, 0, 3, "sub", "..", "sub", "..", "sub", "..", "sub", "..",
		 "sub", "..", "sub", "..", "sub", "..", "sub", "..", "sub");
	refused(&r, EINVAL, "walk of 17 names");
	r = t_fid(s, TCLUNK, 3);
	refused(&r, EBADF, "newfid 3 exists after refused walks");
}

/* What a symlink fid (4, link_out) must not give away or let change. */
static void symlink_fid(struct share *s)
{
	struct reply r;
	struct attr a;
	char text[128];
	size_t n;

	r = t_lopen(s, 4, O_RDONLY);
	refused(&r, ELOOP, "Tlopen link_out");
	r = t_read(s, 4, 0, 64);
	refused(&r, 0, "Tread on an unopened link_out");
	if (readlink(s, 4, text, sizeof(text))) {
		n = strlen(text);
		kit_check(text[0] == '/' && n > 19 &&
			  !strcmp(text + n - 19, "/outside/secret.txt"),
			  "link_out -> %s", text);
		kit_printf("9p: link_out -> %s\n", text);
		kit_check(getattr(s, 4, &a, "Tgetattr link_out") &&
			  (a.mode & S_IFMT) == S_IFLNK && a.size == n,
			  "link_out: mode %#o size %lu: the target's?",
			  a.mode, a.size);
	}
	/* chmod, truncate, utimes: may fail, must not reach the target */
	t_setattr(s, 4, SETATTR_MODE, 0777, 0);
	t_setattr(s, 4, SETATTR_SIZE, 0, 0);
	t_setattr(s, 4, SETATTR_MTIME | SETATTR_MTIME_SET, 0, 0);
}

/* A hard link to link_out must be a link to the link (the host checks). */
static void link_to_symlink(struct share *s)
{
	struct reply r = t_link(s, 0, 4, "hl_link");
	struct qid q;

	if (r.type != TLINK + 1)
		return;
	r = WALK(s, 0, 5, "hl_link");
	if (walk_ok(&r, 1, &q, "walk hl_link")) {
		kit_check(q.type == QTSYMLINK, "hl_link: qid type %#x", q.type);
		r = t_lopen(s, 5, O_RDONLY);
		refused(&r, ELOOP, "Tlopen hl_link");
		clunk(s, 5);
	}
}

static void check_symlinks(struct share *s)
{
	struct reply r;
	struct qid q;
	char text[64];

	/*
	 * Reaching a symlink is a step; going on from it is refused, either
	 * as ELOOP or as a walk that stops at the link.
	 */
	r = WALK(s, 0, 4, "dir_link", "secret.txt");
	walk_bad(&r, 2, true, ELOOP, "walk dir_link/secret.txt");
	r = WALK(s, 0, 4, "..", "dir_link", "secret.txt");
	walk_bad(&r, 3, true, ELOOP, "walk ../dir_link/secret.txt");
	r = WALK(s, 0, 4, "sub", "..", "link_rel", "x");
	walk_bad(&r, 4, true, ELOOP, "walk sub/../link_rel/x");
	r = WALK(s, 0, 4, "link_rel");
	if (walk_ok(&r, 1, &q, "walk link_rel") &&
	    readlink(s, 4, text, sizeof(text)))
		kit_check(!strcmp(text, "../outside/secret.txt"),
			  "link_rel -> %s", text);
	clunk(s, 4);
	r = WALK(s, 0, 4, "sub", "..", "link_out");
	if (!walk_ok(&r, 3, &q, "walk sub/../link_out"))
		return;
	kit_check(q.type == QTSYMLINK, "link_out: qid type %#x", q.type);
	symlink_fid(s);
	link_to_symlink(s);
	clunk(s, 4);
	r = WALK(s, 0, 4, "dir_link");
	if (walk_ok(&r, 1, &q, "walk dir_link")) {
		r = t_lopen(s, 4, O_RDONLY | O_DIRECTORY);
		refused(&r, ELOOP, "Tlopen dir_link O_DIRECTORY");
		clunk(s, 4);
	}
}

struct dirent_want {
	const char *name;
	uint8_t qtype, dtype;
	unsigned int seen;
};

/* The entries of one Rreaddir; the offset to go on from, 0 at the end. */
static uint64_t readdir_entries(struct reply *r, struct dirent_want *want,
				unsigned int nwant)
{
	uint32_t count = get32(r), end = r->off + count;
	uint64_t next = 0;
	char name[64];

	kit_check(end == r->len, "Rreaddir: count %u in %u bytes", count,
		  r->len - HDR - 4);
	while (r->off < end && !r->overrun) {
		struct qid q = get_qid(r);
		uint8_t type;

		next = get64(r);
		type = get8(r);
		get_str(r, name, sizeof(name));
		for (unsigned int i = 0; i < nwant; i++) {
			if (strcmp(name, want[i].name))
				continue;
			want[i].seen++;
			kit_check(q.type == want[i].qtype &&
				  type == want[i].dtype,
				  "readdir %s: qid type %#x, d_type %u", name,
				  q.type, type);
		}
	}
	parsed(r, "Rreaddir");
	return next;
}

static void check_readdir(struct share *s)
{
	struct dirent_want want[] = {
		{ "hello.txt", QTFILE, DT_REG, 0 },
		{ "sub", QTDIR, DT_DIR, 0 },
		{ "link_out", QTSYMLINK, DT_LNK, 0 },
		{ "dir_link", QTSYMLINK, DT_LNK, 0 },
	};
	uint64_t off = 0;
	unsigned int calls;
	struct reply r;
	struct msg m;

	r = WALK(s, 0, 5);
	if (!walk_ok(&r, 0, NULL, "clone the root"))
		return;
	r = t_lopen(s, 5, O_RDONLY | O_DIRECTORY);
	is(&r, TLOPEN + 1, "Tlopen the root");
	/* 128 bytes a call: a few entries each, continued by offset */
	for (calls = 0; calls < 32; calls++) {
		m = tbegin(s, TREADDIR);
		put32(&m, 5);
		put64(&m, off);
		put32(&m, 128);
		r = rpc(&m);
		if (!is(&r, TREADDIR + 1, "Treaddir") || r.len == HDR + 4)
			break;
		off = readdir_entries(&r, want, ARRAY_SIZE(want));
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(want); i++)
		kit_check(want[i].seen == 1, "readdir: %s seen %u times",
			  want[i].name, want[i].seen);
	kit_check(calls > 1, "readdir: all in one 128-byte reply?");
	clunk(s, 5);
}

/* Twrite with its header and data in three buffers. */
static void write_split(struct share *s, uint32_t fid, const char *data)
{
	struct msg m = tbegin(s, TWRITE);
	uint32_t n = strlen(data);
	struct vio_buf b[4];
	struct reply r;

	put32(&m, fid);
	put64(&m, 0);
	put32(&m, n);
	putn(&m, data, n);
	le32(s->tx, m.len);
	b[0] = (struct vio_buf){ (uintptr_t)s->tx, 23, false };
	b[1] = (struct vio_buf){ (uintptr_t)s->tx + 23, 5, false };
	b[2] = (struct vio_buf){ (uintptr_t)s->tx + 28, n - 5, false };
	b[3] = (struct vio_buf){ (uintptr_t)s->rx, BUF_SIZE, true };
	r = rpc_chain(s, b, 4, m.tag);
	if (is(&r, TWRITE + 1, "Twrite created.txt"))
		kit_check(get32(&r) == n && parsed(&r, "Rwrite"),
			  "Rwrite: not %u bytes", n);
}

static void lock_checks(struct share *s, uint32_t fid)
{
	static const uint8_t types[] = { LOCK_WRLCK, LOCK_UNLCK };
	struct reply r;
	struct msg m;

	for (unsigned int i = 0; i < ARRAY_SIZE(types); i++) {
		m = tbegin(s, TLOCK);
		put32(&m, fid);
		put8(&m, types[i]);
		put32(&m, 0);		/* flags: not blocking */
		put64(&m, 0);
		put64(&m, 0);		/* the whole file */
		put32(&m, 1);
		putstr(&m, "kit");
		r = rpc(&m);
		if (is(&r, TLOCK + 1, "Tlock"))
			kit_check(get8(&r) == 0 && parsed(&r, "Rlock"),
				  "Tlock type %u: not granted", types[i]);
	}
	m = tbegin(s, TGETLOCK);
	put32(&m, fid);
	put8(&m, LOCK_WRLCK);
	put64(&m, 0);
	put64(&m, 0);
	put32(&m, 1);
	putstr(&m, "kit");
	r = rpc(&m);
	if (is(&r, TGETLOCK + 1, "Tgetlock")) {
		char id[16];

		r.off += 1 + 8 + 8 + 4;	/* type start length proc_id */
		get_str(&r, id, sizeof(id));
		parsed(&r, "Rgetlock");
	}
}

static void fsync(struct share *s, uint32_t fid)
{
	struct msg m = tbegin(s, TFSYNC);
	struct reply r;

	put32(&m, fid);
	put32(&m, 0);			/* datasync, as Linux sends it */
	r = rpc(&m);
	is(&r, TFSYNC + 1, "Tfsync");
}

static void create_written(struct share *s)
{
	static const char text[] = "written by the guest\n";
	struct reply r;
	struct attr a;
	char data[64];

	if (!create(s, 6, "created.txt", O_RDWR | O_CREAT | O_EXCL, 0644))
		return;
	write_split(s, 6, text);
	r = t_read(s, 6, 0, 100);
	kit_check(read_data(&r, data, sizeof(data)) == 21 &&
		  !strcmp(data, text), "created.txt: read back \"%s\"", data);
	kit_check(getattr(s, 6, &a, "Tgetattr created.txt") && a.size == 21 &&
		  (a.mode & S_IFMT) == S_IFREG,
		  "created.txt: size %lu mode %#o", a.size, a.mode);
	fsync(s, 6);
	lock_checks(s, 6);
	clunk(s, 6);
	r = WALK(s, 0, 6);
	r = t_lcreate(s, 6, "created.txt", O_RDWR | O_CREAT | O_EXCL, 0644);
	refused(&r, EEXIST, "Tlcreate created.txt again");
	clunk(s, 6);
}

/* mkdir and renameat in the root, a file renamed into sub. */
static void check_renames(struct share *s)
{
	struct reply r = t_mkdir(s, 0, "newdir");

	if (is(&r, TMKDIR + 1, "Tmkdir newdir"))
		kit_check(get_qid(&r).type == QTDIR && parsed(&r, "Rmkdir"),
			  "newdir: not a directory qid");
	r = t_renameat(s, 0, "newdir", 0, "renamed_dir");
	is(&r, TRENAMEAT + 1, "Trenameat newdir renamed_dir");
	if (!create(s, 7, "victim.txt", O_RDWR | O_CREAT, 0644))
		return;
	r = WALK(s, 0, 8, "sub");
	r = t_rename(s, 7, 8, "moved.txt");
	is(&r, TRENAME + 1, "Trename victim.txt sub/moved.txt");
	clunk(s, 7);
	r = WALK(s, 8, 7, "moved.txt");
	if (walk_ok(&r, 1, NULL, "walk sub/moved.txt"))
		clunk(s, 7);
	clunk(s, 8);
}

/* unlinkat, a symlink pointing outside (made, never followed), remove. */
static void check_removals(struct share *s)
{
	struct reply r;

	if (create(s, 7, "doomed.txt", O_RDWR | O_CREAT, 0644))
		clunk(s, 7);
	r = t_unlinkat(s, 0, "doomed.txt", 0);
	is(&r, TUNLINKAT + 1, "Tunlinkat doomed.txt");
	r = WALK(s, 0, 7, "doomed.txt");
	refused(&r, ENOENT, "walk doomed.txt after Tunlinkat");
	r = t_symlink(s, 0, "made_link", "../outside/secret.txt");
	if (is(&r, TSYMLINK + 1, "Tsymlink made_link"))
		kit_check(get_qid(&r).type == QTSYMLINK &&
			  parsed(&r, "Rsymlink"), "made_link: qid type");
	r = WALK(s, 0, 7, "made_link");
	if (walk_ok(&r, 1, NULL, "walk made_link")) {
		r = t_lopen(s, 7, O_RDONLY);
		refused(&r, ELOOP, "Tlopen made_link");
		clunk(s, 7);
	}
	if (!create(s, 7, "removed.txt", O_RDWR | O_CREAT, 0644))
		return;
	r = t_fid(s, TREMOVE, 7);
	is(&r, TREMOVE + 1, "Tremove removed.txt");
	r = t_fid(s, TCLUNK, 7);
	refused(&r, EBADF, "fid 7 after Tremove");
	r = WALK(s, 0, 7, "removed.txt");
	refused(&r, ENOENT, "walk removed.txt after Tremove");
}

static void check_statfs_xattr(struct share *s)
{
	struct reply r = t_fid(s, TSTATFS, 0);
	struct msg m;
	uint32_t bsize;

	if (is(&r, TSTATFS + 1, "Tstatfs")) {
		get32(&r);		/* type */
		bsize = get32(&r);
		for (unsigned int i = 0; i < 6; i++)
			get64(&r);	/* blocks ... fsid */
		kit_check(get32(&r) && bsize && parsed(&r, "Rstatfs"),
			  "Rstatfs: bsize %u", bsize);
	}
	m = tbegin(s, TXATTRWALK);
	put32(&m, 0);
	put32(&m, 9);
	putstr(&m, "");			/* the list of names */
	r = rpc(&m);
	if (is(&r, TXATTRWALK + 1, "Txattrwalk")) {
		get64(&r);
		parsed(&r, "Rxattrwalk");
		clunk(s, 9);
	}
}

/*
 * A symlink to a directory outside (fid 5, dir_link) as the directory of
 * every kind of change: all refused; the host checks outside/ after.
 */
static void check_dir_link_writes(struct share *s)
{
	struct reply r = WALK(s, 0, 5, "dir_link");

	if (!walk_ok(&r, 1, NULL, "walk dir_link"))
		return;
	r = t_lcreate(s, 5, "planted", O_RDWR | O_CREAT, 0644);
	refused(&r, 0, "Tlcreate in dir_link");
	r = t_mkdir(s, 5, "planted_dir");
	refused(&r, 0, "Tmkdir in dir_link");
	r = t_symlink(s, 5, "planted_ln", "x");
	refused(&r, 0, "Tsymlink in dir_link");
	r = t_mknod(s, 5, "planted_fifo", S_IFIFO | 0644, 0, 0);
	refused(&r, 0, "Tmknod in dir_link");
	r = t_renameat(s, 0, "created.txt", 5, "stolen");
	refused(&r, 0, "Trenameat into dir_link");
	r = t_unlinkat(s, 5, "secret.txt", 0);
	refused(&r, 0, "Tunlinkat in dir_link");
	r = WALK(s, 0, 6, "created.txt");
	if (walk_ok(&r, 1, NULL, "walk created.txt")) {
		r = t_link(s, 5, 6, "stolen_link");
		refused(&r, 0, "Tlink into dir_link");
		r = t_rename(s, 6, 5, "stolen2");
		refused(&r, 0, "Trename into dir_link");
		clunk(s, 6);
	}
	clunk(s, 5);
	/* O_CREAT|O_TRUNC over a symlink must not truncate its target */
	r = WALK(s, 0, 6);
	r = t_lcreate(s, 6, "link_out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	refused(&r, 0, "Tlcreate over link_out");
	clunk(s, 6);
}

/*
 * A fifo must not hang the server in open(); device nodes and set-user-ID
 * bits are the host's business (the test checks what exists after).
 */
static void check_special(struct share *s)
{
	static const uint32_t flags[] = { O_RDONLY, O_WRONLY };
	struct reply r = WALK(s, 0, 6, "fifo");
	struct attr a;

	if (walk_ok(&r, 1, NULL, "walk fifo")) {
		for (unsigned int i = 0; i < ARRAY_SIZE(flags); i++) {
			r = t_lopen(s, 6, flags[i]);
			kit_check(r.type, "Tlopen fifo %u: no answer",
				  flags[i]);
		}
		clunk(s, 6);
	}
	r = t_mknod(s, 0, "made_fifo", S_IFIFO | 0644, 0, 0);
	kit_printf("9p: Tmknod fifo: type %u errno %u\n", r.type, r.ecode);
	r = t_mknod(s, 0, "cdev", S_IFCHR | 0666, 1, 1);
	kit_printf("9p: Tmknod char 1:1: type %u errno %u\n", r.type, r.ecode);
	if (!create(s, 6, "suid_try", O_RDWR | O_CREAT, 04755))
		return;
	t_setattr(s, 6, SETATTR_MODE, 06777, 0);
	kit_check(getattr(s, 6, &a, "Tgetattr suid_try") && !(a.mode & 06000),
		  "suid_try: mode %#o", a.mode);
	clunk(s, 6);
}

/*
 * Txattrwalk of name on fid, its value read through newfid 9 into buf;
 * the value's length, or -errno when refused.
 */
static int xattr_get(struct share *s, uint32_t fid, const char *name,
		     char *buf, size_t size)
{
	struct msg m = tbegin(s, TXATTRWALK);
	struct reply r;
	int n;

	put32(&m, fid);
	put32(&m, 9);
	putstr(&m, name);
	r = rpc(&m);
	buf[0] = '\0';
	if (r.type != TXATTRWALK + 1)
		return r.type == RLERROR ? -(int)r.ecode : -1000;
	n = get64(&r);
	parsed(&r, "Rxattrwalk");
	r = t_read(s, 9, 0, size - 1);
	read_data(&r, buf, size);
	clunk(s, 9);
	return n;
}

/* Txattrcreate, Twrite, and Tclunk to set it; fid is clunked either way. */
static bool xattr_set(struct share *s, uint32_t fid, const char *name,
		      const char *value)
{
	struct reply r = t_xattrcreate(s, fid, name, strlen(value));

	if (r.type != TXATTRCREATE + 1) {
		clunk(s, fid);
		return false;
	}
	r = t_write(s, fid, 0, value);
	is(&r, TWRITE + 1, "Twrite an xattr");
	r = t_fid(s, TCLUNK, fid);
	return r.type == TCLUNK + 1;
}

/*
 * xattr=1: the host gave hello.txt and the outside secret a user.kit.
 * A symlink shows and takes none (its target's are not ours); guests set
 * user.* only.
 */
static void check_xattrs(struct share *s)
{
	char v[32];
	int n;

	WALK(s, 0, 4, "hello.txt");
	n = xattr_get(s, 4, "user.kit", v, sizeof(v));
	kit_check(n == 12 && !strcmp(v, "inside-xattr"),
		  "hello.txt user.kit: %d \"%s\"", n, v);
	clunk(s, 4);
	WALK(s, 0, 4, "link_out");
	n = xattr_get(s, 4, "user.kit", v, sizeof(v));
	kit_check(n < 0, "link_out user.kit: %d \"%s\": the target's", n, v);
	kit_check(!xattr_set(s, 4, "user.guest", "guest-xattr"),
		  "link_out took an xattr");
	WALK(s, 0, 4, "created.txt");
	kit_check(xattr_set(s, 4, "user.guest", "guest-xattr"),
		  "created.txt: user.guest not set");
	WALK(s, 0, 4, "created.txt");
	kit_check(!xattr_set(s, 4, "trusted.kit", "x"), "trusted.kit set");
}

/* Clunked fids are gone; a newfid in use is refused. */
static void check_fids(struct share *s)
{
	struct reply r = WALK(s, 0, 10);
	struct attr a;

	clunk(s, 10);
	r = t_fid(s, TCLUNK, 10);
	refused(&r, EBADF, "Tclunk a clunked fid");
	r = WALK(s, 10, 11);
	refused(&r, EBADF, "Twalk from a clunked fid");
	r = t_getattr(s, 10);
	refused(&r, EBADF, "Tgetattr a clunked fid");
	r = WALK(s, 0, 12);
	r = WALK(s, 0, 12, "sub");
	refused(&r, EBADF, "Twalk to a newfid in use");
	kit_check(getattr(s, 12, &a, "Tgetattr fid 12") &&
		  a.qid.path == s->root.path, "fid 12 moved off the root");
	clunk(s, 12);
	r = t_fid(s, TCLUNK, 999);
	refused(&r, EBADF, "Tclunk a fid never made");
}

/* ".." is a walk's word only: as a new name it would leave sub (fid 6). */
static void check_dotdot_names(struct share *s)
{
	struct reply r = WALK(s, 0, 6, "sub");

	if (!walk_ok(&r, 1, NULL, "walk sub"))
		return;
	r = t_mkdir(s, 6, "..");
	refused(&r, 0, "Tmkdir ..");
	r = t_symlink(s, 6, "..", "x");
	refused(&r, 0, "Tsymlink ..");
	r = t_unlinkat(s, 6, "..", AT_REMOVEDIR);
	refused(&r, 0, "Tunlinkat ..");
	r = t_renameat(s, 0, "renamed_dir", 6, "..");
	refused(&r, 0, "Trenameat to ..");
	r = t_lcreate(s, 6, "..", O_RDWR | O_CREAT, 0644);
	refused(&r, 0, "Tlcreate ..");
	clunk(s, 6);
}

static void check_create(struct share *s)
{
	create_written(s);
	check_renames(s);
	check_removals(s);
	check_statfs_xattr(s);
	check_dir_link_writes(s);
	check_dotdot_names(s);
	check_special(s);
}

/* ---- the read-only share ---- */

/* fid 2 (hello.txt): opened for reading only, then written. */
static void ro_opens(struct share *s)
{
	static const uint32_t flags[] = {
		O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC,
	};
	struct reply r;
	char data[64];

	for (unsigned int i = 0; i < ARRAY_SIZE(flags); i++) {
		r = t_lopen(s, 2, flags[i]);
		kit_check(r.type == RLERROR && r.ecode == EROFS,
			  "ro: Tlopen flags %#o: type %u errno %u", flags[i],
			  r.type, r.ecode);
	}
	r = t_lopen(s, 2, O_RDONLY);
	is(&r, TLOPEN + 1, "ro: Tlopen hello.txt");
	r = t_write(s, 2, 0, "x");
	refused(&r, EROFS, "ro: Twrite");
	r = t_read(s, 2, 0, 64);
	kit_check(read_data(&r, data, sizeof(data)) == 16 &&
		  !strcmp(data, hello), "ro: hello.txt \"%s\"", data);
}

/* fid 3 (hello.txt, not open) */
static void ro_setattrs(struct share *s)
{
	static const uint32_t valid[] = {
		SETATTR_SIZE, SETATTR_MODE, SETATTR_MTIME | SETATTR_MTIME_SET,
	};
	struct reply r;

	for (unsigned int i = 0; i < ARRAY_SIZE(valid); i++) {
		r = t_setattr(s, 3, valid[i], 0777, 0);
		kit_check(r.type == RLERROR && r.ecode == EROFS,
			  "ro: Tsetattr valid %#x: type %u errno %u", valid[i],
			  r.type, r.ecode);
	}
	r = t_setattr(s, 0, SETATTR_MODE, 0777, 0);
	refused(&r, EROFS, "ro: Tsetattr the root");
	r = t_xattrcreate(s, 3, "user.kit", 4);
	refused(&r, EROFS, "ro: Txattrcreate");
}

/* New names, and hello.txt (fid 3) linked, renamed, unlinked. */
static void ro_names(struct share *s)
{
	struct reply r;

	r = WALK(s, 0, 1);
	r = t_lcreate(s, 1, "ro_new", O_RDWR | O_CREAT, 0644);
	refused(&r, EROFS, "ro: Tlcreate");
	clunk(s, 1);
	r = t_mkdir(s, 0, "ro_dir");
	refused(&r, EROFS, "ro: Tmkdir");
	r = t_symlink(s, 0, "ro_link", "hello.txt");
	refused(&r, EROFS, "ro: Tsymlink");
	r = t_link(s, 0, 3, "ro_hard");
	refused(&r, EROFS, "ro: Tlink");
	r = t_rename(s, 3, 0, "ro_renamed");
	refused(&r, EROFS, "ro: Trename");
	r = t_renameat(s, 0, "hello.txt", 0, "ro_renamed2");
	refused(&r, EROFS, "ro: Trenameat");
	r = t_unlinkat(s, 0, "hello.txt", 0);
	refused(&r, EROFS, "ro: Tunlinkat");
	r = t_mknod(s, 0, "ro_node", S_IFIFO | 0644, 0, 0);
	refused(&r, EROFS, "ro: Tmknod");
}

static void check_ro(struct share *s)
{
	struct reply r;

	if (!kit_check(session(s), "%s: version and attach", s->tag))
		return;
	r = WALK(s, 0, 2, "hello.txt");
	if (!walk_ok(&r, 1, NULL, "ro: walk hello.txt"))
		return;
	ro_opens(s);
	clunk(s, 2);
	r = WALK(s, 0, 3, "hello.txt");
	if (!walk_ok(&r, 1, NULL, "ro: walk hello.txt"))
		return;
	ro_setattrs(s);
	ro_names(s);
	/* Tremove clunks the fid even when it fails (remove(5)) */
	r = t_fid(s, TREMOVE, 3);
	refused(&r, EROFS, "ro: Tremove");
	r = t_fid(s, TCLUNK, 3);
	refused(&r, EBADF, "ro: fid 3 after Tremove");
}

/* ---- malformed requests ---- */

/*
 * Did the device break on what? It may set NEEDS_RESET and still use the
 * chain (with nothing written), so Status is read even after a reply.
 */
static bool broke(struct share *s, const char *what)
{
	if (!s->broken && (vio_status(&s->dev) & VIO_STATUS_NEEDS_RESET)) {
		s->broken = true;
		s->resets++;
	}
	if (s->broken)
		kit_printf("9p: %s: NEEDS_RESET\n", what);
	return s->broken;
}

/* The answer to a malformed request: Rlerror err, or NEEDS_RESET. */
static void bad_answer(struct share *s, struct reply *r, uint32_t err,
		       const char *what)
{
	if (!broke(s, what))
		refused(r, err, what);
}

/* The device still serves requests after what (set up again if broken). */
static void alive(struct share *s, const char *what)
{
	struct attr a;

	if (ready(s))
		kit_check(getattr(s, 0, &a, what) &&
			  a.qid.path == s->root.path,
			  "after %s: the device does not answer", what);
}

/* tx[0, len) with size field size, and BUF_SIZE writable bytes. */
static struct reply send_raw(struct share *s, uint32_t len, uint32_t size)
{
	struct vio_buf b[2] = {
		{ (uintptr_t)s->tx, len, false },
		{ (uintptr_t)s->rx, BUF_SIZE, true },
	};

	le32(s->tx, size);
	return rpc_chain(s, b, 2, NOTAG);
}

/* A Tgetattr of fid 0 in tx; its length. */
static uint32_t build_getattr(struct share *s)
{
	struct msg m = tbegin(s, TGETATTR);

	put32(&m, 0);
	put64(&m, GETATTR_BASIC);
	le32(s->tx, m.len);
	return m.len;
}

/* The size field against the chain and msize. */
static void bad_sizes(struct share *s)
{
	static const struct { uint32_t size; const char *what; } sizes[] = {
		{ 100, "size past the chain" }, { 5, "size 5" },
		{ 0, "size 0" },
	};
	uint32_t len;
	struct reply r;

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (!ready(s))
			return;
		len = build_getattr(s);
		r = send_raw(s, len, sizes[i].size);
		bad_answer(s, &r, EINVAL, sizes[i].what);
		alive(s, sizes[i].what);
	}
	/* msize + 1 bytes, all there: still one too many */
	if (!ready(s))
		return;
	len = build_getattr(s);
	memset(s->tx + len, 0, MSIZE + 1 - len);
	r = send_raw(s, MSIZE + 1, MSIZE + 1);
	if (!broke(s, "size msize + 1"))
		kit_check(r.type == RLERROR &&
			  (r.ecode == EINVAL || r.ecode == EMSGSIZE),
			  "size msize + 1: type %u errno %u", r.type, r.ecode);
	alive(s, "size msize + 1");
	/* three bytes: not even a whole size field */
	if (!ready(s))
		return;
	build_getattr(s);
	r = send_raw(s, 3, 19);
	bad_answer(s, &r, EINVAL, "a 3-byte request");
	alive(s, "a 3-byte request");
}

/* Twalk saying 5 names and holding 2; one whose name runs past the end. */
static void bad_walks(struct share *s)
{
	struct msg m;
	struct reply r;

	if (!ready(s))
		return;
	m = tbegin(s, TWALK);
	put32(&m, 0);
	put32(&m, 13);
	put16(&m, 5);
	putstr(&m, "sub");
	putstr(&m, "deeper");
	r = send_raw(s, m.len, m.len);
	bad_answer(s, &r, EINVAL, "Twalk of 5 names holding 2");
	alive(s, "a truncated Twalk");
	r = t_fid(s, TCLUNK, 13);
	refused(&r, EBADF, "newfid 13 made by a truncated Twalk");
	if (!ready(s))
		return;
	m = tbegin(s, TWALK);
	put32(&m, 0);
	put32(&m, 13);
	put16(&m, 1);
	put16(&m, 200);
	putn(&m, "sub", 3);
	r = send_raw(s, m.len, m.len);
	bad_answer(s, &r, EINVAL, "a name running past the end");
	alive(s, "a name running past the end");
}

/* Twrite whose count runs past its data: created.txt stays as it was. */
static void bad_write_count(struct share *s)
{
	struct reply r;
	struct msg m;

	if (!ready(s))
		return;
	r = WALK(s, 0, 16, "created.txt");
	r = t_lopen(s, 16, O_RDWR);
	if (!is(&r, TLOPEN + 1, "Tlopen created.txt"))
		return;
	m = tbegin(s, TWRITE);
	put32(&m, 16);
	put64(&m, 0);
	put32(&m, 100);
	putn(&m, "XXXXX", 5);
	r = send_raw(s, m.len, m.len);
	bad_answer(s, &r, EINVAL, "Twrite count past its data");
	alive(s, "Twrite count past its data");
	if (!s->broken)
		clunk(s, 16);
}

/* Tlcreate cut short after its name: no file "cut_short" may appear. */
static void bad_short_body(struct share *s)
{
	struct msg m;
	struct reply r;

	if (!ready(s))
		return;
	r = WALK(s, 0, 14);
	m = tbegin(s, TLCREATE);
	put32(&m, 14);
	putstr(&m, "cut_short");
	put16(&m, O_RDWR | O_CREAT);	/* half of flags, then nothing */
	r = send_raw(s, m.len, m.len);
	bad_answer(s, &r, EINVAL, "Tlcreate cut short");
	alive(s, "Tlcreate cut short");
	if (!s->broken)
		clunk(s, 14);
}

static void bad_types(struct share *s)
{
	static const uint8_t types[] = { 255, TVERSION + 1, 0, RLERROR };
	struct msg m;
	struct reply r;

	for (unsigned int i = 0; i < ARRAY_SIZE(types); i++) {
		if (!ready(s))
			return;
		m = tbegin(s, types[i]);
		put32(&m, 0);
		r = rpc(&m);
		bad_answer(s, &r, 0, "an unknown message type");
		alive(s, "an unknown message type");
	}
}

/*
 * Replies with too little room: wlen writable bytes (0: none) for a
 * Tgetattr. The device may mark itself NEEDS_RESET; it must not write
 * past the room it was given.
 */
static void bad_no_room(struct share *s, uint32_t wlen)
{
	struct vio_buf b[2];
	uint32_t len, used;
	bool nr;

	if (!ready(s))
		return;
	len = build_getattr(s);
	memset(s->rx, 0xa5, 64);
	b[0] = (struct vio_buf){ (uintptr_t)s->tx, len, false };
	b[1] = (struct vio_buf){ (uintptr_t)s->rx, wlen, true };
	if (submit(s, b, wlen ? 2 : 1, &used, &nr))
		kit_check(used <= wlen, "%u writable bytes: used length %u",
			  wlen, used);
	broke(s, "no room for a reply");
	for (unsigned int i = wlen; i < 64; i++)
		if (!kit_check(s->rx[i] == 0xa5,
			       "%u writable bytes: byte %u written", wlen, i))
			break;
	alive(s, "a reply with no room");
}

/* Tread of 4096 with 20 writable bytes: an error, or a short read. */
static void bad_small_reply(struct share *s)
{
	struct vio_buf b[2];
	struct reply r;
	struct msg m;
	char data[16];
	int n;

	if (!ready(s))
		return;
	r = WALK(s, 0, 15, "hello.txt");
	r = t_lopen(s, 15, O_RDONLY);
	m = tbegin(s, TREAD);
	put32(&m, 15);
	put64(&m, 0);
	put32(&m, 4096);
	le32(s->tx, m.len);
	memset(s->rx, 0xa5, 84);
	b[0] = (struct vio_buf){ (uintptr_t)s->tx, m.len, false };
	b[1] = (struct vio_buf){ (uintptr_t)s->rx, 20, true };
	r = rpc_chain(s, b, 2, m.tag);
	n = read_data(&r, data, sizeof(data));
	kit_check(broke(s, "Tread into 20 bytes") || r.type == RLERROR ||
		  (n >= 0 && n <= 9 && !memcmp(data, hello, n)),
		  "Tread into 20 bytes: type %u count %d", r.type, n);
	for (unsigned int i = 20; i < 84; i++)
		if (!kit_check(s->rx[i] == 0xa5,
			       "Tread into 20 bytes: byte %u written", i))
			break;
	alive(s, "Tread into 20 bytes");
	if (!s->broken)
		clunk(s, 15);
}

/* m with room for only `room` bytes of reply. */
static struct reply rpc_tight(struct msg *m, uint32_t room)
{
	struct share *s = m->s;
	struct vio_buf b[2] = {
		{ (uintptr_t)s->tx, m->len, false },
		{ (uintptr_t)s->rx, room, true },
	};

	le32(s->tx, m->len);
	return rpc_chain(s, b, 2, m->tag);
}

/*
 * Requests whose reply does not fit the room given (but an Rlerror
 * does): a request answered with an error must not have happened. A
 * Twalk of two names with room for one qid must make no newfid; a
 * Tmkdir with no room for its qid, no directory.
 */
static void bad_tight_replies(struct share *s)
{
	struct reply r;
	struct msg m;

	if (!ready(s))
		return;
	m = tbegin(s, TWALK);
	put32(&m, 0);
	put32(&m, 20);
	put16(&m, 2);
	putstr(&m, "sub");
	putstr(&m, "deeper");
	r = rpc_tight(&m, HDR + 2 + 13);
	if (!broke(s, "an Rwalk without room") &&
	    walk_qids(&r, NULL, 0) != 2) {
		r = t_fid(s, TCLUNK, 20);
		refused(&r, EBADF, "newfid 20 made by a Twalk not answered");
	}
	if (!ready(s))
		return;
	m = tbegin(s, TMKDIR);
	put32(&m, 0);
	putstr(&m, "tight_dir");
	put32(&m, 0755);
	put32(&m, 0);
	r = rpc_tight(&m, 12);
	if (!broke(s, "an Rmkdir without room") && r.type != TMKDIR + 1) {
		r = WALK(s, 0, 20, "tight_dir");
		refused(&r, ENOENT, "tight_dir made by a Tmkdir not answered");
	}
	alive(s, "replies without room");
}

static void check_bad_messages(struct share *s)
{
	bad_sizes(s);
	bad_walks(s);
	bad_short_body(s);
	bad_write_count(s);
	bad_types(s);
	bad_small_reply(s);
	bad_tight_replies(s);
	bad_no_room(s, 8);
	bad_no_room(s, 0);
	ready(s);
}

/* ---- the race ---- */

/*
 * swap/secret.txt, walked in one Twalk or two, opened and read: 1 if it
 * read "inside", 0 if refused on the way; never the outside's secret.
 */
static int race_once(struct share *s, bool two_steps)
{
	struct reply r;
	char data[32];
	int n;

	if (two_steps) {
		r = WALK(s, 0, 1, "swap");
		if (r.type != TWALK + 1)
			return 0;
		r = WALK(s, 1, 2, "secret.txt");
		clunk(s, 1);
	} else {
		r = WALK(s, 0, 2, "swap", "secret.txt");
	}
	if (walk_qids(&r, NULL, 0) != (two_steps ? 1 : 2))
		return 0;
	r = t_lopen(s, 2, O_RDONLY);
	n = -1;
	if (r.type == TLOPEN + 1) {
		r = t_read(s, 2, 0, sizeof(data) - 1);
		n = read_data(&r, data, sizeof(data));
		kit_check(n < 0 || !strcmp(data, secret_inside),
			  "race: read \"%s\"", data);
	}
	clunk(s, 2);
	return n > 0;
}

static void race(struct share *s, unsigned int iters)
{
	unsigned int reads = 0;

	for (unsigned int i = 0; i < iters && !kit_failures; i++)
		reads += race_once(s, i & 1);
	kit_printf("9p: race: %u of %u reads succeeded\n", reads, iters);
}

/* ---- setting up ---- */

static struct share *by_tag(const char *tag)
{
	for (unsigned int i = 0; i < nr_shares; i++)
		if (!strcmp(shares[i].tag, tag))
			return &shares[i];
	kit_fail("no virtio-9p device tagged %s", tag);
	kit_finish();
}

static void setup_shares(void)
{
	struct vio_dev devs[MAX_SHARES];

	nr_shares = find_devices(devs);
	if (!kit_check(nr_shares, "no virtio-9p device"))
		kit_finish();
	for (unsigned int i = 0; i < nr_shares; i++) {
		struct share *s = &shares[i];

		s->dev = devs[i];
		s->tx = kit_zalloc(BUF_SIZE);
		s->rx = kit_zalloc(BUF_SIZE);
		s->flat = kit_zalloc(BUF_SIZE);
		s->next_tag = 1 + i;
		if (!kit_check(s->tx && s->rx && s->flat, "out of heap") ||
		    !device_up(s) || !read_tag(s))
			kit_finish();
		kit_printf("9p: slot %u: tag %s\n", s->dev.slot, s->tag);
	}
}

/* "9p" is only ever a string here: the kit prints PASS: 9p */
KIT_TEST(9p)
{
	struct share *rw;

	setup_shares();
	rw = by_tag("kit9p");
	if (kit_cmdline_has("race")) {
		if (session(rw))
			race(rw, kit_cmdline_u64("race", 300));
	} else {
		check_version(rw);
		check_read(rw);
		check_walk_up(rw);
		check_bad_names(rw);
		check_symlinks(rw);
		check_readdir(rw);
		check_create(rw);
		check_fids(rw);
		if (kit_cmdline_has("xattr"))
			check_xattrs(rw);
		check_ro(by_tag("kitro"));
		check_bad_messages(rw);
	}
	for (unsigned int i = 0; i < nr_shares; i++)
		kit_printf("9p: %s: %u requests, %u resets, %u errors\n",
			   shares[i].tag, shares[i].requests, shares[i].resets,
			   shares[i].errors);
	kit_finish();
}
