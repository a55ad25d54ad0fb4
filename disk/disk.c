// SPDX-License-Identifier: GPL-2.0
/*
 * Opening a disk (lkvm/disk.h): its file (lkvm/disk_file.h), then its
 * format, the one format= names or the first of the probe chain whose
 * probe takes the image's first bytes, then the backing file the format
 * asks for, down to a bounded depth. Requests are io.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
static size_t read_head(struct disk *disk, uint8_t *head)
{
	ssize_t n = disk_file_read_head(&disk->file, head);

	return n < 0 ? 0 : MIN((size_t)n, (size_t)DISK_PROBE_BYTES);
}

static const struct disk_format *pick_format(struct disk *disk,
					     enum disk_format_id id)
{
	const struct disk_format *fmt = formats[id];
	uint8_t head[DISK_FILE_HEAD];
	unsigned int i;
	size_t n;

	if (fmt && !fmt->probe)
		return fmt;
	n = read_head(disk, head);
	if (fmt) {
		if (fmt->probe(head, n))
			return fmt;
		pr_err("disk '%s' is not a %s image", disk->path, fmt->name);
		return NULL;
	}
	for (i = 0; i < ARRAY_SIZE(probe_chain); i++)
		if (!probe_chain[i]->probe || probe_chain[i]->probe(head, n))
			break;
	return probe_chain[i];
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

static int open_chain(struct disk *disk, const struct disk_params *p,
		      unsigned int depth);

static int open_backing(struct disk *disk, const struct disk_backing *b,
			unsigned int depth)
{
	struct disk_params p = { .path = b->path, .readonly = true };

	if (depth >= DISK_MAX_DEPTH) {
		pr_err("disk '%s': qcow2 backing chain deeper than %d (a loop?)",
		       disk->path, DISK_MAX_DEPTH);
		return -1;
	}
	if (open_chain(b->disk, &p, depth + 1))
		return -1;
	disk->backing = b->disk;
	return 0;
}

static int open_chain(struct disk *disk, const struct disk_params *p,
		      unsigned int depth)
{
	struct disk_open_ctx ctx = { .depth = depth };
	const struct disk_format *fmt;

	memset(disk, 0, sizeof(*disk));
	disk->path = p->path;
	disk->readonly = p->readonly;
	disk->aio = p->aio;
	if (disk_file_open(&disk->file, p->path, p->readonly, p->direct))
		return -1;
	fmt = pick_format(disk, p->format);
	if (!fmt || fmt->open(disk, &ctx))
		goto fail;
	disk->fmt = fmt;
	if (ctx.backing.disk && open_backing(disk, &ctx.backing, depth)) {
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

int disk_open(struct disk *disk, const struct disk_params *p)
{
	if (open_chain(disk, p, 0))
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
	from->file.fd = -1;
}
