// SPDX-License-Identifier: GPL-2.0
/* File, number and clock helpers used by the CLI, the loaders and the run loop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/util.h"

/* Files lkvm reads whole (kernels, initrds, firmware) are capped here. */
#define READ_FILE_MAX	(2ULL * GiB)

int read_file(const char *path, const char *what, void **data, size_t *size)
{
	struct stat st;
	size_t done = 0;
	char *buf;
	int fd;

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
	if ((uint64_t)st.st_size > READ_FILE_MAX) {
		pr_err("%s '%s' is too large", what, path);
		close(fd);
		return -1;
	}
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf) {
		pr_err("out of memory reading %s '%s'", what, path);
		close(fd);
		return -1;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			pr_err("cannot read %s '%s': %s", what, path,
			       n ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return -1;
		}
		done += n;
	}
	close(fd);
	*data = buf;
	*size = done;
	return 0;
}

bool parse_u64(const char *s, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*val = v;
	return true;
}

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int poll_timeout_ms(double deadline_ms, double now)
{
	double left;

	if (deadline_ms <= 0)
		return -1;
	left = deadline_ms - now;
	if (left <= 0)
		return 0;
	if (left >= INT_MAX)
		return INT_MAX;
	return (int)left + ((int)left < left);	/* rounded up */
}
