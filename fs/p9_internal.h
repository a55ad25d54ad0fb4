/* SPDX-License-Identifier: GPL-2.0 */
/* The 9P server's parts: the wire format, the fids, the operations. */
#ifndef LKVM_FS_P9_INTERNAL_H
#define LKVM_FS_P9_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "lkvm/p9.h"

#define P9_NOFID	0xffffffffu
#define P9_MAX_WALK	16		/* names per Twalk, as the protocol says */
#define P9_NAME_MAX	255
#define P9_XATTR_MAX	(64 * 1024)	/* Linux's XATTR_SIZE_MAX */

/* Message types (9P2000.L and the 9P2000 ones it keeps). */
enum {
	P9_RLERROR = 7,
	P9_TSTATFS = 8, P9_TLOPEN = 12, P9_TLCREATE = 14, P9_TSYMLINK = 16,
	P9_TMKNOD = 18, P9_TRENAME = 20, P9_TREADLINK = 22, P9_TGETATTR = 24,
	P9_TSETATTR = 26, P9_TXATTRWALK = 30, P9_TXATTRCREATE = 32,
	P9_TREADDIR = 40, P9_TFSYNC = 50, P9_TLOCK = 52, P9_TGETLOCK = 54,
	P9_TLINK = 70, P9_TMKDIR = 72, P9_TRENAMEAT = 74, P9_TUNLINKAT = 76,
	P9_TVERSION = 100, P9_TAUTH = 102, P9_TATTACH = 104, P9_TFLUSH = 108,
	P9_TWALK = 110, P9_TREAD = 116, P9_TWRITE = 118, P9_TCLUNK = 120,
	P9_TREMOVE = 122,
};

#define P9_QTDIR	0x80
#define P9_QTSYMLINK	0x02
#define P9_QTFILE	0x00
#define P9_QID_SIZE	13

/* A request being read: a bounds-checked cursor; a short read sets err. */
struct p9_in {
	const uint8_t *p;
	size_t left;
	bool err;
};

/* A reply being written into a buffer of fixed size; overflow sets err. */
struct p9_out {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool err;
};

/* A counted string in the request; not NUL-terminated. */
struct p9_str {
	const char *s;
	uint16_t len;
};

struct p9_qid {
	uint8_t type;
	uint32_t version;
	uint64_t path;
};

uint8_t p9_get8(struct p9_in *in);
uint16_t p9_get16(struct p9_in *in);
uint32_t p9_get32(struct p9_in *in);
uint64_t p9_get64(struct p9_in *in);
struct p9_str p9_getstr(struct p9_in *in);
/* The string as a C string in buf (NUL-free, < size), or false. */
bool p9_str_copy(struct p9_str str, char *buf, size_t size);

void p9_put8(struct p9_out *out, uint8_t v);
void p9_put16(struct p9_out *out, uint16_t v);
void p9_put32(struct p9_out *out, uint32_t v);
void p9_put64(struct p9_out *out, uint64_t v);
void p9_putstr(struct p9_out *out, const char *s, size_t len);
void p9_putqid(struct p9_out *out, const struct p9_qid *qid);
/* Fill in a count reserved earlier. */
void p9_patch32(uint8_t *p, uint32_t v);
/* Room for n bytes the caller fills itself; NULL (and err) if none. */
uint8_t *p9_reserve(struct p9_out *out, size_t n);

/*
 * A fid: a path relative to the share's root ("" is the root, no leading
 * or doubled slashes, no "." or ".."), and what the guest opened there.
 */
enum p9_fid_kind {
	P9_FID_PATH,		/* walked to; maybe opened (fd >= 0) */
	P9_FID_XATTR_READ,	/* Txattrwalk: the value or the name list */
	P9_FID_XATTR_WRITE,	/* Txattrcreate: set at clunk */
};

struct p9_fid {
	uint32_t num;
	enum p9_fid_kind kind;
	uint32_t uid;			/* the attaching user's, for new files */
	char *path;
	int fd;				/* -1 until lopen/lcreate */
	bool dir;			/* opened as a directory: readdir */
	/* xattr fids: the value (read) or what is being written */
	uint8_t *xattr;
	size_t xattr_len;
	size_t xattr_size;
	size_t xattr_held;		/* counted in the server's xattr_bytes */
	char *xattr_name;
	int xattr_flags;
	struct p9_fid *next;
};

struct p9_fid *p9_fid_get(struct p9_server *s, uint32_t num);
/* A new fid for path (copied); NULL with *err = EBADF (in use), EMFILE... */
struct p9_fid *p9_fid_new(struct p9_server *s, uint32_t num, const char *path,
			  int *err);
void p9_fid_clunk(struct p9_server *s, struct p9_fid *fid);
/* fid now holds host fd fd (counted against P9_MAX_OPEN). */
void p9_fid_opened(struct p9_server *s, struct p9_fid *fid, int fd);
/* Room for another open fid? 0 or EMFILE. */
int p9_may_open(const struct p9_server *s);
void p9_fid_clunk_all(struct p9_server *s);
/* After a rename: every fid at or under from now names the same under to. */
int p9_fids_renamed(struct p9_server *s, const char *from, const char *to);

/*
 * Path arithmetic on share-relative paths: join dir and one checked
 * name into buf (PATH_MAX), or take the last element off; -errno.
 */
int p9_path_join(char *buf, const char *dir, const char *name);
void p9_path_parent(char *path);

/*
 * Open path beneath the root as an O_PATH fd (flags: more open flags,
 * such as O_DIRECTORY), never following a symlink anywhere in it (the
 * last element too: a symlink itself is opened). An inode on a kernel
 * interface file system (proc, sysfs...: see p9_fid.c) is refused with
 * EACCES. Returns the fd or -errno.
 */
int p9_open_beneath(struct p9_server *s, const char *path, int flags);
/* path's inode (O_PATH, fd returned) and its stat; -errno. */
int p9_open_inode(struct p9_server *s, const char *path, struct stat *st);
/*
 * The same for a walk or a Tgetattr, which only name an inode: these
 * also reach the root directory of a kernel file system's mount (where
 * the guest mounts its own), and nothing else of one.
 */
int p9_name_inode(struct p9_server *s, const char *path, struct stat *st);
/*
 * The inode fid names and its stat: the fid's own open fd when it has
 * one (a file the guest opened and then unlinked is still there), else
 * one opened by path as p9_name_inode() (naming) or p9_open_inode()
 * does. Give it back with p9_fid_inode_done(). fd or -errno.
 */
int p9_fid_inode(struct p9_server *s, const struct p9_fid *fid,
		 struct stat *st, bool naming);
void p9_fid_inode_done(const struct p9_fid *fid, int fd);
/*
 * The name of an O_PATH fd's inode that reopens it for real or changes
 * it (chmod, truncate, times, xattrs): the kernel goes straight to that
 * inode, so it cannot be anything outside the share. Never for symlinks.
 */
#define P9_PROC_PATH	32
void p9_proc_path(int fd, char buf[P9_PROC_PATH]);
/*
 * Open for real (flags as open()) what an O_PATH fd with stat st names:
 * regular files and directories only. fd or -errno.
 */
int p9_reopen(int path_fd, const struct stat *st, int flags);
/* The parent directory of path (O_PATH) and path's last element. */
int p9_open_parent(struct p9_server *s, const char *path, const char **name);

void p9_stat_qid(struct p9_server *s, const struct stat *st,
		 struct p9_qid *qid);

/* One operation: reads its request from in, writes its reply body (after
 * the header) to out; 0, or the errno for an Rlerror. */
typedef int (*p9_op_fn)(struct p9_server *s, struct p9_in *in,
			struct p9_out *out);

int p9_op_version(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_attach(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_walk(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_clunk(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_remove(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_flush(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_getattr(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_setattr(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_statfs(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_readlink(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_lopen(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_lcreate(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_read(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_write(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_readdir(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_fsync(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_lock(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_getlock(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_mkdir(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_symlink(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_mknod(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_link(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_rename(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_renameat(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_unlinkat(struct p9_server *s, struct p9_in *in, struct p9_out *out);
int p9_op_xattrwalk(struct p9_server *s, struct p9_in *in,
		    struct p9_out *out);
int p9_op_xattrcreate(struct p9_server *s, struct p9_in *in,
		      struct p9_out *out);
/* A Txattrcreate fid's value, set when it is clunked: 0 or -errno. */
int p9_xattr_commit(struct p9_server *s, struct p9_fid *fid);

#endif
