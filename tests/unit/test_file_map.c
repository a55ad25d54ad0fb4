// SPDX-License-Identifier: GPL-2.0
/*
 * The loaders' file mappings and guest_mem_load(): a mapped file reads as
 * its bytes with zeroes to the end of its last page and a fault after it,
 * files that cannot be loaded are refused in one line, a file truncated
 * while mapped is an error and not a SIGBUS, and loading into fresh guest
 * RAM leaves zero pages untouched (never faulted in) but still zeroes a
 * page that held something.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/file_map.h"
#include "lkvm/guest_mem.h"
#include "lkvm/util.h"

#define PAGE	4096

static char msg[1024];
static FILE *saved_stderr;

static void capture_start(void)
{
	memset(msg, 0, sizeof(msg));
	saved_stderr = stderr;
	stderr = fmemopen(msg, sizeof(msg) - 1, "w");
	assert_non_null(stderr);
}

static void capture_stop(void)
{
	fclose(stderr);
	stderr = saved_stderr;
}

/* A temporary file holding len bytes of pattern; its path in buf. */
static void make_file(char *buf, size_t len, unsigned char pattern)
{
	unsigned char *data = malloc(len ? len : 1);
	int fd;

	strcpy(buf, "/tmp/lkvm-test-file-map-XXXXXX");
	fd = mkstemp(buf);
	assert_true(fd >= 0);
	memset(data, pattern, len);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	free(data);
}

static void test_maps_bytes_then_zeroes(void **state)
{
	struct mapped_file f;
	char path[64];
	const uint8_t *p;
	size_t i;

	make_file(path, PAGE + 100, 0xa5);
	assert_int_equal(map_file(path, "kernel", &f), 0);
	p = f.data;
	assert_int_equal(f.size, PAGE + 100);
	for (i = 0; i < f.size; i++)
		assert_int_equal(p[i], 0xa5);
	for (; i < 2 * PAGE; i++)
		assert_int_equal(p[i], 0);
	unmap_file(&f);
	assert_null(f.data);
	unlink(path);
}

/* The page after the file is a guard: a parser that overruns faults. */
static void test_guard_page_faults(void **state)
{
	struct mapped_file f;
	char path[64];
	int status;
	pid_t pid;

	make_file(path, 10, 1);
	assert_int_equal(map_file(path, "kernel", &f), 0);
	pid = fork();
	if (pid == 0) {
		volatile const uint8_t *p = f.data;

		signal(SIGSEGV, SIG_DFL);
		(void)p[PAGE];
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	unmap_file(&f);
	unlink(path);
}

static void expect_refused(const char *path, const char *what)
{
	struct mapped_file f;

	capture_start();
	assert_int_equal(map_file(path, "initrd", &f), -1);
	capture_stop();
	assert_null(f.data);
	assert_non_null(strstr(msg, "initrd"));
	assert_non_null(strstr(msg, path));
	assert_non_null(strstr(msg, what));
	/* One line. */
	assert_ptr_equal(strchr(msg, '\n'), msg + strlen(msg) - 1);
}

static void test_refusals(void **state)
{
	char path[64];

	make_file(path, 0, 0);
	expect_refused(path, "empty");
	unlink(path);
	expect_refused(path, "cannot open");
	expect_refused("/tmp", "not a regular file");
}

struct reader {
	const struct mapped_file *f;
	size_t offset;
	unsigned int sum;
};

static int read_at(void *arg)
{
	struct reader *r = arg;

	r->sum += ((const volatile uint8_t *)r->f->data)[r->offset];
	return 0;
}

static void sigbus_marker(int sig)
{
	_exit(42);
}

/* A file truncated under the mapping: one error line, the old handler back. */
static void test_shrunk_file_is_an_error(void **state)
{
	struct reader r = { .offset = 2 * PAGE };
	struct sigaction old;
	struct mapped_file f;
	char path[64];

	make_file(path, 3 * PAGE, 7);
	assert_int_equal(map_file(path, "kernel", &f), 0);
	r.f = &f;
	assert_int_equal(mapped_file_guard(read_at, &r), 0);
	assert_int_equal(r.sum, 7);
	assert_int_equal(truncate(path, PAGE), 0);
	signal(SIGBUS, sigbus_marker);
	capture_start();
	assert_int_equal(mapped_file_guard(read_at, &r), -1);
	capture_stop();
	assert_non_null(strstr(msg, "kernel '"));
	assert_non_null(strstr(msg, "shrank"));
	assert_int_equal(sigaction(SIGBUS, NULL, &old), 0);
	assert_ptr_equal(old.sa_handler, sigbus_marker);
	signal(SIGBUS, SIG_DFL);
	unmap_file(&f);
	unlink(path);
}

/*
 * A guest_mem over an anonymous mapping, as vm_setup_ram() makes it,
 * between two inaccessible pages: otherwise the kernel may merge it with
 * a neighbouring anonymous mapping (seen on 6.18), and its smaps entry
 * would count that one's pages too.
 */
static uint8_t *fresh_ram(struct guest_mem *mem, size_t size)
{
	uint8_t *p = mmap(NULL, size + 2 * PAGE, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *ram = p + PAGE;

	assert_true(p != MAP_FAILED);
	assert_int_equal(mprotect(ram, size, PROT_READ | PROT_WRITE), 0);
	/* No huge pages here: residency is checked page by page. */
	madvise(ram, size, MADV_NOHUGEPAGE);
	memset(mem, 0, sizeof(*mem));
	assert_int_equal(guest_mem_add(mem, 0x100000, size, ram), 0);
	return ram;
}

/*
 * KiB of anonymous memory the kernel gave the mapping at ram: pages lkvm
 * only read are the shared zero page and count for nothing here.
 */
static unsigned long anon_kib(const uint8_t *ram)
{
	char line[256], want[32];
	unsigned long kib = ~0UL;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)ram);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, want, strlen(want));
		else if (in && sscanf(line, "Anonymous: %lu kB", &kib) == 1)
			break;
	}
	fclose(f);
	assert_true(kib != ~0UL);
	return kib;
}

static void test_load_skips_zero_pages(void **state)
{
	size_t size = 16 * PAGE, len = 6 * PAGE + 10;
	struct guest_mem mem;
	uint8_t *ram = fresh_ram(&mem, size);
	uint8_t *src = calloc(1, len);
	unsigned char vec[16];
	size_t i;

	/* Pages 0 and 3 of the image have data, the rest is zero. */
	memset(src + 5, 0x11, 100);
	memset(src + 3 * PAGE + 7, 0x22, 50);
	assert_true(guest_mem_load(&mem, 0x100000 + PAGE, src, len));
	assert_int_equal(anon_kib(ram), 2 * PAGE / 1024);
	/* Not even the zero page: --stats counts guest RAM with mincore(). */
	assert_int_equal(mincore(ram, size, vec), 0);
	for (i = 0; i < 16; i++)
		assert_int_equal(vec[i] & 1, i == 1 || i == 4);
	/* NULL source: zeroes, without faulting anything in either. */
	assert_true(guest_mem_load(&mem, 0x100000 + 8 * PAGE, NULL, 4 * PAGE));
	assert_int_equal(anon_kib(ram), 2 * PAGE / 1024);
	/*
	 * Reads last: where the kernel gives no shared zero page for a read
	 * fault (seen on 6.18), they fault pages in.
	 */
	assert_memory_equal(ram + PAGE, src, len);
	for (i = 8 * PAGE; i < 12 * PAGE; i++)
		assert_int_equal(ram[i], 0);
	free(src);
	munmap(ram - PAGE, size + 2 * PAGE);
}

/* Memory that is not zero any more is still overwritten with zeroes. */
static void test_load_zeroes_dirty_pages(void **state)
{
	size_t size = 8 * PAGE;
	struct guest_mem mem;
	uint8_t *ram = fresh_ram(&mem, size);
	uint8_t zero[3 * PAGE] = { 0 };

	memset(ram, 0xff, size);
	/* Unaligned: the chunks follow guest pages, not the source's. */
	assert_true(guest_mem_load(&mem, 0x100000 + 100, zero, sizeof(zero)));
	assert_memory_equal(ram + 100, zero, sizeof(zero));
	assert_int_equal(ram[99], 0xff);
	assert_int_equal(ram[100 + sizeof(zero)], 0xff);
	assert_true(guest_mem_load(&mem, 0x100000 + 5 * PAGE + 5, NULL, 10));
	assert_int_equal(ram[5 * PAGE + 4], 0xff);
	assert_int_equal(ram[5 * PAGE + 5], 0);
	assert_int_equal(ram[5 * PAGE + 14], 0);
	assert_int_equal(ram[5 * PAGE + 15], 0xff);
	/* Outside RAM: refused, nothing written. */
	assert_false(guest_mem_load(&mem, 0x100000 + size - 4, zero, 8));
	assert_int_equal(ram[size - 1], 0xff);
	munmap(ram - PAGE, size + 2 * PAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_bytes_then_zeroes),
		cmocka_unit_test(test_guard_page_faults),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_shrunk_file_is_an_error),
		cmocka_unit_test(test_load_skips_zero_pages),
		cmocka_unit_test(test_load_zeroes_dirty_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
