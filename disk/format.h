/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the disk layer: what an image format provides (struct
 * disk_format, one table per format: raw.c, qcow2.c) and what the layer
 * (disk.c, io.c) does with it. The layer opens the file, picks the format
 * (format=, or the first in its probe chain whose probe takes the image's
 * first bytes), lets the format open, opens the backing file the format
 * asks for, and sends each request to the format's ops. A format maps
 * guest requests onto its file; it knows neither virtio nor the other
 * formats, and reads its backing file through the layer (disk_readv()).
 */
#ifndef LKVM_DISK_FORMAT_H
#define LKVM_DISK_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "lkvm/disk.h"

/* The most of an image's first bytes a probe looks at. */
#define DISK_PROBE_BYTES	512

/*
 * A backing file the format wants under it: the layer opens it (read-only,
 * one level further down the chain) into *disk, which the format owns,
 * once the format's open() is done, and closes it before the format's
 * close(). Its format is the one the image names, never probed (raw when
 * it names none); where it lies is checked (disk_backing_path()).
 */
struct disk_backing {
	struct disk *disk;		/* NULL: none */
	const char *name;		/* as the image has it; the format's */
	const char *format;		/* the image's word for it; NULL: raw */
};

/* What the layer tells a format's open(), and what it hears back. */
struct disk_open_ctx {
	unsigned int depth;		/* 0: the image the user named */
	/*
	 * The image was probed (no format=) and found to be this format:
	 * it must not come to look like any of these others (their probes),
	 * or its next open would take it for one.
	 */
	const struct disk_format *const *guard;
	unsigned int nr_guard;
	struct disk_backing backing;	/* filled by open() */
};

/*
 * A format's entry points; every one gets the disk the layer opened, its
 * file in disk->file, the format's own state in disk->fmt_state. A format
 * that writes through (nothing of its waits in memory) has no flush: the
 * file's data sync is its flush, whichever engine does it.
 */
struct disk_format {
	const char *name;		/* as format= names it */
	/* Do these first bytes (len of them, at most DISK_PROBE_BYTES) say
	 * the image is ours? NULL: anything is (raw, last in the chain). */
	bool (*probe)(const uint8_t *head, size_t len);
	/* Take over the disk; set disk->size; -1 with one error line. */
	int (*open)(struct disk *disk, struct disk_open_ctx *ctx);
	void (*close)(struct disk *disk);	/* NULL: nothing to free */
	/* Whole transfers within disk->size; -errno. */
	int (*rw)(struct disk *disk, const struct iovec *iov, int iovcnt,
		  uint64_t offset, bool write);
	/*
	 * disk_rw_try(): -EAGAIN hands the request to the io_uring engine
	 * as it is, so only a format whose guest offsets are file offsets
	 * may return it. NULL: rw(), at once.
	 */
	int (*rw_try)(struct disk *disk, const struct iovec *iov, int iovcnt,
		      uint64_t offset, bool write);
	int (*discard)(struct disk *disk, uint64_t offset, uint64_t len);
	int (*write_zeroes)(struct disk *disk, uint64_t offset, uint64_t len,
			    bool may_unmap);
	/* Every completed write onto the disk (qcow2's tables wait). */
	int (*flush)(struct disk *disk);
	/*
	 * Does the format hold completed writes in memory now? If not, the
	 * file's data sync alone is a flush (an engine may queue it). NULL:
	 * whenever it has a flush.
	 */
	bool (*holds_writes)(struct disk *disk);
};

extern const struct disk_format disk_raw_format;
extern const struct disk_format disk_qcow2_format;

/* format=WORD: 0 and *id, or -1 for a word that names no format. */
int disk_format_parse(const char *s, size_t n, enum disk_format_id *id);
/*
 * The backing file `name` of the image at `image`, resolved; refused with
 * one line naming both unless it lies inside the image's directory or
 * inside allowed_dir (resolved; NULL: none), and is a regular file of a
 * file system of files. malloc'd; NULL when refused.
 */
char *disk_backing_path(const char *image, const char *name,
			const char *allowed_dir);

#endif
