// SPDX-License-Identifier: GPL-2.0
/*
 * Treaddir: a directory opened by Tlopen, read with getdents64 from the
 * offset the guest names (the d_off of the last entry it got, 0 to start
 * over), as many entries as fit in its count and in the reply.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

#define DIRENT_BUF	16384
#define ENTRY_FIXED	(P9_QID_SIZE + 8 + 1 + 2)	/* qid offset type name[s] */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	uint16_t d_reclen;
	uint8_t d_type;
	char d_name[];
};

#define DIRENT_NAME	offsetof(struct linux_dirent64, d_name)

static uint8_t dtype_qid(uint8_t type)
{
	return type == DT_DIR ? P9_QTDIR : type == DT_LNK ? P9_QTSYMLINK :
					P9_QTFILE;
}

/*
 * One entry, unless it does not fit in budget bytes. The root's ".."
 * is the root itself: the share's parent is not the guest's to see.
 */
static bool put_entry(struct p9_server *s, struct p9_out *out,
		      const struct linux_dirent64 *d, const struct stat *dir,
		      bool root, size_t *budget)
{
	size_t len = strnlen(d->d_name, d->d_reclen - DIRENT_NAME);
	struct stat st = *dir;
	struct p9_qid qid;

	if (ENTRY_FIXED + len > *budget)
		return false;
	*budget -= ENTRY_FIXED + len;
	if (!(root && !strcmp(d->d_name, "..")))
		st.st_ino = d->d_ino;
	p9_stat_qid(s, &st, &qid);
	qid.type = dtype_qid(d->d_type);
	qid.version = 0;
	p9_putqid(out, &qid);
	p9_put64(out, d->d_off);
	p9_put8(out, d->d_type);
	p9_putstr(out, d->d_name, len);
	return true;
}

static int read_entries(struct p9_server *s, struct p9_fid *fid,
			struct p9_out *out, size_t budget, uint32_t *bytes)
{
	static __thread uint8_t buf[DIRENT_BUF];
	size_t start = out->len;
	struct stat dir;

	if (fstat(fid->fd, &dir))
		return errno;
	for (;;) {
		long n = getdents64(fid->fd, buf, MIN(sizeof(buf),
						      budget + 512));
		long pos = 0;

		if (n < 0)
			return errno;
		if (n == 0)
			break;
		while (pos < n) {
			const struct linux_dirent64 *d = (void *)(buf + pos);

			if (d->d_reclen < DIRENT_NAME + 1 ||
			    d->d_reclen > n - pos)
				return EIO;
			if (!put_entry(s, out, d, &dir, !*fid->path, &budget))
				goto full;
			pos += d->d_reclen;
		}
	}
full:
	*bytes = out->len - start;
	return 0;
}

int p9_op_readdir(struct p9_server *s, struct p9_in *in, struct p9_out *out)
{
	struct p9_fid *fid = p9_fid_get(s, p9_get32(in));
	uint64_t offset = p9_get64(in);
	uint32_t count = p9_get32(in), bytes = 0;
	uint8_t *countp;
	size_t budget;
	int err;

	if (in->err)
		return EINVAL;
	if (!fid || fid->kind != P9_FID_PATH || fid->fd < 0 || !fid->dir)
		return EBADF;
	if (offset > INT64_MAX || lseek(fid->fd, offset, SEEK_SET) < 0)
		return offset > INT64_MAX ? EINVAL : errno;
	countp = p9_reserve(out, 4);
	if (!countp)
		return EMSGSIZE;
	budget = MIN((size_t)count, out->cap - out->len);
	err = read_entries(s, fid, out, budget, &bytes);
	if (err)
		return err;
	p9_patch32(countp, bytes);
	return 0;
}
