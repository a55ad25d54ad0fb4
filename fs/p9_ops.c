// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P2000.L operations that read: the session (version, attach, flush),
 * walking and clunking fids, attributes, opening, reading and writing an
 * open file, locks. Each parses its whole request before it touches the
 * host, so a message cut short changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

#define P9_VERSION		"9P2000.L"
#define P9_GETATTR_BASIC	0x7ffull

/* Open flags 9P2000.L defines (Linux's generic values). */
#define P9_DOTL_ACCMODE		03
#define P9_DOTL_TRUNC		01000
#define P9_DOTL_APPEND		02000
#define P9_DOTL_NONBLOCK	04000
#define P9_DOTL_DSYNC		010000
#define P9_DOTL_DIRECTORY	0200000
#define P9_DOTL_SYNC		04000000

static struct p9_fid *path_fid(struct p9_server *s, uint32_t num)
{
	struct p9_fid *fid = p9_fid_get(s, num);

	return fid && fid->kind == P9_FID_PATH ? fid : NULL;
}

int p9_op_version(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t msize = p9_get32(in);
	struct p9_str version = p9_getstr(in);
	bool ours = version.len == strlen(P9_VERSION) &&
		    !memcmp(version.s, P9_VERSION, version.len);

	if (in->err)
		return EINVAL;
	if (msize < P9_MIN_MSIZE)
		return EINVAL;
	p9_fid_clunk_all(s);
	s->msize = MIN(msize, (uint32_t)P9_MAX_MSIZE);
	p9_put32(out, s->msize);
	p9_putstr(out, ours ? P9_VERSION : "unknown",
		  ours ? strlen(P9_VERSION) : 7);
	return 0;
}

int p9_op_attach(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t num = p9_get32(in);
	struct p9_fid *fid;
	struct p9_qid qid;
	struct stat st;
	uint32_t uid;
	int err;

	p9_get32(in);		/* afid: there is no authentication */
	p9_getstr(in);		/* uname */
	p9_getstr(in);		/* aname: a share has one tree */
	uid = p9_get32(in);
	if (in->err)
		return EINVAL;
	/* a root on a kernel file system serves nothing (see p9_fid.c) */
	if (p9_kernel_fs(s->root_fd))
		return EACCES;
	if (fstat(s->root_fd, &st))
		return errno;
	fid = p9_fid_new(s, num, "", &err);
	if (!fid)
		return err;
	fid->uid = uid;
	p9_stat_qid(s, &st, &qid);
	p9_putqid(out, &qid);
	return 0;
}

int p9_op_flush(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	p9_get16(in);		/* every request is answered before the next */
	return in->err ? EINVAL : 0;
}

/* One step of a walk: path changes to name's, *qid is where it led. */
static int walk_one(struct p9_server *s, char *path, struct p9_str name,
		    struct p9_qid *qid)
{
	char next[PATH_MAX];
	struct stat st;
	int fd, err;

	if (name.len == 2 && !memcmp(name.s, "..", 2)) {
		strcpy(next, path);
		p9_path_parent(next);
	} else {
		char elem[P9_NAME_MAX + 1];

		err = p9_check_name(name.s, name.len);
		if (err)
			return err;
		p9_str_copy(name, elem, sizeof(elem));
		err = -p9_path_join(next, path, elem);
		if (err)
			return err;
	}
	fd = p9_name_inode(s, next, &st);
	if (fd < 0)
		return -fd;
	close(fd);
	p9_stat_qid(s, &st, qid);
	strcpy(path, next);
	return 0;
}

static int walk_finish(struct p9_server *s, struct p9_fid *fid,
		       uint32_t newnum, const char *path)
{
	struct p9_fid *nf;
	char *copy;
	int err;

	if (newnum == fid->num) {
		if (!(copy = strdup(path)))
			return ENOMEM;
		free(fid->path);
		fid->path = copy;
		return 0;
	}
	nf = p9_fid_new(s, newnum, path, &err);
	if (nf)
		nf->uid = fid->uid;
	return nf ? 0 : err;
}

int p9_op_walk(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t num = p9_get32(in), newnum = p9_get32(in);
	uint16_t nwname = p9_get16(in), i;
	struct p9_str names[P9_MAX_WALK];
	struct p9_fid *fid = path_fid(s, num);
	char path[PATH_MAX];
	uint8_t *count;
	int err = 0;

	if (nwname > P9_MAX_WALK)
		return EINVAL;
	for (i = 0; i < nwname; i++)
		names[i] = p9_getstr(in);
	if (in->err)
		return EINVAL;
	if (!fid || fid->fd >= 0 ||
	    (newnum != num && p9_fid_get(s, newnum)))
		return EBADF;
	/* room for every qid, or the walk must not make its fid */
	if (out->cap - out->len < 2 + (size_t)nwname * P9_QID_SIZE)
		return EMSGSIZE;
	strcpy(path, fid->path);
	count = p9_reserve(out, 2);
	for (i = 0; i < nwname && count; i++) {
		struct p9_qid qid;

		err = walk_one(s, path, names[i], &qid);
		if (err)
			break;
		p9_putqid(out, &qid);
	}
	if (i == 0 && err)
		return err;
	if (count) {
		count[0] = i & 0xff;
		count[1] = i >> 8;
	}
	/* a walk that stopped short makes no newfid (9P's rule) */
	return i == nwname ? walk_finish(s, fid, newnum, path) : 0;
}

int p9_op_clunk(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	int err = 0;

	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	if (fid->kind == P9_FID_XATTR_WRITE)
		err = -p9_xattr_commit(s, fid);
	p9_fid_clunk(s, fid);
	return err;
}

int p9_op_getattr(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	struct p9_qid qid;
	struct stat st;
	int fd;

	p9_get64(in);		/* request_mask: the basic set always comes */
	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	/* an open file is asked, not its name: it may have been unlinked */
	fd = p9_fid_inode(s, fid, &st, true);
	if (fd < 0)
		return -fd;
	p9_fid_inode_done(fid, fd);
	p9_stat_qid(s, &st, &qid);
	p9_put64(out, P9_GETATTR_BASIC);
	p9_putqid(out, &qid);
	p9_put32(out, st.st_mode);
	p9_put32(out, st.st_uid);
	p9_put32(out, st.st_gid);
	p9_put64(out, st.st_nlink);
	p9_put64(out, st.st_rdev);
	p9_put64(out, st.st_size);
	p9_put64(out, st.st_blksize);
	p9_put64(out, st.st_blocks);
	p9_put64(out, st.st_atim.tv_sec);
	p9_put64(out, st.st_atim.tv_nsec);
	p9_put64(out, st.st_mtim.tv_sec);
	p9_put64(out, st.st_mtim.tv_nsec);
	p9_put64(out, st.st_ctim.tv_sec);
	p9_put64(out, st.st_ctim.tv_nsec);
	p9_put64(out, 0);	/* btime, gen, data_version: not basic */
	p9_put64(out, 0);
	p9_put64(out, 0);
	p9_put64(out, 0);
	return 0;
}

int p9_op_statfs(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	struct statfs sf;
	struct stat st;
	int fd, err = 0;

	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	fd = p9_fid_inode(s, fid, &st, false);
	if (fd < 0)
		return -fd;
	if (fstatfs(fd, &sf))
		err = errno;
	p9_fid_inode_done(fid, fd);
	if (err)
		return err;
	p9_put32(out, sf.f_type);
	p9_put32(out, sf.f_bsize);
	p9_put64(out, sf.f_blocks);
	p9_put64(out, sf.f_bfree);
	p9_put64(out, sf.f_bavail);
	p9_put64(out, sf.f_files);
	p9_put64(out, sf.f_ffree);
	p9_put64(out, (uint64_t)(uint32_t)sf.f_fsid.__val[0] |
		      (uint64_t)sf.f_fsid.__val[1] << 32);
	p9_put32(out, sf.f_namelen);
	return 0;
}

int p9_op_readlink(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	char target[PATH_MAX];
	ssize_t n;
	int fd, err = 0;

	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	fd = p9_open_beneath(s, fid->path, 0);
	if (fd < 0)
		return -fd;
	/* the link's own text: reading it follows nothing */
	n = readlinkat(fd, "", target, sizeof(target));
	if (n < 0)
		err = errno;
	close(fd);
	if (err)
		return err == ENOENT ? EINVAL : err;
	if (n == sizeof(target))
		return ENAMETOOLONG;
	p9_putstr(out, target, n);
	return 0;
}

/* A guest's open flags, as the host gets them; -1 for what ro forbids. */
static int host_open_flags(const struct p9_server *s, uint32_t flags)
{
	int acc = flags & P9_DOTL_ACCMODE;
	int host = acc == 1 ? O_WRONLY : acc == 2 ? O_RDWR : O_RDONLY;

	if (s->ro && (acc || (flags & P9_DOTL_TRUNC)))
		return -1;
	if (flags & P9_DOTL_TRUNC)
		host |= O_TRUNC;
	if (flags & P9_DOTL_APPEND)
		host |= O_APPEND;
	if (flags & P9_DOTL_DSYNC)
		host |= O_DSYNC;
	if (flags & P9_DOTL_SYNC)
		host |= O_SYNC;
	if (flags & P9_DOTL_DIRECTORY)
		host |= O_DIRECTORY;
	/* O_DIRECT (alignment the guest cannot see), O_NOATIME (owner
	 * only) and O_NONBLOCK (a regular file never blocks) are dropped */
	return host | O_CLOEXEC | O_NOCTTY;
}

int p9_reopen(int path_fd, const struct stat *st, int flags)
{
	char proc[P9_PROC_PATH];
	int fd;

	/* a device, FIFO or socket is the guest's to make, not to open */
	if (S_ISLNK(st->st_mode))
		return -ELOOP;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return -EACCES;
	p9_proc_path(path_fd, proc);
	fd = open(proc, flags);
	return fd < 0 ? -errno : fd;
}

int p9_op_lopen(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	uint32_t flags = p9_get32(in);
	int host = host_open_flags(s, flags);
	struct p9_qid qid;
	struct stat st;
	int pfd, fd;

	if (in->err)
		return EINVAL;
	if (!fid || fid->fd >= 0)
		return EBADF;
	if (host < 0)
		return EROFS;
	if (p9_may_open(s))
		return EMFILE;
	pfd = p9_open_inode(s, fid->path, &st);
	if (pfd < 0)
		return -pfd;
	fd = p9_reopen(pfd, &st, host);
	close(pfd);
	if (fd < 0)
		return -fd;
	p9_fid_opened(s, fid, fd);
	fid->dir = S_ISDIR(st.st_mode);
	p9_stat_qid(s, &st, &qid);
	p9_putqid(out, &qid);
	p9_put32(out, 0);	/* iounit: msize's worth */
	return 0;
}

static int read_xattr_fid(struct p9_fid *fid, uint64_t offset, uint32_t n,
			  struct p9_out *out)
{
	uint8_t *data;

	if (offset > fid->xattr_len)
		return EINVAL;
	n = MIN(n, (uint32_t)(fid->xattr_len - offset));
	p9_put32(out, n);
	data = p9_reserve(out, n);
	if (data && n)
		memcpy(data, fid->xattr + offset, n);
	return 0;
}

int p9_op_read(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	uint64_t offset = p9_get64(in);
	uint32_t count = p9_get32(in);
	uint8_t *countp;
	ssize_t n;

	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	if (fid->kind == P9_FID_XATTR_READ)
		return read_xattr_fid(fid, offset, count, out);
	if (fid->kind != P9_FID_PATH || fid->fd < 0)
		return EBADF;
	if (offset > INT64_MAX)
		return EINVAL;
	countp = p9_reserve(out, 4);
	if (!countp)
		return EMSGSIZE;
	/* what fits in the reply: a guest's count may promise more */
	count = MIN(count, (uint32_t)(out->cap - out->len));
	n = pread(fid->fd, out->buf + out->len, count, offset);
	if (n < 0)
		return errno;
	p9_patch32(countp, n);
	out->len += n;
	return 0;
}

static int write_xattr_fid(struct p9_fid *fid, uint64_t offset,
			   const uint8_t *data, uint32_t count,
			   struct p9_out *out)
{
	if (offset > fid->xattr_size || count > fid->xattr_size - offset)
		return ENOSPC;
	memcpy(fid->xattr + offset, data, count);
	fid->xattr_len = MAX(fid->xattr_len, (size_t)(offset + count));
	p9_put32(out, count);
	return 0;
}

int p9_op_write(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	uint64_t offset = p9_get64(in);
	uint32_t count = p9_get32(in);
	const uint8_t *data = in->p;
	ssize_t n;

	if (in->err || in->left < count)
		return EINVAL;
	in->left -= count;
	if (!fid)
		return EBADF;
	if (fid->kind == P9_FID_XATTR_WRITE)
		return write_xattr_fid(fid, offset, data, count, out);
	if (fid->kind != P9_FID_PATH || fid->fd < 0)
		return EBADF;
	if (s->ro)
		return EROFS;
	if (offset > INT64_MAX)
		return EINVAL;
	n = pwrite(fid->fd, data, count, offset);
	if (n < 0)
		return errno;
	p9_put32(out, n);
	return 0;
}

int p9_op_fsync(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	uint32_t datasync = p9_get32(in);

	if (in->err)
		return EINVAL;
	if (!fid || fid->fd < 0)
		return EBADF;
	if (datasync ? fdatasync(fid->fd) : fsync(fid->fd))
		return errno;
	return 0;
}

/* Tlock's and Tgetlock's lock types, and Rlock's status. */
#define P9_LOCK_RDLCK		0
#define P9_LOCK_WRLCK		1
#define P9_LOCK_UNLCK		2
#define P9_LOCK_SUCCESS		0
#define P9_LOCK_BLOCKED		1
#define P9_LOCK_ERROR		2

static const short lock_types[] = { F_RDLCK, F_WRLCK, F_UNLCK };

/*
 * Open-file-description locks: each guest open (fid) is its own owner,
 * as each guest process's is, and the I/O thread never waits: a lock
 * held elsewhere answers "blocked" and the guest's kernel retries.
 */
static int lock_fid(struct p9_server *s, struct p9_in *in, int cmd,
		    struct p9_fid **fidp, struct flock *fl,
		    struct p9_str *client)
{
	struct p9_fid *fid = path_fid(s, p9_get32(in));
	uint8_t type = p9_get8(in);

	if (cmd == F_OFD_SETLK)
		p9_get32(in);	/* flags: blocking is the guest's to retry */
	fl->l_whence = SEEK_SET;
	fl->l_start = p9_get64(in);
	fl->l_len = p9_get64(in);
	fl->l_pid = 0;
	p9_get32(in);		/* proc_id */
	*client = p9_getstr(in);
	if (in->err || type >= ARRAY_SIZE(lock_types) || fl->l_start < 0 ||
	    fl->l_len < 0)
		return EINVAL;
	if (!fid || fid->fd < 0)
		return EBADF;
	fl->l_type = lock_types[type];
	*fidp = fid;
	return 0;
}

/*
 * A read-only share takes no host lock: a guest that only reads must not
 * hold off the host's writers (a sandbox would hold read locks on the
 * user's databases for as long as it keeps them open). Its locks are its
 * own kernel's, which Linux's 9p client takes locally before it asks;
 * here a read lock waits while a host process holds a write lock
 * (F_OFD_GETLK takes nothing), and a write lock fails as it would on the
 * read-only fd.
 */
static uint8_t lock_read_only(const struct p9_fid *fid, const struct flock *fl)
{
	struct flock probe = *fl;

	if (fl->l_type == F_UNLCK)
		return P9_LOCK_SUCCESS;
	if (fl->l_type != F_RDLCK || fcntl(fid->fd, F_OFD_GETLK, &probe))
		return P9_LOCK_ERROR;
	return probe.l_type == F_UNLCK ? P9_LOCK_SUCCESS : P9_LOCK_BLOCKED;
}

int p9_op_lock(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid;
	struct flock fl;
	struct p9_str client;
	int err = lock_fid(s, in, F_OFD_SETLK, &fid, &fl, &client);

	if (err)
		return err;
	if (s->ro)
		p9_put8(out, lock_read_only(fid, &fl));
	else if (!fcntl(fid->fd, F_OFD_SETLK, &fl))
		p9_put8(out, P9_LOCK_SUCCESS);
	else if (errno == EAGAIN || errno == EACCES)
		p9_put8(out, P9_LOCK_BLOCKED);
	else
		p9_put8(out, P9_LOCK_ERROR);
	return 0;
}

/*
 * What would stop the guest's lock: a host lock or another open's on any
 * share (the same on a read-only one, which holds none of its own). No
 * host process ID goes to the guest.
 */
int p9_op_getlock(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid;
	struct flock fl;
	struct p9_str client;
	int err = lock_fid(s, in, F_OFD_GETLK, &fid, &fl, &client);

	if (err)
		return err;
	if (fcntl(fid->fd, F_OFD_GETLK, &fl))
		return errno;
	p9_put8(out, fl.l_type == F_RDLCK ? P9_LOCK_RDLCK :
		     fl.l_type == F_WRLCK ? P9_LOCK_WRLCK : P9_LOCK_UNLCK);
	p9_put64(out, fl.l_start);
	p9_put64(out, fl.l_len);
	p9_put32(out, 0);
	p9_putstr(out, client.s, client.len);	/* back as it came */
	return 0;
}
