// SPDX-License-Identifier: GPL-2.0
/*
 * Opening a disk (lkvm/disk.h): its file (lkvm/disk_file.h), then its
 * format, the one format= names or the first of the probe chain whose
 * probe takes the image's first bytes, then the backing file the format
 * asks for, down to a bounded depth. Only the image the user named is
 * ever probed: a backing file is what the image that names it says it is
 * (raw when it says nothing), and lies where disk_backing_path() allows.
 * Requests are io.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lkvm/disk.h"
#include "lkvm/disk_aio.h"
#include "lkvm/util.h"
#include "format.h"

#define DISK_MAX_DEPTH	8	/* backing files under an image */

/* In the order they are probed: raw takes anything, so it comes last. */
static const struct disk_format *const probe_chain[] = {
	&disk_qcow2_format,
	&disk_raw_format,
};

static const struct disk_format *const formats[] = {
	[DISK_FORMAT_RAW] = &disk_raw_format,
	[DISK_FORMAT_QCOW2] = &disk_qcow2_format,
};

int disk_format_parse(const char *s, size_t n, enum disk_format_id *id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(formats); i++)
		if (formats[i] && strlen(formats[i]->name) == n &&
		    !strncmp(formats[i]->name, s, n)) {
			*id = i;
			return 0;
		}
	return -1;
}

/* The image's first bytes; none when they cannot be read. */
static size_t read_head(struct disk *disk, struct disk_file_head *head)
{
	ssize_t n = disk_file_read_head(&disk->file, head);

	return n < 0 ? 0 : MIN((size_t)n, (size_t)DISK_PROBE_BYTES);
}

/*
 * The format the image is opened as: the one named (format=, or for a
 * backing file the image's word for it); else, for the image the user
 * named, the first of the chain whose probe takes its first bytes (found
 * raw, it is told what it must never come to look like); else, for a
 * backing file, raw, refused when it looks like anything else.
 */
static const struct disk_format *pick_format(struct disk *disk,
					     enum disk_format_id id,
					     const char *parent,
					     struct disk_open_ctx *ctx)
{
	const struct disk_format *fmt = formats[id];
	struct disk_file_head head;
	unsigned int i;
	size_t n;

	if (fmt && !fmt->probe)
		return fmt;
	n = read_head(disk, &head);
	if (fmt) {
		if (fmt->probe(head.b, n))
			return fmt;
		if (parent)
			pr_err("disk '%s': backing file '%s' is not a %s image",
			       parent, disk->path, fmt->name);
		else
			pr_err("disk '%s' is not a %s image", disk->path,
			       fmt->name);
		return NULL;
	}
	for (i = 0; i < ARRAY_SIZE(probe_chain); i++)
		if (!probe_chain[i]->probe || probe_chain[i]->probe(head.b, n))
			break;
	fmt = probe_chain[i];
	if (!parent && !fmt->probe) {
		ctx->guard = probe_chain;
		ctx->nr_guard = ARRAY_SIZE(probe_chain);
	}
	if (!parent || !fmt->probe)
		return fmt;
	pr_err("disk '%s': backing file '%s' looks like a %s image, but the image names no format for it (qemu-img rebase -u -F %s)",
	       parent, disk->path, fmt->name, fmt->name);
	return NULL;
}

/* A serial that stays the same for the same image across runs. */
static void make_serial(struct disk *disk)
{
	char buf[DISK_SERIAL_LEN + 1];

	snprintf(buf, sizeof(buf), "lkvm-%08llx%07llx",
		 (unsigned long long)disk->file.dev & 0xffffffff,
		 (unsigned long long)disk->file.ino & 0xfffffff);
	memcpy(disk->serial, buf, DISK_SERIAL_LEN);
}

/* How far down a chain an open is, and what the whole chain may use. */
struct chain {
	unsigned int depth;		/* 0: the image the user named */
	const char *allowed_dir;	/* backing-dir=, resolved; NULL: none */
};

static int open_chain(struct disk *disk, const struct disk_params *p,
		      const struct chain *c, const char *parent);

static int open_backing(struct disk *disk, const struct disk_backing *b,
			const struct chain *c)
{
	struct disk_params p = { .readonly = true };
	struct chain down = { c->depth + 1, c->allowed_dir };
	char *path;

	if (c->depth >= DISK_MAX_DEPTH) {
		pr_err("disk '%s': qcow2 backing chain deeper than %d (a loop?)",
		       disk->path, DISK_MAX_DEPTH);
		return -1;
	}
	if (b->format &&
	    disk_format_parse(b->format, strlen(b->format), &p.format)) {
		pr_err("disk '%s': backing file '%s': format '%s' is not supported (raw or qcow2)",
		       disk->path, b->name, b->format);
		return -1;
	}
	path = disk_backing_path(disk->path, b->name, c->allowed_dir);
	if (!path)
		return -1;
	p.path = path;
	if (open_chain(b->disk, &p, &down, disk->path)) {
		free(path);
		return -1;
	}
	b->disk->own_path = path;
	disk->backing = b->disk;
	return 0;
}

/* parent: the image that names this one as its backing file, or NULL. */
static int open_chain(struct disk *disk, const struct disk_params *p,
		      const struct chain *c, const char *parent)
{
	struct disk_open_ctx ctx = { .depth = c->depth };
	unsigned int how = (p->readonly ? DISK_FILE_READONLY : 0) |
			   (p->direct ? DISK_FILE_DIRECT : 0) |
			   (parent ? DISK_FILE_REGULAR : 0);
	const struct disk_format *fmt;

	memset(disk, 0, sizeof(*disk));
	disk->path = p->path;
	disk->readonly = p->readonly;
	disk->aio = p->aio;
	if (disk_file_open(&disk->file, p->path, how))
		return -1;
	fmt = pick_format(disk, p->format, parent, &ctx);
	if (!fmt || fmt->open(disk, &ctx))
		goto fail;
	disk->fmt = fmt;
	if (ctx.backing.disk && open_backing(disk, &ctx.backing, c)) {
		if (fmt->close)
			fmt->close(disk);
		disk->fmt = NULL;
		goto fail;
	}
	make_serial(disk);
	return 0;
fail:
	disk_file_close(&disk->file);
	return -1;
}

/*
 * io_uring only where its rings can be confined (lkvm/disk_aio.h): on an
 * older kernel the disk is served one request at a time, with a note, or
 * refused when aio=io_uring insists. Where io_uring is refused outright
 * the device finds out itself (and says so).
 */
static int pick_engine(struct disk *disk)
{
	if (disk->aio == DISK_AIO_SYNC || disk_aio_check() != -EOPNOTSUPP)
		return 0;
	if (disk->aio == DISK_AIO_URING) {
		pr_err("disk '%s': aio=io_uring: this kernel cannot restrict io_uring rings (Linux 5.10 can)",
		       disk->path);
		return -1;
	}
	pr_info("disk '%s': this kernel cannot restrict io_uring rings: one request at a time",
		disk->path);
	disk->aio = DISK_AIO_SYNC;
	return 0;
}

/* backing-dir=, resolved: malloc'd; NULL with a message. */
static char *allowed_dir(const struct disk_params *p)
{
	char *dir = realpath(p->backing_dir, NULL);
	struct stat st;

	if (dir && !stat(dir, &st) && S_ISDIR(st.st_mode))
		return dir;
	pr_err("disk '%s': backing-dir '%s': %s", p->path, p->backing_dir,
	       dir ? "not a directory" : strerror(errno));
	free(dir);
	return NULL;
}

int disk_open(struct disk *disk, const struct disk_params *p)
{
	struct chain c = { 0 };
	char *dir = NULL;
	int ret;

	memset(disk, 0, sizeof(*disk));	/* safe to close, whatever happens */
	if (p->backing_dir) {
		dir = allowed_dir(p);
		if (!dir)
			return -1;
	}
	c.allowed_dir = dir;
	ret = open_chain(disk, p, &c, NULL);
	free(dir);
	if (ret)
		return -1;
	if (pick_engine(disk)) {
		disk_close(disk);
		return -1;
	}
	return 0;
}

void disk_close(struct disk *disk)
{
	if (!disk || !disk->fmt)
		return;
	disk_close(disk->backing);
	if (disk->fmt->close)
		disk->fmt->close(disk);
	disk_file_close(&disk->file);
	free(disk->own_path);
	disk->own_path = NULL;
	disk->fmt = NULL;
	disk->fmt_state = NULL;
	disk->backing = NULL;
}

void disk_move(struct disk *to, struct disk *from)
{
	*to = *from;
	from->fmt = NULL;
	from->fmt_state = NULL;
	from->backing = NULL;
	from->own_path = NULL;
	from->file.fd = -1;
}
