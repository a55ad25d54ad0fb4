// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P server's fids and paths. A fid is a path relative to the share's
 * root, resolved again beneath the root for every operation: the kernel's
 * openat2() does the confining, and a fid never holds a directory fd a
 * host-side rename could move outside the share. ".." is taken off the
 * path by hand (there is no symlink in a path the server accepted, so the
 * text's parent is the directory's parent), and stops at the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

static unsigned int fid_bucket(uint32_t num)
{
	return (num * 2654435761u) >> 24;
}

struct p9_fid *p9_fid_get(struct p9_server *s, uint32_t num)
{
	struct p9_fid *fid = s->fid_hash[fid_bucket(num)];

	while (fid && fid->num != num)
		fid = fid->next;
	return fid;
}

struct p9_fid *p9_fid_new(struct p9_server *s, uint32_t num, const char *path,
			  int *err)
{
	struct p9_fid *fid;
	unsigned int b = fid_bucket(num);

	*err = 0;
	if (num == P9_NOFID || p9_fid_get(s, num))
		*err = EBADF;
	else if (s->nr_fids >= P9_MAX_FIDS)
		*err = EMFILE;
	if (*err)
		return NULL;
	fid = calloc(1, sizeof(*fid));
	if (fid && !(fid->path = strdup(path))) {
		free(fid);
		fid = NULL;
	}
	if (!fid) {
		*err = ENOMEM;
		return NULL;
	}
	fid->num = num;
	fid->fd = -1;
	fid->next = s->fid_hash[b];
	s->fid_hash[b] = fid;
	s->nr_fids++;
	return fid;
}

void p9_fid_clunk(struct p9_server *s, struct p9_fid *fid)
{
	struct p9_fid **pp = &s->fid_hash[fid_bucket(fid->num)];

	while (*pp != fid)
		pp = &(*pp)->next;
	*pp = fid->next;
	s->nr_fids--;
	if (fid->fd >= 0) {
		close(fid->fd);
		s->nr_open--;
	}
	s->xattr_bytes -= fid->xattr_held;
	free(fid->path);
	free(fid->xattr);
	free(fid->xattr_name);
	free(fid);
}

void p9_fid_opened(struct p9_server *s, struct p9_fid *fid, int fd)
{
	fid->fd = fd;
	s->nr_open++;
}

int p9_may_open(const struct p9_server *s)
{
	return s->nr_open < P9_MAX_OPEN ? 0 : EMFILE;
}

void p9_fid_clunk_all(struct p9_server *s)
{
	unsigned int b;

	for (b = 0; b < ARRAY_SIZE(s->fid_hash); b++)
		while (s->fid_hash[b])
			p9_fid_clunk(s, s->fid_hash[b]);
}

/* Is path `from` itself or below it? Then *rest is what follows. */
static bool path_under(const char *path, const char *from, const char **rest)
{
	size_t n = strlen(from);

	if (!n) {
		*rest = path;
		return true;
	}
	if (strncmp(path, from, n) || (path[n] && path[n] != '/'))
		return false;
	*rest = path + n;
	return true;
}

int p9_fids_renamed(struct p9_server *s, const char *from, const char *to)
{
	unsigned int b;
	struct p9_fid *fid;
	const char *rest;
	char buf[PATH_MAX];

	for (b = 0; b < ARRAY_SIZE(s->fid_hash); b++)
		for (fid = s->fid_hash[b]; fid; fid = fid->next) {
			char *moved;

			if (!path_under(fid->path, from, &rest))
				continue;
			if ((size_t)snprintf(buf, sizeof(buf), "%s%s", to,
					     rest) >= sizeof(buf))
				return -ENAMETOOLONG;
			if (!(moved = strdup(buf)))
				return -ENOMEM;
			free(fid->path);
			fid->path = moved;
		}
	return 0;
}

int p9_check_name(const char *name, size_t len)
{
	if (!len || len > P9_NAME_MAX)
		return len ? ENAMETOOLONG : EINVAL;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return EINVAL;
	if (len == 1 && name[0] == '.')
		return EINVAL;
	return 0;
}

int p9_path_join(char *buf, const char *dir, const char *name)
{
	int n = *dir ? snprintf(buf, PATH_MAX, "%s/%s", dir, name) :
		       snprintf(buf, PATH_MAX, "%s", name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

void p9_path_parent(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash)
		*slash = '\0';
	else
		*path = '\0';
}

int p9_open_beneath(struct p9_server *s, const char *path, int flags,
		    mode_t mode)
{
	/* openat2 takes nothing but these three with O_PATH */
	struct open_how how = {
		.flags = flags | O_CLOEXEC | O_NOFOLLOW |
			 ((flags & O_PATH) ? 0 : O_NOCTTY),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, s->root_fd, *path ? path : ".", &how,
			     sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

int p9_open_parent(struct p9_server *s, const char *path, const char **name)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!*path)
		return -EBUSY;		/* the root has no parent here */
	*name = slash ? slash + 1 : path;
	snprintf(parent, sizeof(parent), "%.*s",
		 slash ? (int)(slash - path) : 0, path);
	return p9_open_beneath(s, parent, O_PATH | O_DIRECTORY, 0);
}

static unsigned int dev_index(struct p9_server *s, uint64_t dev)
{
	unsigned int i;

	for (i = 0; i < s->nr_devs; i++)
		if (s->devs[i] == dev)
			return i;
	if (s->nr_devs < ARRAY_SIZE(s->devs)) {
		s->devs[s->nr_devs] = dev;
		return s->nr_devs++;
	}
	/* past 16 file systems: mix the device in and hope */
	return 16 + (dev * 2654435761u) % 0xfff0;
}

void p9_stat_qid(struct p9_server *s, const struct stat *st,
		 struct p9_qid *qid)
{
	qid->type = S_ISDIR(st->st_mode) ? P9_QTDIR :
		    S_ISLNK(st->st_mode) ? P9_QTSYMLINK : P9_QTFILE;
	/* the guest's page cache keys on it: a change must change it */
	qid->version = (uint32_t)(st->st_mtim.tv_sec ^ st->st_mtim.tv_nsec ^
				  st->st_size);
	qid->path = (st->st_ino & 0xffffffffffffull) ^
		    ((uint64_t)dev_index(s, st->st_dev) << 48);
}

int p9_open_inode(struct p9_server *s, const char *path, struct stat *st)
{
	int fd = p9_open_beneath(s, path, O_PATH, 0);

	if (fd >= 0 && fstat(fd, st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int p9_fid_inode(struct p9_server *s, const struct p9_fid *fid,
		 struct stat *st)
{
	if (fid->fd < 0)
		return p9_open_inode(s, fid->path, st);
	return fstat(fid->fd, st) ? -errno : fid->fd;
}

void p9_fid_inode_done(const struct p9_fid *fid, int fd)
{
	if (fd != fid->fd)
		close(fd);
}

void p9_proc_path(int fd, char buf[P9_PROC_PATH])
{
	snprintf(buf, P9_PROC_PATH, "/proc/self/fd/%d", fd);
}
