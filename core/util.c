// SPDX-License-Identifier: GPL-2.0
/* Number and clock helpers used by the CLI and the run loop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/util.h"

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

void cond_deadline_in(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int copy_file_into(int dst, const char *path)
{
	struct stat st;
	off_t off = 0;
	int err = 0, src = open(path, O_RDONLY | O_CLOEXEC);

	if (src < 0)
		return -1;
	if (fstat(src, &st))
		err = errno;
	while (!err && off < st.st_size) {
		ssize_t n = sendfile(dst, src, &off, st.st_size - off);

		if (n <= 0)
			err = n < 0 ? errno : EIO;	/* shrank under us */
	}
	close(src);
	errno = err;
	return err ? -1 : 0;
}
