// SPDX-License-Identifier: GPL-2.0
/*
 * What the nested sandbox tests (sandbox-job.sh isolation) do to a 9p
 * share, from a Linux guest under lkvm sandbox and from L1 beside it.
 * One line on stdout per run, the test's fact; exit 0 when it ran.
 *
 *   p9-check unlinked DIR      open, write, unlink, then fstat, ftruncate,
 *                              fchmod and read the open file: "ok", or the
 *                              step that failed and its errno
 *   p9-check find FILE WORD [direct]
 *                              FILE read whole (O_DIRECT if asked): "found"
 *                              if WORD is in it, else "absent"; "refused
 *                              ERRNO" if it cannot be opened or read
 *   p9-check mem PROCDIR [direct]
 *                              PROCDIR/maps' first mapping (O_DIRECT if
 *                              asked, both), read from PROCDIR/mem:
 *                              "read N", or "refused ERRNO"
 *   p9-check hold FILE DONE S  a read lock on all of FILE (fcntl), "held",
 *                              and hold it until DONE exists (S seconds
 *                              at most)
 *   p9-check probe FILE        what a host process sees of FILE's locks
 *                              (F_OFD_GETLK for a write lock): "none",
 *                              "read" or "write"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failed(const char *step)
{
	printf("%s %d\n", step, errno);
	return 0;
}

static int unlinked(const char *dir)
{
	char path[4096], buf[16] = "";
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/p9-check.tmp", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return failed("open");
	if (write(fd, "12345678", 8) != 8)
		return failed("write");
	if (unlink(path))
		return failed("unlink");
	if (fstat(fd, &st))
		return failed("fstat");
	if (st.st_size != 8 || st.st_nlink != 0) {
		printf("fstat size=%lld nlink=%lu\n", (long long)st.st_size,
		       (unsigned long)st.st_nlink);
		return 0;
	}
	if (ftruncate(fd, 3))
		return failed("ftruncate");
	if (fstat(fd, &st))
		return failed("fstat-after");
	if (st.st_size != 3) {
		printf("ftruncate size=%lld\n", (long long)st.st_size);
		return 0;
	}
	if (fchmod(fd, 0600))
		return failed("fchmod");
	if (pread(fd, buf, sizeof(buf) - 1, 0) != 3 || strcmp(buf, "123")) {
		printf("read '%s'\n", buf);
		return 0;
	}
	printf("ok\n");
	return 0;
}

static int find(const char *file, const char *word, int flags)
{
	static char buf[1 << 20];
	size_t len = 0;
	ssize_t n;
	int fd = open(file, O_RDONLY | flags);

	if (fd < 0)
		return failed("refused");
	while (len < sizeof(buf) - 1 &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	if (n < 0)
		return failed("refused");
	/* environ's strings end in NULs: search them one by one */
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
		buf[len] = '\0';
		if (strstr(buf + i, word)) {
			printf("found\n");
			return 0;
		}
	}
	printf("absent\n");
	return 0;
}

static int mem(const char *procdir, int flags)
{
	char path[4096], buf[64] = "";
	unsigned long long start;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/maps", procdir);
	fd = open(path, O_RDONLY | flags);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) < 0)
		return failed("refused");
	close(fd);
	if (sscanf(buf, "%llx-", &start) != 1) {
		printf("maps unreadable\n");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/mem", procdir);
	fd = open(path, O_RDONLY | flags);
	if (fd < 0)
		return failed("refused");
	n = pread(fd, buf, sizeof(buf), (off_t)start);
	if (n < 0)
		return failed("refused");
	printf("read %zd\n", n);
	return 0;
}

static int hold(const char *file, const char *done, int secs)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	time_t end = time(NULL) + secs;
	int fd = open(file, O_RDONLY);

	if (fd < 0)
		return failed("open");
	if (fcntl(fd, F_SETLK, &fl))
		return failed("lock");
	printf("held\n");
	fflush(stdout);
	while (access(done, F_OK) && time(NULL) < end)
		usleep(100000);
	return 0;
}

static int probe(const char *file)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(file, O_RDWR);

	if (fd < 0 || fcntl(fd, F_OFD_GETLK, &fl))
		return failed("probe");
	printf("%s\n", fl.l_type == F_UNLCK ? "none" :
		       fl.l_type == F_RDLCK ? "read" : "write");
	return 0;
}

/* "direct" as the optional last argument: O_DIRECT. */
static int direct(int argc, char **argv, int at)
{
	return argc > at && !strcmp(argv[at], "direct") ? O_DIRECT : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "unlinked"))
		return unlinked(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "find"))
		return find(argv[2], argv[3], direct(argc, argv, 4));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "mem"))
		return mem(argv[2], direct(argc, argv, 3));
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return hold(argv[2], argv[3], atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "probe"))
		return probe(argv[2]);
	fprintf(stderr, "usage: p9-check unlinked DIR | find FILE WORD [direct] | mem PROCDIR [direct] | hold FILE DONE SECS | probe FILE\n");
	return 2;
}
