// SPDX-License-Identifier: GPL-2.0
/* Read-only file mappings for the loaders (see include/lkvm/file_map.h). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/file_map.h"
#include "lkvm/util.h"

/* Files lkvm loads whole (kernels, initrds, firmware) are capped here. */
#define MAP_FILE_MAX	(2ULL * GiB)
#define MAP_PAGE	4096UL

/*
 * The files mapped now, so that a SIGBUS can name the one that shrank.
 * Main thread only (map_file() runs before any other thread exists).
 */
#define MAX_MAPPED	4
static struct mapped_file *mapped[MAX_MAPPED];

static __thread sigjmp_buf *guard_jmp;
static __thread const struct mapped_file *guard_culprit;

static size_t map_len(size_t size)
{
	return (size + MAP_PAGE - 1) / MAP_PAGE * MAP_PAGE + MAP_PAGE;
}

static int register_mapping(struct mapped_file *f)
{
	unsigned int i;

	for (i = 0; i < MAX_MAPPED; i++)
		if (!mapped[i]) {
			mapped[i] = f;
			return 0;
		}
	pr_err("too many files mapped at once");
	return -1;
}

/* Reserve the length with a trailing guard page, then put the file over it. */
static const void *map_with_guard(int fd, size_t size)
{
	size_t len = map_len(size);
	void *base, *file;

	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	file = mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	if (file == MAP_FAILED) {
		munmap(base, len);
		return NULL;
	}
	return file;
}

int map_file(const char *path, const char *what, struct mapped_file *f)
{
	struct stat st;
	int fd;

	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("cannot open %s '%s': %s", what, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		pr_err("%s '%s' is not a regular file", what, path);
		close(fd);
		return -1;
	}
	if (!st.st_size || (uint64_t)st.st_size > MAP_FILE_MAX) {
		pr_err("%s '%s' is %s", what, path,
		       st.st_size ? "too large (over 2 GiB)" : "empty");
		close(fd);
		return -1;
	}
	f->data = map_with_guard(fd, st.st_size);
	if (!f->data)
		pr_err("cannot map %s '%s': %s", what, path, strerror(errno));
	close(fd);
	if (!f->data)
		return -1;
	f->size = st.st_size;
	f->path = path;
	f->what = what;
	if (register_mapping(f)) {
		unmap_file(f);
		return -1;
	}
	return 0;
}

void unmap_file(struct mapped_file *f)
{
	unsigned int i;

	if (!f->data)
		return;
	for (i = 0; i < MAX_MAPPED; i++)
		if (mapped[i] == f)
			mapped[i] = NULL;
	munmap((void *)f->data, map_len(f->size));
	memset(f, 0, sizeof(*f));
}

static const struct mapped_file *mapping_at(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned int i;

	for (i = 0; i < MAX_MAPPED; i++) {
		uintptr_t base;

		if (!mapped[i])
			continue;
		base = (uintptr_t)mapped[i]->data;
		if (a >= base && a - base < map_len(mapped[i]->size))
			return mapped[i];
	}
	return NULL;
}

static void guard_sigbus(int sig, siginfo_t *si, void *uc)
{
	const struct mapped_file *f = mapping_at(si->si_addr);

	(void)uc;
	if (guard_jmp && f) {
		guard_culprit = f;
		siglongjmp(*guard_jmp, 1);
	}
	/* Not a file we mapped: die of it as we would have. */
	signal(sig, SIG_DFL);
	raise(sig);
}

int mapped_file_guard(int (*fn)(void *arg), void *arg)
{
	struct sigaction sa = {
		.sa_sigaction = guard_sigbus,
		.sa_flags = SA_SIGINFO | SA_NODEFER,
	}, old;
	sigjmp_buf jmp;
	int ret;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old)) {
		pr_err("sigaction(SIGBUS): %s", strerror(errno));
		return -1;
	}
	if (sigsetjmp(jmp, 1)) {
		pr_err("%s '%s' shrank while lkvm read it", guard_culprit->what,
		       guard_culprit->path);
		ret = -1;
	} else {
		guard_jmp = &jmp;
		ret = fn(arg);
	}
	guard_jmp = NULL;
	sigaction(SIGBUS, &old, NULL);
	return ret;
}
