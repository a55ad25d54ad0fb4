/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A 9P2000.L file server over one host directory (the share): what
 * virtio-9p serves, and nothing of virtio in it, so unit tests and fuzzers
 * drive it with plain buffers.
 *
 * Confinement: every path a guest names is resolved beneath the share's
 * root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS). The server never follows a symlink (the guest's
 * kernel reads links and walks them itself, within the share), so no `..`,
 * symlink or host-side rename race can take a request outside the root.
 * Only regular files and directories are ever opened; a read-only share
 * refuses every change with EROFS and takes no host lock. No inode of a
 * kernel interface file system (proc, sysfs, cgroup...) is served,
 * whatever is mounted where: the check is on each file descriptor's
 * own file system (fs/p9_fid.c). Guest-set xattrs are user.* only, and
 * set-user-ID bits are never set: a hostile guest cannot plant privileges
 * on the host.
 */
#ifndef LKVM_P9_H
#define LKVM_P9_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define P9_MAX_MSIZE	(512 * 1024)	/* largest message we negotiate */
#define P9_MIN_MSIZE	4096
#define P9_MAX_FIDS	4096		/* per share: a guest cannot pin more */
#define P9_MAX_OPEN	1024		/* of them open, each a host fd */
#define P9_XATTR_TOTAL	(4u << 20)	/* bytes held by xattr fids */
#define P9_ERROR_SIZE	11		/* Rlerror: what any reply needs */

struct p9_fid;

/*
 * One share's state. Owned by the thread serving the device's queue
 * (under the queue's lock); set up and torn down by the main thread.
 */
struct p9_server {
	int root_fd;			/* O_PATH directory, the share's root */
	bool ro;
	bool set_owner;			/* root: new files get the guest's ids */
	uint32_t msize;			/* negotiated by Tversion */
	unsigned int nr_fids;
	unsigned int nr_open;		/* fids holding a host fd */
	size_t xattr_bytes;		/* held by xattr fids */
	struct p9_fid *fid_hash[256];
	/* st_dev -> small index, so qid paths of two mounts never collide */
	unsigned int nr_devs;
	uint64_t devs[16];
	uint64_t errors;		/* Rlerror replies, for --stats */
};

/* Take over root_fd (an O_PATH or O_RDONLY directory). */
void p9_server_init(struct p9_server *s, int root_fd, bool ro);
void p9_server_exit(struct p9_server *s);
/* The session ends (a device reset): every fid is clunked. */
void p9_server_reset(struct p9_server *s);

/*
 * Serve one T-message, req[0, req_len) (its size field says how much of
 * it counts), writing the R-message into reply[0, cap). Returns the
 * reply's length, or 0 when cap cannot hold even an Rlerror
 * (P9_ERROR_SIZE): the caller's transport is then broken.
 */
size_t p9_handle(struct p9_server *s, const uint8_t *req, size_t req_len,
		 uint8_t *reply, size_t cap);

/*
 * The name of the kernel interface file system ("proc", "sysfs"...) that
 * fd is on, which no share serves; NULL for any other.
 */
const char *p9_kernel_fs(int fd);

/*
 * Check one path element a guest sent: 0, or the errno to refuse it with
 * (empty, ".", "/" in it, a NUL, too long). ".." is valid here; the walk
 * gives it its meaning.
 */
int p9_check_name(const char *name, size_t len);

#endif
