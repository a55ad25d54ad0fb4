// SPDX-License-Identifier: GPL-2.0
/*
 * Extended attributes, 9P2000.L style: Txattrwalk makes a fid holding
 * one attribute's value (or, for an empty name, the list of names), read
 * with Tread; Txattrcreate turns a fid into one that collects a value
 * with Twrite and sets it at Tclunk. Values are at most 64 KiB (Linux's
 * limit), and all a share's xattr fids hold at most P9_XATTR_TOTAL, so a
 * guest cannot make lkvm hold more by keeping fids. Guests set user.* only:
 * security.* and trusted.* on the host are not a guest's to write (file
 * capabilities, SELinux labels). Symlinks have none here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

#define XATTR_CREATE_FLAGS	(XATTR_CREATE | XATTR_REPLACE)

/* The value of name (the name list if empty) into buf, size bytes; -errno. */
static ssize_t get_xattr(const char *proc, const char *name, void *buf,
			 size_t size)
{
	ssize_t n = *name ? getxattr(proc, name, buf, size) :
			    listxattr(proc, buf, size);

	return n < 0 ? -errno : n;
}

/*
 * The value (name non-empty) or name list of the inode fid names,
 * malloc'd to its size. Linux asks for security.capability before every
 * write: the size is asked first, so an attribute that is not there (the
 * usual answer) costs one call and no allocation.
 */
static ssize_t fetch_xattr(struct p9_server *s, const struct p9_fid *fid,
			   const char *name, uint8_t **value)
{
	char proc[P9_PROC_PATH];
	struct stat st;
	ssize_t n;
	int fd = p9_fid_inode(s, fid, &st, false);

	*value = NULL;
	if (fd < 0)
		return fd;
	if (S_ISLNK(st.st_mode)) {
		p9_fid_inode_done(fid, fd);
		return *name ? -ENODATA : 0;
	}
	p9_proc_path(fd, proc);
	n = get_xattr(proc, name, NULL, 0);
	if (n > P9_XATTR_MAX)
		n = -E2BIG;
	if (n >= 0 && !(*value = malloc(n ? n : 1)))
		n = -ENOMEM;
	if (n > 0)
		n = get_xattr(proc, name, *value, n);	/* ERANGE: it grew */
	p9_fid_inode_done(fid, fd);
	if (n < 0) {
		free(*value);
		*value = NULL;
	}
	return n;
}

int p9_op_xattrwalk(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in)), *nf;
	uint32_t newnum = p9_get32(in);
	struct p9_str name = p9_getstr(in);
	char cname[P9_NAME_MAX + 1];
	uint8_t *value;
	ssize_t n;
	int err;

	if (in->err || !p9_str_copy(name, cname, sizeof(cname)))
		return EINVAL;
	if (!fid || fid->kind != P9_FID_PATH || p9_fid_get(s, newnum))
		return EBADF;
	n = fetch_xattr(s, fid, cname, &value);
	if (n < 0)
		return -n;
	nf = s->xattr_bytes + n > P9_XATTR_TOTAL ? NULL :
	     p9_fid_new(s, newnum, fid->path, &err);
	if (!nf) {
		free(value);
		return s->xattr_bytes + n > P9_XATTR_TOTAL ? ENOMEM : err;
	}
	nf->kind = P9_FID_XATTR_READ;
	nf->xattr = value;
	nf->xattr_len = n;
	nf->xattr_held = n;
	s->xattr_bytes += n;
	p9_put64(out, n);
	return 0;
}

int p9_op_xattrcreate(struct p9_server *s, struct p9_in *in,
		      struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	struct p9_str name = p9_getstr(in);
	uint64_t size = p9_get64(in);
	uint32_t flags = p9_get32(in);
	char cname[P9_NAME_MAX + 1];

	if (in->err || !p9_str_copy(name, cname, sizeof(cname)) ||
	    (flags & ~XATTR_CREATE_FLAGS))
		return EINVAL;
	if (!fid || fid->kind != P9_FID_PATH || fid->fd >= 0)
		return EBADF;
	if (s->ro)
		return EROFS;
	if (strncmp(cname, "user.", 5))
		return EPERM;
	if (size > P9_XATTR_MAX)
		return E2BIG;
	if (s->xattr_bytes + size > P9_XATTR_TOTAL)
		return ENOSPC;
	if (!(fid->xattr_name = strdup(cname)) ||
	    !(fid->xattr = malloc(size ? size : 1)))
		return ENOMEM;
	fid->kind = P9_FID_XATTR_WRITE;
	fid->xattr_size = size;
	fid->xattr_held = size;
	s->xattr_bytes += size;
	fid->xattr_len = 0;
	fid->xattr_flags = flags;
	return 0;
}

int p9_xattr_commit(struct p9_server *s, struct p9_fid *fid)
{
	char proc[P9_PROC_PATH];
	struct stat st;
	int fd, err = 0;

	fd = p9_open_inode(s, fid->path, &st);
	if (fd < 0)
		return fd;
	p9_proc_path(fd, proc);
	if (S_ISLNK(st.st_mode))
		err = -EPERM;
	else if (!fid->xattr_size && removexattr(proc, fid->xattr_name))
		err = -errno;
	else if (fid->xattr_size &&
		 setxattr(proc, fid->xattr_name, fid->xattr, fid->xattr_len,
			  fid->xattr_flags))
		err = -errno;
	close(fd);
	return err;
}
