// SPDX-License-Identifier: GPL-2.0
/*
 * The qcow2 unit tests' shared helpers: see qcow2_rig.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qcow2_rig.h"

static char dir[64];

int rig_setup(const char *name)
{
	snprintf(dir, sizeof(dir), "/tmp/lkvm-test-%s-XXXXXX", name);
	return mkdtemp(dir) ? 0 : -1;
}

const char *rig_dir(void)
{
	return dir;
}

void rig_teardown(void)
{
	if (dir[0])
		sh("rm -rf %s", dir);
	dir[0] = 0;
}

const char *path(const char *name)
{
	static char buf[4][160];
	static unsigned int n;
	char *p = buf[n++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int img_fd(const char *name, int flags)
{
	int fd = open(path(name), flags);

	if (fd < 0) {
		fprintf(stderr, "cannot open %s: %s\n", path(name),
			strerror(errno));
		abort();
	}
	return fd;
}

uint64_t img_get(const char *name, uint64_t off, unsigned int bytes)
{
	uint8_t b[8] = { 0 };
	uint64_t v = 0;
	int fd = img_fd(name, O_RDONLY);

	if (pread(fd, b, bytes, off) != (ssize_t)bytes)
		abort();
	close(fd);
	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | b[i];
	return v;
}

void img_put(const char *name, uint64_t off, unsigned int bytes, uint64_t v)
{
	uint8_t b[8];
	int fd = img_fd(name, O_WRONLY);

	for (unsigned int i = 0; i < bytes; i++)
		b[i] = v >> (8 * (bytes - 1 - i));
	if (pwrite(fd, b, bytes, off) != (ssize_t)bytes)
		abort();
	close(fd);
}

uint8_t *img_read(const char *name, size_t *len)
{
	int fd = img_fd(name, O_RDONLY);
	struct stat st;
	uint8_t *p;

	if (fstat(fd, &st))
		abort();
	p = malloc(st.st_size ? st.st_size : 1);
	if (!p || pread(fd, p, st.st_size, 0) != st.st_size)
		abort();
	close(fd);
	*len = st.st_size;
	return p;
}

void img_layout(const char *name, struct img_layout *l)
{
	l->cluster_size = 1ULL << img_get(name, 20, 4);
	l->l1_size = img_get(name, 36, 4);
	l->l1_offset = img_get(name, 40, 8);
	l->reftable_offset = img_get(name, 48, 8);
	l->refblock0 = img_get(name, l->reftable_offset, 8);
	l->l2_0 = l->l1_size ? img_get(name, l->l1_offset, 8) &
			       0x00fffffffffffe00ULL : 0;
	l->data0 = l->l2_0 ? img_get(name, l->l2_0, 8) &
			     0x00fffffffffffe00ULL : 0;
}

char *catch_stderr(int (*fn)(void *), void *arg, int *ret)
{
	char tmpl[] = "/tmp/lkvm-test-stderr-XXXXXX";
	int fd = mkstemp(tmpl), saved;
	char *msg = calloc(1, 4096);
	ssize_t n;

	if (fd < 0 || !msg)
		abort();
	unlink(tmpl);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	*ret = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, msg, 4095, 0);
	msg[n > 0 ? n : 0] = 0;
	close(fd);
	return msg;
}

struct open_args {
	struct disk d;
	struct disk_params p;
};

static int do_open(void *arg)
{
	struct open_args *a = arg;

	return disk_open(&a->d, &a->p);
}

char *open_error(const char *name, bool ro)
{
	struct open_args a = { .p = { .path = path(name), .readonly = ro } };
	char *msg;
	int ret;

	msg = catch_stderr(do_open, &a, &ret);
	if (!ret) {
		disk_close(&a.d);
		free(msg);
		return NULL;
	}
	return msg;
}
