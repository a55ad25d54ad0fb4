// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P2000.L server's front: a message's header checked, its operation
 * found and run, and the reply (or an Rlerror with the errno the host
 * gave) framed. The operations live in p9_ops.c, p9_dir.c and p9_xattr.c.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "p9_internal.h"

#define P9_HEADER_SIZE	7

static const p9_op_fn ops[256] = {
	[P9_TSTATFS] = p9_op_statfs,
	[P9_TLOPEN] = p9_op_lopen,
	[P9_TLCREATE] = p9_op_lcreate,
	[P9_TSYMLINK] = p9_op_symlink,
	[P9_TMKNOD] = p9_op_mknod,
	[P9_TRENAME] = p9_op_rename,
	[P9_TREADLINK] = p9_op_readlink,
	[P9_TGETATTR] = p9_op_getattr,
	[P9_TSETATTR] = p9_op_setattr,
	[P9_TXATTRWALK] = p9_op_xattrwalk,
	[P9_TXATTRCREATE] = p9_op_xattrcreate,
	[P9_TREADDIR] = p9_op_readdir,
	[P9_TFSYNC] = p9_op_fsync,
	[P9_TLOCK] = p9_op_lock,
	[P9_TGETLOCK] = p9_op_getlock,
	[P9_TLINK] = p9_op_link,
	[P9_TMKDIR] = p9_op_mkdir,
	[P9_TRENAMEAT] = p9_op_renameat,
	[P9_TUNLINKAT] = p9_op_unlinkat,
	[P9_TVERSION] = p9_op_version,
	[P9_TATTACH] = p9_op_attach,
	[P9_TFLUSH] = p9_op_flush,
	[P9_TWALK] = p9_op_walk,
	[P9_TREAD] = p9_op_read,
	[P9_TWRITE] = p9_op_write,
	[P9_TCLUNK] = p9_op_clunk,
	[P9_TREMOVE] = p9_op_remove,
};

/*
 * The fixed part of each reply: a request whose chain has no room for it
 * is refused before it changes anything (a walk checks its own, which
 * grows with its names; reads and readdirs fill what room there is).
 */
static const uint8_t reply_room[256] = {
	[P9_TVERSION] = 4 + 2 + 8,
	[P9_TATTACH] = P9_QID_SIZE,
	[P9_TLOPEN] = P9_QID_SIZE + 4,
	[P9_TLCREATE] = P9_QID_SIZE + 4,
	[P9_TREAD] = 4,
	[P9_TWRITE] = 4,
	[P9_TGETATTR] = 8 + P9_QID_SIZE + 3 * 4 + 15 * 8,
	[P9_TSTATFS] = 4 + 4 + 6 * 8 + 4,
	[P9_TREADDIR] = 4,
	[P9_TMKDIR] = P9_QID_SIZE,
	[P9_TSYMLINK] = P9_QID_SIZE,
	[P9_TMKNOD] = P9_QID_SIZE,
	[P9_TXATTRWALK] = 8,
	[P9_TLOCK] = 1,
};

void p9_server_init(struct p9_server *s, int root_fd, bool ro)
{
	memset(s, 0, sizeof(*s));
	s->root_fd = root_fd;
	s->ro = ro;
	s->set_owner = geteuid() == 0;
	s->msize = P9_MAX_MSIZE;
}

void p9_server_exit(struct p9_server *s)
{
	p9_fid_clunk_all(s);
	if (s->root_fd >= 0)
		close(s->root_fd);
	s->root_fd = -1;
}

void p9_server_reset(struct p9_server *s)
{
	p9_fid_clunk_all(s);
	s->msize = P9_MAX_MSIZE;
}

static void put_header(struct p9_out *out, uint8_t type, uint16_t tag)
{
	p9_put32(out, out->len);	/* patched when the length is known */
	p9_put8(out, type);
	p9_put16(out, tag);
}

static size_t finish(struct p9_out *out)
{
	p9_patch32(out->buf, out->len);
	return out->len;
}

static size_t reply_error(struct p9_server *s, struct p9_out *out,
			  uint16_t tag, int err)
{
	out->len = 0;
	out->err = false;
	put_header(out, P9_RLERROR, tag);
	p9_put32(out, err);
	s->errors++;
	return finish(out);
}

size_t p9_handle(struct p9_server *s, const uint8_t *req, size_t req_len,
		 uint8_t *reply, size_t cap)
{
	struct p9_in in = { req, req_len, false };
	struct p9_out out = { reply, MIN(cap, (size_t)s->msize), 0, false };
	uint32_t size;
	uint8_t type;
	uint16_t tag;
	int err;

	if (cap < P9_ERROR_SIZE)
		return 0;
	size = p9_get32(&in);
	type = p9_get8(&in);
	tag = p9_get16(&in);
	if (in.err || size < P9_HEADER_SIZE || size > req_len)
		return reply_error(s, &out, tag, EINVAL);
	/* a Tversion may be bigger than what an old msize allows */
	if (size > s->msize && type != P9_TVERSION)
		return reply_error(s, &out, tag, EMSGSIZE);
	in.left = size - P9_HEADER_SIZE;
	if (!(type & 1) && ops[type] == NULL)
		return reply_error(s, &out, tag, EOPNOTSUPP);
	if (type & 1)
		return reply_error(s, &out, tag, EINVAL);	/* an R-message */
	if (out.cap - P9_HEADER_SIZE < reply_room[type])
		return reply_error(s, &out, tag, EMSGSIZE);
	put_header(&out, type + 1, tag);
	err = ops[type](s, &in, &out);
	if (!err && in.err)
		err = EINVAL;
	if (!err && out.err)
		err = EMSGSIZE;
	return err ? reply_error(s, &out, tag, err) : finish(&out);
}
