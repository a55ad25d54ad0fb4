// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P2000.L server (fs/p9*.c) on a scratch directory, message by
 * message as a guest would send them: the session, walks that try to
 * leave the share (.., symlinks in and at the end of a path, names with
 * a slash), opening only regular files and directories, the file
 * operations a Linux client uses and their results on the host, a
 * read-only share refusing every change, and malformed messages (cut
 * short, lying sizes, reused fids, oversized) answered with an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/p9.h"

enum {
	RLERROR = 7, TSTATFS = 8, TLOPEN = 12, TLCREATE = 14, TSYMLINK = 16,
	TMKNOD = 18, TRENAME = 20, TREADLINK = 22, TGETATTR = 24,
	TSETATTR = 26, TXATTRWALK = 30, TXATTRCREATE = 32, TREADDIR = 40,
	TFSYNC = 50, TLOCK = 52, TGETLOCK = 54, TLINK = 70, TMKDIR = 72,
	TRENAMEAT = 74,
	TUNLINKAT = 76, TVERSION = 100, TATTACH = 104, TWALK = 110,
	TREAD = 116, TWRITE = 118, TCLUNK = 120, TREMOVE = 122,
};

#define NOFID	0xffffffffu
#define ROOT	1

static char top[64];		/* holds share/ and outside/ */
static char share[96];
static struct p9_server srv;

/* A message under construction, then the reply it got. */
struct msg {
	uint8_t buf[70000];
	size_t len;
	uint8_t reply[70000];
	size_t rlen;
	size_t rpos;
};

static void put(struct msg *m, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		m->buf[m->len++] = v & 0xff;
}

static void puts9(struct msg *m, const char *s)
{
	put(m, strlen(s), 2);
	memcpy(m->buf + m->len, s, strlen(s));
	m->len += strlen(s);
}

static struct msg *start(uint8_t type)
{
	static struct msg m;

	memset(&m, 0, sizeof(m));
	put(&m, 0, 4);
	put(&m, type, 1);
	put(&m, 0x1234, 2);
	return &m;
}

static uint64_t get(struct msg *m, int n)
{
	uint64_t v = 0;

	assert_true(m->rpos + n <= m->rlen);
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | m->reply[m->rpos + i];
	m->rpos += n;
	return v;
}

/* Send m (size field filled in), return the reply's type; -errno for
 * an Rlerror. */
static int send_cap(struct msg *m, size_t cap)
{
	uint8_t type;

	m->buf[0] = m->len;
	m->buf[1] = m->len >> 8;
	m->buf[2] = m->len >> 16;
	m->buf[3] = m->len >> 24;
	m->rlen = p9_handle(&srv, m->buf, m->len, m->reply, cap);
	m->rpos = 0;
	assert_true(m->rlen >= 7);
	assert_int_equal(get(m, 4), m->rlen);
	type = get(m, 1);
	assert_int_equal(get(m, 2), 0x1234);
	if (type == RLERROR)
		return -(int)get(m, 4);
	assert_int_equal(type, m->buf[4] + 1);
	return type;
}

static int send(struct msg *m)
{
	return send_cap(m, sizeof(m->reply));
}

static int walk(uint32_t fid, uint32_t newfid, int n, const char **names)
{
	struct msg *m = start(TWALK);

	put(m, fid, 4);
	put(m, newfid, 4);
	put(m, n, 2);
	for (int i = 0; i < n; i++)
		puts9(m, names[i]);
	int ret = send(m);

	return ret < 0 ? ret : (int)get(m, 2);
}

static int walk1(uint32_t fid, uint32_t newfid, const char *name)
{
	return walk(fid, newfid, 1, &name);
}

static int clunk(uint32_t fid)
{
	struct msg *m = start(TCLUNK);

	put(m, fid, 4);
	return send(m);
}

static int lopen(uint32_t fid, uint32_t flags)
{
	struct msg *m = start(TLOPEN);

	put(m, fid, 4);
	put(m, flags, 4);
	return send(m);
}

/* Read up to n bytes at off into out; the count or -errno. */
static int readf(uint32_t fid, uint64_t off, char *out, uint32_t n)
{
	struct msg *m = start(TREAD);
	int ret;
	uint32_t count;

	put(m, fid, 4);
	put(m, off, 8);
	put(m, n, 4);
	ret = send(m);
	if (ret < 0)
		return ret;
	count = get(m, 4);
	memcpy(out, m->reply + m->rpos, count);
	out[count] = '\0';
	return count;
}

static int writef(uint32_t fid, uint64_t off, const char *data)
{
	struct msg *m = start(TWRITE);
	int ret;

	put(m, fid, 4);
	put(m, off, 8);
	put(m, strlen(data), 4);
	memcpy(m->buf + m->len, data, strlen(data));
	m->len += strlen(data);
	ret = send(m);
	return ret < 0 ? ret : (int)get(m, 4);
}

/* The qid path of what fid names. */
static uint64_t qid_path(uint32_t fid)
{
	struct msg *m = start(TGETATTR);

	put(m, fid, 4);
	put(m, 0x7ff, 8);
	assert_true(send(m) > 0);
	get(m, 8);
	get(m, 1);
	get(m, 4);
	return get(m, 8);
}

static uint64_t file_size(uint32_t fid)
{
	struct msg *m = start(TGETATTR);

	put(m, fid, 4);
	put(m, 0x7ff, 8);
	assert_true(send(m) > 0);
	m->rpos += 8 + 13 + 4 + 4 + 4 + 8 + 8;
	return get(m, 8);
}

static void host_file(const char *rel, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static bool host_exists(const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	return !lstat(path, &st);
}

static const char *share_path(const char *rel)
{
	static char path[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", share, rel);
	return path[i];
}

/* A session over dir as the guest's user uid; ROOT is its root fid. */
static void session_at(const char *dir, bool ro, uint32_t uid)
{
	struct msg *m;
	int fd = open(dir, O_PATH | O_DIRECTORY);

	assert_true(fd >= 0);
	p9_server_init(&srv, fd, ro);
	m = start(TVERSION);
	put(m, 8192, 4);
	puts9(m, "9P2000.L");
	assert_int_equal(send(m), TVERSION + 1);
	assert_int_equal(get(m, 4), 8192);
	m = start(TATTACH);
	put(m, ROOT, 4);
	put(m, NOFID, 4);
	puts9(m, "root");
	puts9(m, "");
	put(m, uid, 4);
	assert_int_equal(send(m), TATTACH + 1);
}

static void session(bool ro)
{
	session_at(share, ro, 0);
}

static int setup(void **state)
{
	char path[256];

	snprintf(top, sizeof(top), "/tmp/lkvm-p9-test.XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(share, sizeof(share), "%s/share", top);
	assert_int_equal(mkdir(share, 0755), 0);
	snprintf(path, sizeof(path), "%s/outside", top);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/share/sub", top);
	assert_int_equal(mkdir(path, 0755), 0);
	host_file("outside/secret", "TOP-SECRET");
	host_file("share/hello", "hello from host\n");
	host_file("share/sub/inner", "inner\n");
	snprintf(path, sizeof(path), "%s/outside/secret", top);
	assert_int_equal(symlinkat(path, AT_FDCWD, share_path("link_abs")), 0);
	assert_int_equal(symlinkat("../outside", AT_FDCWD,
				   share_path("link_dir")), 0);
	assert_int_equal(mkfifo(share_path("fifo"), 0600), 0);
	session(false);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	p9_server_exit(&srv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_version(void **state)
{
	struct msg *m = start(TVERSION);

	put(m, 1 << 30, 4);
	puts9(m, "9P2000.L");
	assert_int_equal(send(m), TVERSION + 1);
	assert_int_equal(get(m, 4), P9_MAX_MSIZE);	/* clamped */
	assert_int_equal(get(m, 2), 8);
	m = start(TVERSION);
	put(m, 8192, 4);
	puts9(m, "9P2000.u");
	assert_int_equal(send(m), TVERSION + 1);
	get(m, 4);
	assert_int_equal(get(m, 2), 7);
	assert_memory_equal(m->reply + m->rpos, "unknown", 7);
	m = start(TVERSION);
	put(m, 100, 4);			/* too small for any reply */
	puts9(m, "9P2000.L");
	assert_int_equal(send(m), -EINVAL);
	/* Tversion ended the session: the root fid is gone */
	assert_int_equal(walk(ROOT, 2, 0, NULL), -EBADF);
}

static void test_walks_stay_inside(void **state)
{
	const char *up[] = { "..", "..", ".." };
	const char *sub_up[] = { "sub", "..", "..", ".." };
	const char *through[] = { "link_dir", "secret" };
	uint64_t root = qid_path(ROOT);

	assert_int_equal(walk(ROOT, 2, 3, up), 3);
	assert_int_equal(qid_path(2), root);
	assert_int_equal(walk(ROOT, 3, 4, sub_up), 4);
	assert_int_equal(qid_path(3), root);
	assert_int_equal(walk1(ROOT, 4, "a/b"), -EINVAL);
	assert_int_equal(walk1(ROOT, 4, ""), -EINVAL);
	assert_int_equal(walk1(ROOT, 4, "."), -EINVAL);
	assert_int_equal(walk1(ROOT, 4, "nosuch"), -ENOENT);
	/* a symlink at the end is the link itself, never opened */
	assert_int_equal(walk1(ROOT, 4, "link_abs"), 1);
	assert_int_equal(lopen(4, O_RDONLY), -ELOOP);
	/* through one: the walk stops short and makes no fid */
	assert_int_equal(walk(ROOT, 5, 2, through), 1);
	assert_int_equal(clunk(5), -EBADF);
	assert_int_equal(clunk(2), TCLUNK + 1);
	assert_int_equal(clunk(3), TCLUNK + 1);
	assert_int_equal(clunk(4), TCLUNK + 1);
}

static void test_readlink_and_special_files(void **state)
{
	struct msg *m;
	char expect[256];

	assert_int_equal(walk1(ROOT, 2, "link_abs"), 1);
	m = start(TREADLINK);
	put(m, 2, 4);
	assert_int_equal(send(m), TREADLINK + 1);
	snprintf(expect, sizeof(expect), "%s/outside/secret", top);
	assert_int_equal(get(m, 2), strlen(expect));
	assert_memory_equal(m->reply + m->rpos, expect, strlen(expect));
	/* a FIFO would block the I/O thread; a device would be the host's */
	assert_int_equal(walk1(ROOT, 3, "fifo"), 1);
	assert_int_equal(lopen(3, O_RDONLY), -EACCES);
	m = start(TMKNOD);
	put(m, ROOT, 4);
	puts9(m, "dev");
	put(m, S_IFBLK | 0600, 4);
	put(m, 8, 4);
	put(m, 0, 4);
	put(m, 0, 4);
	assert_int_equal(send(m), -EPERM);
	assert_false(host_exists("share/dev"));
	clunk(2);
	clunk(3);
}

static void test_read_write_create(void **state)
{
	char buf[128];
	struct msg *m;

	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	assert_int_equal(lopen(2, O_RDONLY), TLOPEN + 1);
	assert_int_equal(readf(2, 0, buf, 100), 16);
	assert_string_equal(buf, "hello from host\n");
	assert_int_equal(readf(2, 6, buf, 4), 4);
	assert_string_equal(buf, "from");
	/* an open fid cannot be opened or walked from again */
	assert_int_equal(lopen(2, O_RDONLY), -EBADF);
	assert_int_equal(writef(2, 0, "x"), -EBADF);

	assert_int_equal(walk(ROOT, 3, 0, NULL), 0);
	m = start(TLCREATE);
	put(m, 3, 4);
	puts9(m, "new");
	put(m, O_RDWR, 4);
	put(m, 04755, 4);		/* set-user-ID is dropped */
	put(m, 0, 4);
	assert_int_equal(send(m), TLCREATE + 1);
	assert_int_equal(writef(3, 0, "written by guest"), 16);
	assert_int_equal(file_size(3), 16);
	assert_int_equal(readf(3, 8, buf, 100), 8);
	assert_string_equal(buf, "by guest");
	{
		struct stat st;

		assert_int_equal(stat(share_path("new"), &st), 0);
		assert_int_equal(st.st_mode & 07777, 0755);
		assert_int_equal(st.st_size, 16);
	}
	m = start(TFSYNC);
	put(m, 3, 4);
	put(m, 0, 4);
	assert_int_equal(send(m), TFSYNC + 1);
	/* creating over a symlink does not write where it points */
	assert_int_equal(walk(ROOT, 4, 0, NULL), 0);
	m = start(TLCREATE);
	put(m, 4, 4);
	puts9(m, "link_abs");
	put(m, O_RDWR | O_TRUNC, 4);
	put(m, 0644, 4);
	put(m, 0, 4);
	assert_true(send(m) < 0);
	assert_int_equal(readf(2, 0, buf, 100), 16);
	clunk(2);
	clunk(3);
	clunk(4);
}

static void test_readdir(void **state)
{
	struct msg *m;
	uint32_t count;
	int seen = 0;
	uint64_t root = qid_path(ROOT);

	assert_int_equal(walk(ROOT, 2, 0, NULL), 0);
	assert_int_equal(lopen(2, O_RDONLY | O_DIRECTORY), TLOPEN + 1);
	m = start(TREADDIR);
	put(m, 2, 4);
	put(m, 0, 8);
	put(m, 8000, 4);
	assert_int_equal(send(m), TREADDIR + 1);
	count = get(m, 4);
	assert_int_equal(m->rpos + count, m->rlen);
	while (m->rpos < m->rlen) {
		uint8_t type = get(m, 1);
		uint64_t path;
		uint16_t len;
		char name[256];

		get(m, 4);
		path = get(m, 8);
		get(m, 8);
		get(m, 1);
		len = get(m, 2);
		memcpy(name, m->reply + m->rpos, len);
		name[len] = '\0';
		m->rpos += len;
		if (!strcmp(name, "hello") || !strcmp(name, "sub"))
			seen++;
		if (!strcmp(name, "sub"))
			assert_int_equal(type, 0x80);
		/* the share's parent is not shown, not even its inode */
		if (!strcmp(name, ".."))
			assert_int_equal(path, root);
	}
	assert_int_equal(seen, 2);
	/* a small count: entries that fit, none cut */
	m = start(TREADDIR);
	put(m, 2, 4);
	put(m, 0, 8);
	put(m, 30, 4);
	assert_int_equal(send(m), TREADDIR + 1);
	assert_true(get(m, 4) <= 30);
	clunk(2);
}

static void test_namespace_changes(void **state)
{
	const char *moved[] = { "dir2", "inner" };
	struct msg *m;

	m = start(TMKDIR);
	put(m, ROOT, 4);
	puts9(m, "dir");
	put(m, 0755, 4);
	put(m, 0, 4);
	assert_int_equal(send(m), TMKDIR + 1);
	assert_int_equal(get(m, 1), 0x80);
	assert_true(host_exists("share/dir"));
	host_file("share/dir/inner", "x");
	assert_int_equal(walk1(ROOT, 2, "dir"), 1);
	assert_int_equal(walk1(2, 3, "inner"), 1);
	m = start(TRENAMEAT);
	put(m, ROOT, 4);
	puts9(m, "dir");
	put(m, ROOT, 4);
	puts9(m, "dir2");
	assert_int_equal(send(m), TRENAMEAT + 1);
	/* fids under the old name follow it */
	assert_int_equal(lopen(3, O_RDONLY), TLOPEN + 1);
	assert_int_equal(walk(ROOT, 4, 2, moved), 2);
	assert_int_equal(qid_path(4), qid_path(3));
	m = start(TSYMLINK);
	put(m, ROOT, 4);
	puts9(m, "sl");
	puts9(m, "/etc/passwd");
	put(m, 0, 4);
	assert_int_equal(send(m), TSYMLINK + 1);
	assert_int_equal(get(m, 1), 0x02);
	m = start(TLINK);
	put(m, ROOT, 4);
	put(m, 4, 4);
	puts9(m, "hard");
	assert_int_equal(send(m), TLINK + 1);
	assert_true(host_exists("share/hard"));
	m = start(TUNLINKAT);
	put(m, ROOT, 4);
	puts9(m, "..");
	put(m, 0, 4);
	assert_int_equal(send(m), -EINVAL);
	m = start(TUNLINKAT);
	put(m, ROOT, 4);
	puts9(m, "hard");
	put(m, 0, 4);
	assert_int_equal(send(m), TUNLINKAT + 1);
	assert_false(host_exists("share/hard"));
	m = start(TREMOVE);
	put(m, 4, 4);
	assert_int_equal(send(m), TREMOVE + 1);
	assert_false(host_exists("share/dir2/inner"));
	assert_int_equal(clunk(4), -EBADF);	/* Tremove clunked it */
	clunk(2);
	clunk(3);
}

static void test_xattrs(void **state)
{
	struct msg *m;
	char buf[64];

	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	m = start(TXATTRCREATE);
	put(m, 2, 4);
	puts9(m, "security.capability");
	put(m, 4, 8);
	put(m, 0, 4);
	assert_int_equal(send(m), -EPERM);
	m = start(TXATTRCREATE);
	put(m, 2, 4);
	puts9(m, "user.note");
	put(m, 5, 8);
	put(m, 0, 4);
	if (send(m) < 0) {
		clunk(2);
		skip();		/* a file system without user xattrs */
	}
	assert_int_equal(writef(2, 0, "hi 9p"), 5);
	assert_int_equal(clunk(2), TCLUNK + 1);
	assert_int_equal(getxattr(share_path("hello"), "user.note", buf,
				  sizeof(buf)), 5);
	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	m = start(TXATTRWALK);
	put(m, 2, 4);
	put(m, 3, 4);
	puts9(m, "user.note");
	assert_int_equal(send(m), TXATTRWALK + 1);
	assert_int_equal(get(m, 8), 5);
	assert_int_equal(readf(3, 0, buf, 64), 5);
	assert_string_equal(buf, "hi 9p");
	clunk(2);
	clunk(3);
}

static void test_read_only_share(void **state)
{
	struct msg *m;

	p9_server_exit(&srv);
	session(true);
	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	assert_int_equal(lopen(2, O_RDWR), -EROFS);
	assert_int_equal(lopen(2, O_RDONLY | O_TRUNC), -EROFS);
	assert_int_equal(lopen(2, O_RDONLY), TLOPEN + 1);
	assert_int_equal(writef(2, 0, "x"), -EROFS);
	m = start(TLCREATE);
	put(m, ROOT, 4);
	puts9(m, "new2");
	put(m, O_RDWR, 4);
	put(m, 0644, 4);
	put(m, 0, 4);
	assert_int_equal(send(m), -EROFS);
	m = start(TMKDIR);
	put(m, ROOT, 4);
	puts9(m, "d");
	put(m, 0755, 4);
	put(m, 0, 4);
	assert_int_equal(send(m), -EROFS);
	m = start(TUNLINKAT);
	put(m, ROOT, 4);
	puts9(m, "hello");
	put(m, 0, 4);
	assert_int_equal(send(m), -EROFS);
	m = start(TRENAMEAT);
	put(m, ROOT, 4);
	puts9(m, "hello");
	put(m, ROOT, 4);
	puts9(m, "bye");
	assert_int_equal(send(m), -EROFS);
	m = start(TSETATTR);
	put(m, 2, 4);
	put(m, 0x8, 4);			/* size */
	put(m, 0, 4 + 4 + 4);
	put(m, 0, 8 * 5);
	assert_int_equal(send(m), -EROFS);
	assert_true(host_exists("share/hello"));
	assert_false(host_exists("share/new2"));
	clunk(2);
	p9_server_exit(&srv);
	session(false);
}

static void test_bad_messages(void **state)
{
	struct msg *m;
	uint8_t small[16];

	/* cut short: a walk promising three names and carrying one */
	m = start(TWALK);
	put(m, ROOT, 4);
	put(m, 2, 4);
	put(m, 3, 2);
	puts9(m, "sub");
	assert_int_equal(send(m), -EINVAL);
	assert_int_equal(clunk(2), -EBADF);
	/* a string running past the end */
	m = start(TWALK);
	put(m, ROOT, 4);
	put(m, 2, 4);
	put(m, 1, 2);
	put(m, 200, 2);
	m->buf[m->len++] = 'a';
	assert_int_equal(send(m), -EINVAL);
	/* a size field bigger than the message, or below a header */
	m = start(TCLUNK);
	put(m, 99, 4);
	m->buf[0] = 200;
	m->rlen = p9_handle(&srv, m->buf, m->len, m->reply, sizeof(m->reply));
	assert_int_equal(m->reply[4], RLERROR);
	m->buf[0] = 3;
	m->rlen = p9_handle(&srv, m->buf, m->len, m->reply, sizeof(m->reply));
	assert_int_equal(m->reply[4], RLERROR);
	/* bigger than msize (8192 in this session) */
	m = start(TWRITE);
	put(m, 2, 4);
	put(m, 0, 8);
	put(m, 9000, 4);
	m->len += 9000;
	assert_int_equal(send(m), -EMSGSIZE);
	/* an unknown type, an R-message, a reused or unknown fid */
	m = start(200);
	assert_int_equal(send(m), -EOPNOTSUPP);
	m = start(TWALK + 1);
	assert_int_equal(send(m), -EINVAL);
	assert_int_equal(walk(ROOT, ROOT, 0, NULL), 0);	/* fid == newfid */
	assert_int_equal(walk(ROOT, 2, 0, NULL), 0);
	assert_int_equal(walk(ROOT, 2, 0, NULL), -EBADF);
	assert_int_equal(clunk(2), TCLUNK + 1);
	assert_int_equal(clunk(2), -EBADF);
	assert_int_equal(lopen(2, O_RDONLY), -EBADF);
	/* no room for even an error: the transport's problem */
	m = start(TCLUNK);
	put(m, 2, 4);
	m->buf[0] = m->len;
	assert_int_equal(p9_handle(&srv, m->buf, m->len, small, 10), 0);
	/* a reply that does not fit becomes an error that does */
	m = start(TGETATTR);
	put(m, ROOT, 4);
	put(m, 0x7ff, 8);
	assert_int_equal(send_cap(m, 40), -EMSGSIZE);
	/* and one with no room for its reply changes nothing */
	m = start(TMKDIR);
	put(m, ROOT, 4);
	puts9(m, "tight");
	put(m, 0755, 4);
	put(m, 0, 4);
	assert_int_equal(send_cap(m, 12), -EMSGSIZE);
	assert_false(host_exists("share/tight"));
	assert_int_equal(walk(ROOT, 20, 1, (const char *[]){ "sub" }), 1);
	m = start(TWALK);
	put(m, ROOT, 4);
	put(m, 21, 4);
	put(m, 2, 2);
	puts9(m, "sub");
	puts9(m, "..");
	assert_int_equal(send_cap(m, 22), -EMSGSIZE);
	assert_int_equal(clunk(21), -EBADF);
	clunk(20);
}

static void test_fid_limit(void **state)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; i < P9_MAX_FIDS + 2 && ret >= 0; i++)
		ret = walk(ROOT, 100 + i, 0, NULL);
	assert_int_equal(ret, -EMFILE);
	for (i = 0; i < P9_MAX_FIDS + 2; i++)
		clunk(100 + i);
	assert_int_equal(walk(ROOT, 100, 0, NULL), 0);
	clunk(100);
}

/* Open fids hold host fds and xattr fids memory: both are bounded. */
static void test_open_and_xattr_limits(void **state)
{
	struct msg *m;
	uint32_t i;
	int ret = 0;

	for (i = 0; i < P9_MAX_OPEN + 2 && ret >= 0; i++) {
		ret = walk1(ROOT, 100 + i, "hello");
		if (ret >= 0)
			ret = lopen(100 + i, O_RDONLY);
	}
	assert_int_equal(ret, -EMFILE);
	assert_int_equal(i, P9_MAX_OPEN + 1);
	clunk(100);		/* one closed: one more may open */
	assert_int_equal(lopen(100 + P9_MAX_OPEN, O_RDONLY), TLOPEN + 1);
	for (i = 0; i <= P9_MAX_OPEN + 1; i++)
		clunk(100 + i);
	for (i = 0, ret = 0; i < 100 && ret >= 0; i++) {
		assert_int_equal(walk1(ROOT, 200 + i, "hello"), 1);
		m = start(TXATTRCREATE);
		put(m, 200 + i, 4);
		puts9(m, "user.big");
		put(m, 65536, 8);
		put(m, 0, 4);
		ret = send(m);
	}
	assert_int_equal(ret, -ENOSPC);
	assert_int_equal(i, P9_XATTR_TOTAL / 65536 + 1);
	for (i = 0; i < 100; i++)
		clunk(200 + i);
}

/* Tlcreate name in directory fid fid, which becomes the open new file. */
static int lcreate(uint32_t fid, const char *name, uint32_t flags,
		   uint32_t gid)
{
	struct msg *m = start(TLCREATE);

	put(m, fid, 4);
	puts9(m, name);
	put(m, flags, 4);
	put(m, 0644, 4);
	put(m, gid, 4);
	return send(m);
}

static int mkdir9(uint32_t dfid, const char *name, uint32_t gid)
{
	struct msg *m = start(TMKDIR);

	put(m, dfid, 4);
	puts9(m, name);
	put(m, 0755, 4);
	put(m, gid, 4);
	return send(m);
}

static int unlink9(uint32_t dfid, const char *name)
{
	struct msg *m = start(TUNLINKAT);

	put(m, dfid, 4);
	puts9(m, name);
	put(m, 0, 4);
	return send(m);
}

/* Tsetattr of what valid says: mode (0x1) or size (0x8). */
static int setattr9(uint32_t fid, uint32_t valid, uint32_t mode,
		    uint64_t size)
{
	struct msg *m = start(TSETATTR);

	put(m, fid, 4);
	put(m, valid, 4);
	put(m, mode, 4);
	put(m, 0, 4 + 4);
	put(m, size, 8);
	put(m, 0, 8 * 4);
	return send(m);
}

static int statfs9(uint32_t fid)
{
	struct msg *m = start(TSTATFS);

	put(m, fid, 4);
	return send(m);
}

/* Txattrwalk: the value's size, or -errno. */
static int xattrwalk(uint32_t fid, uint32_t newfid, const char *name)
{
	struct msg *m = start(TXATTRWALK);
	int ret;

	put(m, fid, 4);
	put(m, newfid, 4);
	puts9(m, name);
	ret = send(m);
	return ret < 0 ? ret : (int)get(m, 8);
}

static int getattr9(uint32_t fid)
{
	struct msg *m = start(TGETATTR);

	put(m, fid, 4);
	put(m, 0x7ff, 8);
	return send(m);
}

/* 9P's lock types and Rlock's status. */
enum { RDLCK, WRLCK, UNLCK };
enum { LOCK_OK, LOCK_BLOCKED, LOCK_ERROR };

/* Tlock of the whole file: Rlock's status, or -errno. */
static int lock9(uint32_t fid, uint8_t type)
{
	struct msg *m = start(TLOCK);
	int ret;

	put(m, fid, 4);
	put(m, type, 1);
	put(m, 0, 4);			/* flags */
	put(m, 0, 8);
	put(m, 0, 8);			/* to the end */
	put(m, 77, 4);
	puts9(m, "guest");
	ret = send(m);
	return ret < 0 ? ret : (int)get(m, 1);
}

/* Tgetlock of the whole file: the type that would stop it, -errno. */
static int getlock9(uint32_t fid, uint8_t type, uint32_t *proc_id)
{
	struct msg *m = start(TGETLOCK);
	int ret;

	put(m, fid, 4);
	put(m, type, 1);
	put(m, 0, 8);
	put(m, 0, 8);
	put(m, 77, 4);
	puts9(m, "guest");
	ret = send(m);
	if (ret < 0)
		return ret;
	ret = get(m, 1);
	get(m, 8);
	get(m, 8);
	*proc_id = get(m, 4);
	return ret;
}

/* What a host process sees of the locks on rel: F_UNLCK if none. */
static short host_lock_probe(const char *rel, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };
	int fd = open(share_path(rel), O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
	close(fd);
	return fl.l_type;
}

/*
 * A read-only share (lkvm sandbox's "/") takes no host lock: a guest's
 * read lock on the user's database is its own kernel's, and no host
 * writer waits for it. It still waits for a host writer's lock, which it
 * only asks about; a writable share takes real locks as before.
 */
static void test_read_only_share_takes_no_host_lock(void **state)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	uint32_t pid = 1;
	int hfd;

	p9_server_exit(&srv);
	session(true);
	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	assert_int_equal(lopen(2, O_RDONLY), TLOPEN + 1);
	assert_int_equal(lock9(2, RDLCK), LOCK_OK);
	assert_int_equal(host_lock_probe("hello", F_WRLCK), F_UNLCK);
	assert_int_equal(getlock9(2, WRLCK, &pid), UNLCK);
	assert_int_equal(lock9(2, WRLCK), LOCK_ERROR);
	assert_int_equal(lock9(2, UNLCK), LOCK_OK);
	/* a host writer's lock holds the guest's readers off */
	hfd = open(share_path("hello"), O_RDWR);
	assert_true(hfd >= 0);
	assert_int_equal(fcntl(hfd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(lock9(2, RDLCK), LOCK_BLOCKED);
	assert_int_equal(getlock9(2, RDLCK, &pid), WRLCK);
	assert_int_equal(pid, 0);		/* no host PID for the guest */
	fl.l_type = F_UNLCK;
	assert_int_equal(fcntl(hfd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(lock9(2, RDLCK), LOCK_OK);
	assert_int_equal(host_lock_probe("hello", F_WRLCK), F_UNLCK);
	clunk(2);
	/* a writable share's locks are the host's */
	p9_server_exit(&srv);
	session(false);
	assert_int_equal(walk1(ROOT, 2, "hello"), 1);
	assert_int_equal(lopen(2, O_RDWR), TLOPEN + 1);
	assert_int_equal(lock9(2, RDLCK), LOCK_OK);
	assert_int_equal(host_lock_probe("hello", F_WRLCK), F_RDLCK);
	fl.l_type = F_WRLCK;
	assert_int_equal(fcntl(hfd, F_OFD_SETLK, &fl), -1);
	close(hfd);
	clunk(2);
}

/*
 * Open, unlink, fstat and ftruncate (what apt, compilers and test
 * runners do): a fid holding an open file is served through it, not its
 * name, which is gone.
 */
static void test_open_unlinked_file(void **state)
{
	char buf[32];

	assert_int_equal(walk(ROOT, 2, 0, NULL), 0);
	assert_int_equal(lcreate(2, "scratch", O_RDWR, 0), TLCREATE + 1);
	assert_int_equal(writef(2, 0, "12345678"), 8);
	assert_int_equal(unlink9(ROOT, "scratch"), TUNLINKAT + 1);
	assert_false(host_exists("share/scratch"));
	assert_int_equal(file_size(2), 8);
	assert_int_equal(setattr9(2, 0x8, 0, 3), TSETATTR + 1);
	assert_int_equal(file_size(2), 3);
	assert_int_equal(readf(2, 0, buf, 30), 3);
	assert_string_equal(buf, "123");
	assert_int_equal(setattr9(2, 0x1, 0600, 0), TSETATTR + 1);
	assert_int_equal(statfs9(2), TSTATFS + 1);
	assert_int_equal(xattrwalk(2, 3, ""), 0);	/* no names */
	clunk(3);
	/* and one opened by Tlopen, then removed on the host */
	host_file("share/doomed", "doomed\n");
	assert_int_equal(walk1(ROOT, 3, "doomed"), 1);
	assert_int_equal(lopen(3, O_RDWR), TLOPEN + 1);
	assert_int_equal(unlink(share_path("doomed")), 0);
	assert_int_equal(file_size(3), 7);
	assert_int_equal(setattr9(3, 0x8, 0, 0), TSETATTR + 1);
	assert_int_equal(file_size(3), 0);
	/* a fid that is only walked to asks the name, which is gone */
	host_file("share/walked", "w");
	assert_int_equal(walk1(ROOT, 4, "walked"), 1);
	assert_int_equal(unlink(share_path("walked")), 0);
	assert_int_equal(getattr9(4), -ENOENT);
	clunk(2);
	clunk(3);
	clunk(4);
}

static bool host_owner(const char *rel, uid_t uid, gid_t gid)
{
	struct stat st;

	assert_int_equal(lstat(share_path(rel), &st), 0);
	return st.st_uid == uid && st.st_gid == gid;
}

/*
 * As root, what the guest makes is its user's; what was there already
 * stays its owner's, even when Tlcreate without O_EXCL opens it.
 */
static void test_new_files_belong_to_the_guest(void **state)
{
	if (geteuid())
		skip();
	p9_server_exit(&srv);
	session_at(share, false, 4321);
	assert_int_equal(walk(ROOT, 2, 0, NULL), 0);
	assert_int_equal(lcreate(2, "made", O_RDWR, 1234), TLCREATE + 1);
	assert_true(host_owner("made", 4321, 1234));
	assert_int_equal(mkdir9(ROOT, "made_dir", 1234), TMKDIR + 1);
	assert_true(host_owner("made_dir", 4321, 1234));
	assert_true(host_owner("hello", 0, 0));
	assert_int_equal(walk(ROOT, 3, 0, NULL), 0);
	assert_int_equal(lcreate(3, "hello", O_RDWR, 1234), TLCREATE + 1);
	assert_true(host_owner("hello", 0, 0));
	clunk(2);
	clunk(3);
}

/* Paths (share-relative) the kernel file system tests mounted. */
static const char *const test_mounts[] = { "proc_bind", "environ_bind",
					   "sys_bind", "cgroup" };

/* A mount namespace of this process's own, where the test may mount. */
static bool private_mounts(void)
{
	return !geteuid() && !unshare(CLONE_NEWNS) &&
	       !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

static bool bind_read_only(const char *src, const char *rel)
{
	const char *dst = share_path(rel);

	return !mount(src, dst, NULL, MS_BIND, NULL) &&
	       !mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
}

/* The mounts go before the share does: rm -rf must not go into them. */
static int teardown_mounts(void **state)
{
	for (size_t i = 0; i < sizeof(test_mounts) / sizeof(test_mounts[0]);
	     i++)
		umount2(share_path(test_mounts[i]), MNT_DETACH);
	return teardown(state);
}

/*
 * lkvm sandbox shares the host's "/" read-only: through it a guest that
 * mounts the share itself must not reach lkvm's own memory and
 * environment, nor anything else of proc or sysfs. It may name their
 * mount points (to mount its own there), and do nothing more with them.
 */
static void test_no_kernel_fs_through_root(void **state)
{
	char pid[16];
	const char *self[] = { "proc", "self" };
	const char *mem[] = { "proc", pid, "mem" };
	const char *env[] = { "proc", pid, "environ" };
	const char *sys[] = { "sys", "kernel" };
	struct stat st;

	if (stat("/proc/self/mem", &st) || stat("/sys/kernel", &st))
		skip();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	p9_server_exit(&srv);
	session_at("/", true, 0);
	/* each walk stops at the mount point: one qid, no new fid */
	assert_int_equal(walk(ROOT, 2, 2, self), 1);
	assert_int_equal(walk(ROOT, 2, 3, mem), 1);
	assert_int_equal(walk(ROOT, 2, 3, env), 1);
	assert_int_equal(walk(ROOT, 2, 2, sys), 1);
	assert_int_equal(clunk(2), -EBADF);
	assert_int_equal(walk1(ROOT, 2, "proc"), 1);
	assert_int_equal(getattr9(2), TGETATTR + 1);
	assert_int_equal(walk1(2, 3, pid), -EACCES);
	assert_int_equal(walk1(2, 3, "self"), -EACCES);
	assert_int_equal(lopen(2, O_RDONLY | O_DIRECTORY), -EACCES);
	assert_int_equal(statfs9(2), -EACCES);
	assert_int_equal(xattrwalk(2, 3, ""), -EACCES);
	assert_int_equal(walk1(ROOT, 3, "sys"), 1);
	assert_int_equal(walk1(3, 4, "kernel"), -EACCES);
	assert_int_equal(lopen(3, O_RDONLY | O_DIRECTORY), -EACCES);
	clunk(2);
	clunk(3);
}

/*
 * A writable share with proc, a proc file, sysfs and a cgroup2 mounted
 * in it (binds made by someone on the host): the same refusals, and no
 * change reaches them (a mkdir in a cgroup file system makes a cgroup).
 */
static void test_no_kernel_fs_mounted_in_share(void **state)
{
	char pid[16];
	const char *mem[] = { "proc_bind", pid, "mem" };
	bool cgroup;
	int fd;

	if (!private_mounts())
		skip();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	assert_int_equal(mkdir(share_path("proc_bind"), 0755), 0);
	assert_int_equal(mkdir(share_path("sys_bind"), 0755), 0);
	assert_int_equal(mkdir(share_path("cgroup"), 0755), 0);
	fd = open(share_path("environ_bind"), O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_true(bind_read_only("/proc", "proc_bind"));
	assert_true(bind_read_only("/proc/self/environ", "environ_bind"));
	assert_true(bind_read_only("/sys", "sys_bind"));
	cgroup = !mount("none", share_path("cgroup"), "cgroup2", 0, NULL);
	/* the share as seen from the new namespace, where the mounts are */
	p9_server_exit(&srv);
	session(false);
	assert_int_equal(walk1(ROOT, 2, "environ_bind"), -EACCES);
	assert_int_equal(walk(ROOT, 2, 3, mem), 1);
	assert_int_equal(walk1(ROOT, 2, "proc_bind"), 1);
	assert_int_equal(walk1(2, 3, "self"), -EACCES);
	assert_int_equal(lopen(2, O_RDONLY | O_DIRECTORY), -EACCES);
	assert_int_equal(mkdir9(2, "x", 0), -EACCES);
	assert_int_equal(setattr9(2, 0x1, 0777, 0), -EACCES);
	assert_int_equal(walk(ROOT, 3, 0, NULL), 0);
	assert_int_equal(lcreate(3, "environ_bind", O_RDWR, 0), -EACCES);
	assert_int_equal(walk1(ROOT, 4, "sys_bind"), 1);
	assert_int_equal(walk1(4, 5, "kernel"), -EACCES);
	if (cgroup) {
		assert_int_equal(walk1(ROOT, 5, "cgroup"), 1);
		assert_int_equal(mkdir9(5, "lkvm-p9-test", 0), -EACCES);
		assert_false(host_exists("share/cgroup/lkvm-p9-test"));
		clunk(5);
	}
	clunk(2);
	clunk(3);
	clunk(4);
}

static void test_check_name(void **state)
{
	char longname[300];

	memset(longname, 'a', sizeof(longname));
	assert_int_equal(p9_check_name("a", 1), 0);
	assert_int_equal(p9_check_name("..", 2), 0);
	assert_int_equal(p9_check_name("...", 3), 0);
	assert_int_equal(p9_check_name(".", 1), EINVAL);
	assert_int_equal(p9_check_name("", 0), EINVAL);
	assert_int_equal(p9_check_name("a/b", 3), EINVAL);
	assert_int_equal(p9_check_name("a\0b", 3), EINVAL);
	assert_int_equal(p9_check_name(longname, 256), ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walks_stay_inside, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_readlink_and_special_files,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_write_create, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_readdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_changes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_xattrs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_share, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_messages, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fid_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_and_xattr_limits,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_only_share_takes_no_host_lock, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_open_unlinked_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_new_files_belong_to_the_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_kernel_fs_through_root,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_no_kernel_fs_mounted_in_share, setup,
			teardown_mounts),
		cmocka_unit_test(test_check_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
