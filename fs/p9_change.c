// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P2000.L operations that change the share: making, linking,
 * renaming and removing names, and attributes. A read-only share refuses
 * each with EROFS before anything is resolved. Names are checked single
 * elements and every *at() call works in a parent directory opened
 * beneath the root, with nothing followed at the last element, so a
 * change lands inside the share or nowhere.
 *
 * Ownership: when lkvm runs as root, a new file belongs to the guest's
 * user and group (the guest's kernel checks permissions as 9P's "user"
 * access says); otherwise to lkvm's user, and a guest's chown is let be.
 * The owner is given through a file descriptor of the new inode, never
 * by its name, which a host process could swap for a link to a file
 * elsewhere in between. Set-user-ID (and, for files, set-group-ID) bits
 * are never set. A fid that holds an open file changes that file, which
 * its name may no longer reach (open, unlink, ftruncate).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

#define P9_SETATTR_MODE		0x001
#define P9_SETATTR_UID		0x002
#define P9_SETATTR_GID		0x004
#define P9_SETATTR_SIZE		0x008
#define P9_SETATTR_ATIME	0x010
#define P9_SETATTR_MTIME	0x020
#define P9_SETATTR_ATIME_SET	0x080
#define P9_SETATTR_MTIME_SET	0x100
#define P9_AT_REMOVEDIR		0x200

static mode_t safe_mode(uint32_t mode, bool dir)
{
	return mode & (dir ? 03777 : 01777);
}

/* A directory fid's path and a checked new name in it. */
static int dir_and_name(struct p9_server *s, uint32_t num, struct p9_str name,
			char elem[P9_NAME_MAX + 1], struct p9_fid **fidp)
{
	struct p9_fid *fid = p9_fid_get(s, num);
	int err;

	if (!fid || fid->kind != P9_FID_PATH)
		return EBADF;
	err = p9_check_name(name.s, name.len);
	if (!err && name.len == 2 && !memcmp(name.s, "..", 2))
		err = EINVAL;
	if (err)
		return err;
	p9_str_copy(name, elem, P9_NAME_MAX + 1);
	*fidp = fid;
	return 0;
}

/*
 * The common start of a change: the request read whole, the share
 * writable, then the directory fid and new name as dir_and_name() says.
 */
static int changing(struct p9_server *s, const struct p9_in *in,
		    uint32_t num, struct p9_str name,
		    char elem[P9_NAME_MAX + 1], struct p9_fid **fidp)
{
	if (in->err)
		return EINVAL;
	if (s->ro)
		return EROFS;
	return dir_and_name(s, num, name, elem, fidp);
}

static int open_dir(struct p9_server *s, const struct p9_fid *fid)
{
	return p9_open_beneath(s, fid->path, O_DIRECTORY);
}

/*
 * The inode at fd, new: its owner as lkvm's policy says (owned: made by
 * us, so the guest's to own), its qid in the reply.
 */
static int made(struct p9_server *s, int fd, bool owned, uint32_t uid,
		uint32_t gid, struct p9_out *out)
{
	struct p9_qid qid;
	struct stat st;

	if (owned && s->set_owner &&
	    fchownat(fd, "", uid, gid, AT_EMPTY_PATH))
		return errno;
	if (fstat(fd, &st))
		return errno;
	p9_stat_qid(s, &st, &qid);
	p9_putqid(out, &qid);
	return 0;
}

/*
 * What mkdirat, symlinkat or mknodat just made as name, of type type:
 * an O_PATH fd of it. When it is to be given away (set_owner), -EIO
 * unless the name still holds an inode this server could have made, so
 * that a host process that swapped it in between gets nothing chowned:
 * ours, and not a link to one elsewhere.
 */
static int made_name(struct p9_server *s, int dirfd, const char *name,
		     mode_t type)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || !s->set_owner)
		return fd < 0 ? -errno : fd;
	/* set_owner: lkvm is root, the owner of all it makes */
	if (fstat(fd, &st) || (st.st_mode & S_IFMT) != type ||
	    st.st_uid != 0 || (!S_ISDIR(type) && st.st_nlink != 1)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/*
 * Open a new regular file, or an old one (a regular file) unless excl;
 * *created says which.
 */
static int create_file(struct p9_server *s, int dirfd, const char *path,
		       const char *name, int flags, mode_t mode,
		       bool *created)
{
	struct stat st;
	int fd, pfd;

	fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW |
				 O_CLOEXEC | O_NOCTTY, mode);
	*created = fd >= 0;
	if (fd >= 0 || errno != EEXIST || (flags & O_EXCL))
		return fd < 0 ? -errno : fd;
	pfd = p9_open_inode(s, path, &st);
	if (pfd < 0)
		return pfd;
	fd = p9_reopen(pfd, &st, flags & ~O_EXCL);
	close(pfd);
	return fd;
}

int p9_op_lcreate(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t num = p9_get32(in);
	struct p9_str name = p9_getstr(in);
	uint32_t flags = p9_get32(in), mode = p9_get32(in), gid = p9_get32(in);
	char elem[P9_NAME_MAX + 1], path[PATH_MAX], *copy;
	struct p9_fid *fid;
	int dirfd, fd, err;
	bool created;

	err = changing(s, in, num, name, elem, &fid);
	if (err)
		return err;
	if (fid->fd >= 0)
		return EBADF;
	if (p9_may_open(s))
		return EMFILE;
	if (p9_path_join(path, fid->path, elem) || !(copy = strdup(path)))
		return ENAMETOOLONG;
	dirfd = open_dir(s, fid);
	if (dirfd < 0) {
		free(copy);
		return -dirfd;
	}
	/* 9P2000.L's open flags are Linux's own values */
	fd = create_file(s, dirfd, path, elem, (flags & (O_ACCMODE | O_EXCL |
				 O_TRUNC | O_APPEND | O_DSYNC | O_SYNC)),
			 safe_mode(mode, false), &created);
	err = fd < 0 ? -fd : made(s, fd, created, fid->uid, gid, out);
	close(dirfd);
	if (err) {
		if (fd >= 0)
			close(fd);
		free(copy);
		return err;
	}
	free(fid->path);
	fid->path = copy;
	p9_fid_opened(s, fid, fd);
	p9_put32(out, 0);	/* iounit */
	return 0;
}

/* mkdir, symlink and mknod: a new name in a directory fid, its qid back. */
struct p9_new_name {
	uint32_t dfid;
	struct p9_str name;
	uint32_t gid;
	mode_t type;		/* S_IFDIR, S_IFLNK...: what make() makes */
};

static int make_name(struct p9_server *s, const struct p9_in *in,
		     const struct p9_new_name *nn, struct p9_out *out,
		     int (*make)(int dirfd, const char *name, const void *arg),
		     const void *arg)
{
	char elem[P9_NAME_MAX + 1];
	struct p9_fid *fid;
	int dirfd, fd, err;

	err = changing(s, in, nn->dfid, nn->name, elem, &fid);
	if (err)
		return err;
	dirfd = open_dir(s, fid);
	if (dirfd < 0)
		return -dirfd;
	err = make(dirfd, elem, arg) ? errno : 0;
	fd = err ? -err : made_name(s, dirfd, elem, nn->type);
	close(dirfd);
	if (fd < 0)
		return -fd;
	err = made(s, fd, true, fid->uid, nn->gid, out);
	close(fd);
	return err;
}

static int do_mkdir(int dirfd, const char *name, const void *arg)
{
	return mkdirat(dirfd, name, *(const mode_t *)arg);
}

int p9_op_mkdir(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_new_name nn = { .dfid = p9_get32(in), .type = S_IFDIR };
	mode_t mode;

	nn.name = p9_getstr(in);
	mode = safe_mode(p9_get32(in), true);
	nn.gid = p9_get32(in);
	return make_name(s, in, &nn, out, do_mkdir, &mode);
}

static int do_symlink(int dirfd, const char *name, const void *arg)
{
	return symlinkat(arg, dirfd, name);
}

int p9_op_symlink(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_new_name nn = { .dfid = p9_get32(in), .type = S_IFLNK };
	struct p9_str target;
	char text[PATH_MAX];

	nn.name = p9_getstr(in);
	target = p9_getstr(in);
	nn.gid = p9_get32(in);
	if (in->err || !target.len || !p9_str_copy(target, text, sizeof(text)))
		return EINVAL;
	/* the text is the guest's: the server never follows it */
	return make_name(s, in, &nn, out, do_symlink, text);
}

struct mknod_arg {
	mode_t mode;
	dev_t dev;
};

static int do_mknod(int dirfd, const char *name, const void *arg)
{
	const struct mknod_arg *m = arg;

	return mknodat(dirfd, name, m->mode, m->dev);
}

int p9_op_mknod(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_new_name nn = { .dfid = p9_get32(in) };
	struct mknod_arg m;
	uint32_t mode;

	nn.name = p9_getstr(in);
	mode = p9_get32(in);
	p9_get32(in);		/* major, minor: no devices, see below */
	p9_get32(in);
	nn.gid = p9_get32(in);
	if (in->err)
		return EINVAL;
	/* a device node would open the host's device to the guest */
	if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISREG(mode))
		return EPERM;
	m.mode = (mode & S_IFMT) | safe_mode(mode, false);
	m.dev = 0;
	nn.type = mode & S_IFMT;
	return make_name(s, in, &nn, out, do_mknod, &m);
}

int p9_op_link(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t dnum = p9_get32(in), num = p9_get32(in);
	struct p9_str name = p9_getstr(in);
	char elem[P9_NAME_MAX + 1];
	struct p9_fid *dfid, *fid = p9_fid_get(s, num);
	const char *old;
	int dirfd, oldfd, err;

	err = changing(s, in, dnum, name, elem, &dfid);
	if (err)
		return err;
	if (!fid || fid->kind != P9_FID_PATH)
		return EBADF;
	oldfd = p9_open_parent(s, fid->path, &old);
	if (oldfd < 0)
		return -oldfd;
	dirfd = open_dir(s, dfid);
	err = dirfd < 0 ? -dirfd : linkat(oldfd, old, dirfd, elem, 0) ? errno : 0;
	if (dirfd >= 0)
		close(dirfd);
	close(oldfd);
	return err;
}

/* rename and renameat: old and new as parent fds and names, then fids. */
static int rename_paths(struct p9_server *s, const char *from, const char *to)
{
	const char *oldname, *newname;
	int oldfd, newfd, err;

	oldfd = p9_open_parent(s, from, &oldname);
	if (oldfd < 0)
		return -oldfd;
	newfd = p9_open_parent(s, to, &newname);
	err = newfd < 0 ? -newfd :
	      renameat(oldfd, oldname, newfd, newname) ? errno : 0;
	if (newfd >= 0)
		close(newfd);
	close(oldfd);
	return err ? err : -p9_fids_renamed(s, from, to);
}

int p9_op_rename(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t num = p9_get32(in), dnum = p9_get32(in);
	struct p9_str name = p9_getstr(in);
	struct p9_fid *fid = p9_fid_get(s, num), *dfid;
	char elem[P9_NAME_MAX + 1], to[PATH_MAX], from[PATH_MAX];
	int err;

	err = changing(s, in, dnum, name, elem, &dfid);
	if (err)
		return err;
	if (!fid || fid->kind != P9_FID_PATH)
		return EBADF;
	if (p9_path_join(to, dfid->path, elem))
		return ENAMETOOLONG;
	strcpy(from, fid->path);
	return rename_paths(s, from, to);
}

int p9_op_renameat(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t olddir = p9_get32(in);
	struct p9_str oldname = p9_getstr(in);
	uint32_t newdir = p9_get32(in);
	struct p9_str newname = p9_getstr(in);
	char oldelem[P9_NAME_MAX + 1], newelem[P9_NAME_MAX + 1];
	char from[PATH_MAX], to[PATH_MAX];
	struct p9_fid *ofid, *nfid;
	int err;

	err = changing(s, in, olddir, oldname, oldelem, &ofid);
	if (!err)
		err = dir_and_name(s, newdir, newname, newelem, &nfid);
	if (err)
		return err;
	if (p9_path_join(from, ofid->path, oldelem) ||
	    p9_path_join(to, nfid->path, newelem))
		return ENAMETOOLONG;
	return rename_paths(s, from, to);
}

int p9_op_unlinkat(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	uint32_t dnum = p9_get32(in);
	struct p9_str name = p9_getstr(in);
	uint32_t flags = p9_get32(in);
	char elem[P9_NAME_MAX + 1];
	struct p9_fid *fid;
	int dirfd, err;

	err = changing(s, in, dnum, name, elem, &fid);
	if (err)
		return err;
	dirfd = open_dir(s, fid);
	if (dirfd < 0)
		return -dirfd;
	err = unlinkat(dirfd, elem, flags & P9_AT_REMOVEDIR ? AT_REMOVEDIR : 0)
		? errno : 0;
	close(dirfd);
	return err;
}

int p9_op_remove(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	const char *name;
	struct stat st;
	int dirfd, err;

	if (in->err)
		return EINVAL;
	if (!fid)
		return EBADF;
	/* Tremove clunks the fid whatever becomes of the file */
	dirfd = s->ro ? -EROFS : fid->kind != P9_FID_PATH ? -EBADF :
		p9_open_parent(s, fid->path, &name);
	err = dirfd < 0 ? -dirfd : 0;
	if (!err && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		err = errno;
	if (!err && unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0))
		err = errno;
	if (dirfd >= 0)
		close(dirfd);
	p9_fid_clunk(s, fid);
	return err;
}

static int set_times(int fd, const struct stat *st, uint32_t valid,
		     const struct timespec given[2])
{
	struct timespec ts[2];
	char proc[P9_PROC_PATH];

	if (S_ISLNK(st->st_mode))
		return 0;	/* a link's own times matter to no one */
	ts[0] = !(valid & P9_SETATTR_ATIME) ? (struct timespec){ 0, UTIME_OMIT } :
		(valid & P9_SETATTR_ATIME_SET) ? given[0] :
		(struct timespec){ 0, UTIME_NOW };
	ts[1] = !(valid & P9_SETATTR_MTIME) ? (struct timespec){ 0, UTIME_OMIT } :
		(valid & P9_SETATTR_MTIME_SET) ? given[1] :
		(struct timespec){ 0, UTIME_NOW };
	p9_proc_path(fd, proc);
	return utimensat(AT_FDCWD, proc, ts, 0) ? errno : 0;
}

struct p9_setattr {
	uint32_t valid, mode, uid, gid;
	uint64_t size;
	struct timespec times[2];
};

static int apply_setattr(struct p9_server *s, int fd, const struct stat *st,
			 const struct p9_setattr *a)
{
	char proc[P9_PROC_PATH];

	p9_proc_path(fd, proc);
	if ((a->valid & P9_SETATTR_MODE) && S_ISLNK(st->st_mode))
		return EOPNOTSUPP;
	if ((a->valid & P9_SETATTR_MODE) &&
	    chmod(proc, safe_mode(a->mode, S_ISDIR(st->st_mode))))
		return errno;
	if ((a->valid & (P9_SETATTR_UID | P9_SETATTR_GID)) && s->set_owner &&
	    fchownat(fd, "", a->valid & P9_SETATTR_UID ? a->uid : (uid_t)-1,
		     a->valid & P9_SETATTR_GID ? a->gid : (gid_t)-1,
		     AT_EMPTY_PATH))
		return errno;
	if (a->valid & P9_SETATTR_SIZE) {
		if (!S_ISREG(st->st_mode))
			return S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
		if (a->size > INT64_MAX || truncate(proc, a->size))
			return a->size > INT64_MAX ? EFBIG : errno;
	}
	if (a->valid & (P9_SETATTR_ATIME | P9_SETATTR_MTIME))
		return set_times(fd, st, a->valid, a->times);
	return 0;
}

int p9_op_setattr(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	struct p9_setattr a;
	struct stat st;
	int fd, err;

	a.valid = p9_get32(in);
	a.mode = p9_get32(in);
	a.uid = p9_get32(in);
	a.gid = p9_get32(in);
	a.size = p9_get64(in);
	a.times[0].tv_sec = p9_get64(in);
	a.times[0].tv_nsec = p9_get64(in);
	a.times[1].tv_sec = p9_get64(in);
	a.times[1].tv_nsec = p9_get64(in);
	if (in->err)
		return EINVAL;
	if (!fid || fid->kind != P9_FID_PATH)
		return EBADF;
	if (s->ro)
		return EROFS;
	fd = p9_fid_inode(s, fid, &st, false);
	if (fd < 0)
		return -fd;
	err = apply_setattr(s, fd, &st, &a);
	p9_fid_inode_done(fid, fd);
	return err;
}
