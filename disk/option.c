// SPDX-License-Identifier: GPL-2.0
/*
 * The disk's part of -d PATH[,key...]: the path and the keys that say how
 * the image is opened (struct disk_params). Keys of the device that the
 * disk goes into (poll=) are its caller's (struct disk_option_extra), so
 * that the disk layer needs nothing of virtio.
 */
#include <limits.h>
#include <string.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "format.h"

static int parse_aio(const char *s, size_t n, enum disk_aio_mode *mode)
{
	if (n == 8 && !strncmp(s, "io_uring", 8))
		*mode = DISK_AIO_URING;
	else if (n == 4 && !strncmp(s, "sync", 4))
		*mode = DISK_AIO_SYNC;
	else
		return -1;
	return 0;
}

/* Where the parsed strings go: buf, past what is there already. */
struct strings {
	char *next;
	size_t room;
};

static const char *keep(struct strings *s, const char *str, size_t n)
{
	char *kept = s->next;

	if (n >= s->room || n >= PATH_MAX)
		return NULL;
	memcpy(kept, str, n);
	kept[n] = '\0';
	s->next += n + 1;
	s->room -= n + 1;
	return kept;
}

/* 0 taken, -1 refused (said so), 1 not a disk key. */
static int parse_key(const char *arg, const char *key, size_t n,
		     struct disk_params *p, struct strings *s)
{
	if (n == 2 && !strncmp(key, "ro", 2)) {
		p->readonly = true;
	} else if (n == 6 && !strncmp(key, "direct", 6)) {
		p->direct = true;
	} else if (n > 7 && !strncmp(key, "format=", 7)) {
		if (disk_format_parse(key + 7, n - 7, &p->format)) {
			pr_err("-d '%s': format must be raw or qcow2", arg);
			return -1;
		}
	} else if (n > 12 && !strncmp(key, "backing-dir=", 12)) {
		p->backing_dir = keep(s, key + 12, n - 12);
		if (!p->backing_dir) {
			pr_err("-d '%s': too long a backing-dir", arg);
			return -1;
		}
	} else if (n > 4 && !strncmp(key, "aio=", 4)) {
		if (parse_aio(key + 4, n - 4, &p->aio)) {
			pr_err("-d '%s': aio must be io_uring or sync", arg);
			return -1;
		}
	} else {
		return 1;
	}
	return 0;
}

int disk_parse_option(const char *arg, struct disk_params *p, char *buf,
		      size_t size, const struct disk_option_extra *extra)
{
	const char *opt = strchr(arg, ',');
	size_t len = opt ? (size_t)(opt - arg) : strlen(arg);
	struct strings s = { buf, size };

	memset(p, 0, sizeof(*p));
	p->path = len ? keep(&s, arg, len) : NULL;
	if (!p->path) {
		pr_err("-d '%s': %s image path", arg, len ? "too long an" : "no");
		return -1;
	}
	while (opt) {
		const char *key = opt + 1, *next = strchr(key, ',');
		size_t n = next ? (size_t)(next - key) : strlen(key);
		int ret = parse_key(arg, key, n, p, &s);

		if (ret > 0 && extra)
			ret = extra->parse(extra->opaque, arg, key, n);
		if (ret < 0)
			return -1;
		if (ret > 0) {
			pr_err("-d '%s': unknown disk option '%.*s' (ro, direct, %s%saio=, format=, backing-dir=)",
			       arg, (int)n, key, extra ? extra->keys : "",
			       extra ? ", " : "");
			return -1;
		}
		opt = next;
	}
	return 0;
}
