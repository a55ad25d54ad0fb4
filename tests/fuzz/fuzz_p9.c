// SPDX-License-Identifier: GPL-2.0
/*
 * The 9P2000.L server (fs/p9*.c) on messages the fuzzer writes, against a
 * scratch share that holds files, a folder, symlinks pointing outside,
 * and a FIFO, beside an "outside" folder it must never touch. Each input
 * is one session: Tversion and Tattach (fid 0) first, then frames of
 * [u16 length][u16 reply room][message bytes], each handed to
 * p9_handle() as a guest's chain would hand it (the size field is the
 * fuzzer's). After each input: the reply sizes were honest, and the
 * outside folder is as it was.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "lkvm/p9.h"

static char top[64], share[96], outside[96];
static uint8_t reply[P9_MAX_MSIZE];

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	remove(path);		/* what cannot go stays in /tmp */
	return 0;
}

/* At exit: the scratch tree, whatever the inputs made in it. */
static void remove_tree(void)
{
	nftw(top, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_tree(void)
{
	char path[200];

	snprintf(top, sizeof(top), "/tmp/lkvm-fuzz-p9.XXXXXX");
	if (!mkdtemp(top))
		abort();
	atexit(remove_tree);
	snprintf(share, sizeof(share), "%s/share", top);
	snprintf(outside, sizeof(outside), "%s/outside", top);
	if (mkdir(share, 0755) || mkdir(outside, 0755))
		abort();
	write_file(outside, "secret", "outside");
	write_file(share, "a", "file a\n");
	snprintf(path, sizeof(path), "%s/sub", share);
	mkdir(path, 0755);
	write_file(path, "b", "file b\n");
	snprintf(path, sizeof(path), "%s/up", share);
	symlink("../outside", path);
	snprintf(path, sizeof(path), "%s/abs", share);
	symlink(outside, path);
	snprintf(path, sizeof(path), "%s/fifo", share);
	mkfifo(path, 0600);
}

/* The outside folder holds "secret" alone, unchanged. */
static void check_outside(void)
{
	char path[160], buf[16] = "";
	DIR *d = opendir(outside);
	struct dirent *e;
	int n = 0;
	FILE *f;

	if (!d)
		abort();
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	snprintf(path, sizeof(path), "%s/secret", outside);
	f = fopen(path, "r");
	if (n != 1 || !f || !fgets(buf, sizeof(buf), f) ||
	    strcmp(buf, "outside"))
		abort();
	fclose(f);
}

static void handle(struct p9_server *s, const uint8_t *msg, size_t len,
		   size_t room)
{
	size_t n = p9_handle(s, msg, len, reply, room);
	uint32_t size;

	if (room < P9_ERROR_SIZE) {
		if (n)
			abort();
		return;
	}
	memcpy(&size, reply, 4);
	if (n < P9_ERROR_SIZE - 4 || n > room || size != n)
		abort();
}

static void session_start(struct p9_server *s)
{
	static const uint8_t version[] = {
		21, 0, 0, 0, 100, 0xff, 0xff, 0x00, 0x20, 0, 0,
		8, 0, '9', 'P', '2', '0', '0', '0', '.', 'L',
	};
	static const uint8_t attach[] = {
		23, 0, 0, 0, 104, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0, 0, 0, 0, 0,
	};

	handle(s, version, sizeof(version), sizeof(reply));
	handle(s, attach, sizeof(attach), sizeof(reply));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool made;
	struct input in = { data, size };
	struct p9_server s;
	int fd;

	if (!made) {
		make_tree();
		made = true;
	}
	fd = open(share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	p9_server_init(&s, fd, false);
	s.ro = size && (data[0] & 0x80);
	session_start(&s);
	while (in.n >= 4) {
		size_t len = take16(&in), room = take16(&in) * 8;

		len = len < in.n ? len : in.n;
		handle(&s, in.p, len, room < sizeof(reply) ? room :
				       sizeof(reply));
		in.p += len;
		in.n -= len;
	}
	p9_server_exit(&s);
	check_outside();
	return 0;
}
