// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P server's fids and paths. A fid is a path relative to the share's
 * root, resolved again beneath the root for every operation: the kernel's
 * openat2() does the confining, and a fid never holds a directory fd a
 * host-side rename could move outside the share. ".." is taken off the
 * path by hand (there is no symlink in a path the server accepted, so the
 * text's parent is the directory's parent), and stops at the root.
 * Every inode the server resolves is checked on its file descriptor for
 * the file system it is on: kernel interfaces (proc, sysfs...) are
 * refused, wherever they are mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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

/*
 * Kernel interfaces, not files: their inodes are the host's processes
 * (proc: every process's memory, environment, file descriptors), its
 * devices and drivers (sysfs, configfs, debugfs, tracefs, usbdevfs), its
 * security state (securityfs, selinuxfs, smackfs, efivarfs, pstore),
 * its cgroups, BPF objects, namespaces, binfmt_misc handlers (a new
 * interpreter for every exec), FUSE connections, message queues and the
 * NFS server's and RPC pipes' controls. None is the user's data, and a
 * read or write of one acts on the host, so no share serves them,
 * wherever they are mounted. The magic numbers are the kernel's; uapi's
 * <linux/magic.h> lacks a few. Left out on purpose: tmpfs and
 * hugetlbfs (files like any other), devpts (character devices, which are
 * never opened anyway) and autofs (what it mounts is checked in turn).
 */
static const struct kernel_fs {
	unsigned long magic;
	const char *name;
} kernel_fses[] = {
	{ PROC_SUPER_MAGIC, "proc" },
	{ SYSFS_MAGIC, "sysfs" },
	{ DEBUGFS_MAGIC, "debugfs" },
	{ TRACEFS_MAGIC, "tracefs" },
	{ SECURITYFS_MAGIC, "securityfs" },
	{ CGROUP_SUPER_MAGIC, "cgroup" },
	{ CGROUP2_SUPER_MAGIC, "cgroup2" },
	{ BPF_FS_MAGIC, "bpf" },
	{ 0x62656570, "configfs" },
	{ EFIVARFS_MAGIC, "efivarfs" },
	{ PSTOREFS_MAGIC, "pstore" },
	{ SELINUX_MAGIC, "selinuxfs" },
	{ SMACK_MAGIC, "smackfs" },
	{ BINFMTFS_MAGIC, "binfmt_misc" },
	{ 0x65735543, "fusectl" },
	{ NSFS_MAGIC, "nsfs" },
	{ RDTGROUP_SUPER_MAGIC, "resctrl" },
	{ 0x19800202, "mqueue" },
	{ 0x6e667364, "nfsd" },
	{ 0x67596969, "rpc_pipefs" },
	{ XENFS_SUPER_MAGIC, "xenfs" },
	{ USBDEVICE_SUPER_MAGIC, "usbdevfs" },
};

/* The kernel file system fd is on, or NULL; *err when fstatfs fails. */
static const char *kernel_fs_of(int fd, int *err)
{
	struct statfs sf;
	size_t i;

	*err = fstatfs(fd, &sf) ? errno : 0;
	for (i = 0; !*err && i < ARRAY_SIZE(kernel_fses); i++)
		if ((unsigned long)sf.f_type == kernel_fses[i].magic)
			return kernel_fses[i].name;
	return NULL;
}

const char *p9_kernel_fs(int fd)
{
	int err;

	return kernel_fs_of(fd, &err);
}

/* Is fd's inode a directory some mount has as its root? */
static bool mount_root_dir(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE,
		  &stx))
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
	       S_ISDIR(stx.stx_mode);
}

/*
 * 0 if the server may use fd, or the errno that refuses it: always the
 * file descriptor's own file system, never the path's text, so a mount
 * or bind anywhere, made at any time, changes nothing. The one kernel
 * inode a fid may name (naming) is the root directory of such a mount,
 * for the guest to mount its own proc or sysfs on (lkvm sandbox does);
 * nothing below it is reached, and nothing opens, lists or changes it.
 */
static int check_inode(int fd, bool naming)
{
	int err;

	if (!kernel_fs_of(fd, &err))
		return err;
	return naming && mount_root_dir(fd) ? 0 : EACCES;
}

static int resolve_beneath(struct p9_server *s, const char *path, int flags,
			   bool naming)
{
	/* openat2 takes nothing but these three with O_PATH */
	struct open_how how = {
		.flags = flags | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int err;

	do
		fd = syscall(SYS_openat2, s->root_fd, *path ? path : ".", &how,
			     sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	if (fd < 0)
		return -errno;
	err = check_inode(fd, naming);
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

int p9_open_beneath(struct p9_server *s, const char *path, int flags)
{
	return resolve_beneath(s, path, O_PATH | flags, false);
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
	return p9_open_beneath(s, parent, O_DIRECTORY);
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

static int inode_stat(int fd, struct stat *st)
{
	int err;

	if (fd < 0 || !fstat(fd, st))
		return fd;
	err = -errno;
	close(fd);
	return err;
}

int p9_open_inode(struct p9_server *s, const char *path, struct stat *st)
{
	return inode_stat(resolve_beneath(s, path, O_PATH, false), st);
}

int p9_name_inode(struct p9_server *s, const char *path, struct stat *st)
{
	return inode_stat(resolve_beneath(s, path, O_PATH, true), st);
}

int p9_fid_inode(struct p9_server *s, const struct p9_fid *fid,
		 struct stat *st, bool naming)
{
	if (fid->fd < 0)
		return naming ? p9_name_inode(s, fid->path, st) :
				p9_open_inode(s, fid->path, st);
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
