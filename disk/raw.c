// SPDX-License-Identifier: GPL-2.0
/*
 * Raw disk images and block devices. Requests are served with vectored
 * positional I/O; discard and write-zeroes become fallocate() hole punching
 * and zero ranges, so a discarded range really frees host space.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/disk.h"
#include "lkvm/qcow2.h"
#include "lkvm/util.h"

static int disk_parse_aio(const char *s, size_t n, enum disk_aio_mode *mode)
{
	if (n == 8 && !strncmp(s, "io_uring", 8))
		*mode = DISK_AIO_URING;
	else if (n == 4 && !strncmp(s, "sync", 4))
		*mode = DISK_AIO_SYNC;
	else
		return -1;
	return 0;
}

static int disk_parse_format(const char *s, size_t n, enum disk_format *f)
{
	if (n == 3 && !strncmp(s, "raw", 3))
		*f = DISK_FORMAT_RAW;
	else if (n == 5 && !strncmp(s, "qcow2", 5))
		*f = DISK_FORMAT_QCOW2;
	else
		return -1;
	return 0;
}

int disk_parse_option(const char *arg, struct disk_config *cfg)
{
	const char *opt = strchr(arg, ',');
	size_t len = opt ? (size_t)(opt - arg) : strlen(arg);

	memset(cfg, 0, sizeof(*cfg));
	if (!len || len >= sizeof(cfg->path_buf)) {
		pr_err("-d '%s': %s image path", arg, len ? "too long an" : "no");
		return -1;
	}
	memcpy(cfg->path_buf, arg, len);
	cfg->path = cfg->path_buf;
	cfg->poll = VIRTIO_POLL_UNSET;
	while (opt) {
		const char *name = opt + 1, *next = strchr(name, ',');
		size_t n = next ? (size_t)(next - name) : strlen(name);

		if (n == 2 && !strncmp(name, "ro", 2)) {
			cfg->readonly = true;
		} else if (n == 6 && !strncmp(name, "direct", 6)) {
			cfg->direct = true;
		} else if (n > 5 && !strncmp(name, "poll=", 5)) {
			if (virtio_poll_parse_mode(name + 5, n - 5, &cfg->poll)) {
				pr_err("-d '%s': poll must be off, auto or on",
				       arg);
				return -1;
			}
		} else if (n > 7 && !strncmp(name, "format=", 7)) {
			if (disk_parse_format(name + 7, n - 7, &cfg->format)) {
				pr_err("-d '%s': format must be raw or qcow2",
				       arg);
				return -1;
			}
		} else if (n > 4 && !strncmp(name, "aio=", 4)) {
			if (disk_parse_aio(name + 4, n - 4, &cfg->aio)) {
				pr_err("-d '%s': aio must be io_uring or sync",
				       arg);
				return -1;
			}
		} else {
			pr_err("-d '%s': unknown disk option '%.*s' (ro, direct, poll=, aio=, format=)",
			       arg, (int)n, name);
			return -1;
		}
		opt = next;
	}
	return 0;
}

static int disk_lock(struct disk *disk)
{
	struct flock fl = {
		.l_type = disk->readonly ? F_RDLCK : F_WRLCK,
		.l_whence = SEEK_SET,
	};

	if (fcntl(disk->fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno == EAGAIN || errno == EACCES)
		pr_err("disk '%s' is in use: locked by another VM, or given twice",
		       disk->path);
	else
		pr_err("cannot lock disk '%s': %s", disk->path, strerror(errno));
	return -1;
}

/* A serial that stays the same for the same image across runs. */
static void disk_make_serial(struct disk *disk, const struct stat *st)
{
	char buf[DISK_SERIAL_LEN + 1];

	snprintf(buf, sizeof(buf), "lkvm-%08llx%07llx",
		 (unsigned long long)st->st_dev & 0xffffffff,
		 (unsigned long long)st->st_ino & 0xfffffff);
	memcpy(disk->serial, buf, DISK_SERIAL_LEN);
}

static int disk_get_size(struct disk *disk, const struct stat *st)
{
	if (S_ISBLK(st->st_mode)) {
		disk->is_block_device = true;
		if (ioctl(disk->fd, BLKGETSIZE64, &disk->size) < 0) {
			pr_err("cannot get the size of '%s': %s", disk->path,
			       strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!S_ISREG(st->st_mode)) {
		pr_err("disk '%s' is neither a file nor a block device",
		       disk->path);
		return -1;
	}
	disk->size = st->st_size;
	return 0;
}

/* What O_DIRECT needs: the logical block size, at least 512 bytes. */
static unsigned int disk_direct_alignment(struct disk *disk)
{
	int lbs = 0;

	if (disk->is_block_device && !ioctl(disk->fd, BLKSSZGET, &lbs) &&
	    lbs >= 512)
		return lbs;
	return 512;	/* the logical block size nearly every disk has */
}

/* raw, or qcow2 as the header says (or as format= insists). */
static int disk_open_format(struct disk *disk, const struct disk_config *cfg,
			    unsigned int depth)
{
	bool qcow2 = cfg->format != DISK_FORMAT_RAW &&
		     qcow2_is_qcow2(disk->fd);

	if (cfg->format == DISK_FORMAT_QCOW2 && !qcow2) {
		pr_err("disk '%s' is not a qcow2 image", disk->path);
		return -1;
	}
	if (qcow2)
		return qcow2_open(disk, depth);
	if (disk->size % 512)
		pr_warn("disk '%s': size is not a multiple of 512 bytes; the tail is not visible",
			cfg->path);
	return 0;
}

int disk_open(struct disk *disk, const struct disk_config *cfg)
{
	return disk_open_nested(disk, cfg, 0);
}

int disk_open_nested(struct disk *disk, const struct disk_config *cfg,
		     unsigned int depth)
{
	int flags = (cfg->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		    (cfg->direct ? O_DIRECT : 0);
	struct stat st;

	memset(disk, 0, sizeof(*disk));
	disk->path = cfg->path;
	disk->readonly = cfg->readonly;
	disk->fd = open(cfg->path, flags);
	if (disk->fd < 0) {
		pr_err("cannot open disk '%s': %s", cfg->path, strerror(errno));
		return -1;
	}
	disk->direct = cfg->direct;
	if (fstat(disk->fd, &st) < 0 || disk_get_size(disk, &st) ||
	    disk_lock(disk) || disk_open_format(disk, cfg, depth)) {
		close(disk->fd);
		disk->fd = -1;
		return -1;
	}
	disk_make_serial(disk, &st);
	if (cfg->direct)
		disk->align = disk_direct_alignment(disk);
	disk->nowait_read = disk->nowait_write = !cfg->direct;
	return 0;
}

void disk_close(struct disk *disk)
{
	qcow2_close(disk);
	if (disk->fd >= 0)
		close(disk->fd);
	disk->fd = -1;
}

/* Advance an iovec array past `done` bytes after a short transfer. */
static int iov_advance(struct iovec **iov, int *iovcnt, size_t done)
{
	while (*iovcnt && done >= (*iov)->iov_len) {
		done -= (*iov)->iov_len;
		(*iov)++;
		(*iovcnt)--;
	}
	if (*iovcnt) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + done;
		(*iov)->iov_len -= done;
	}
	return *iovcnt;
}

static int disk_io(struct disk *disk, const struct iovec *iov_in, int iovcnt,
		   uint64_t offset, bool write)
{
	struct iovec iov_buf[IOV_MAX], *iov = iov_buf;

	if (iovcnt > IOV_MAX)
		return -EINVAL;
	memcpy(iov_buf, iov_in, iovcnt * sizeof(*iov));
	while (iovcnt) {
		ssize_t n = write ? pwritev(disk->fd, iov, iovcnt, offset)
				  : preadv(disk->fd, iov, iovcnt, offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* the image shrank under us */
		offset += n;
		iov_advance(&iov, &iovcnt, n);
	}
	return 0;
}

static bool iov_aligned(const struct iovec *iov, int iovcnt, uint64_t offset,
			unsigned int align)
{
	int i;

	if (!align)
		return true;
	if (offset % align)
		return false;
	for (i = 0; i < iovcnt; i++)
		if ((uintptr_t)iov[i].iov_base % align || iov[i].iov_len % align)
			return false;
	return true;
}

/*
 * O_DIRECT wants aligned memory, but virtio lets a driver use any buffer:
 * such requests go through an aligned bounce buffer.
 */
static int disk_io_bounce(struct disk *disk, const struct iovec *iov,
			  int iovcnt, uint64_t offset, bool write)
{
	size_t len = 0, done = 0;
	struct iovec one;
	void *bounce;
	int i, ret;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (offset % disk->align || len % disk->align)
		return -EINVAL;	/* not whole blocks: nothing to bounce to */
	if (posix_memalign(&bounce, disk->align, len ? len : disk->align))
		return -ENOMEM;
	for (i = 0; write && i < iovcnt; done += iov[i].iov_len, i++)
		memcpy((uint8_t *)bounce + done, iov[i].iov_base, iov[i].iov_len);
	one = (struct iovec) { .iov_base = bounce, .iov_len = len };
	ret = disk_io(disk, &one, 1, offset, write);
	for (i = 0, done = 0; !ret && !write && i < iovcnt;
	     done += iov[i].iov_len, i++)
		memcpy(iov[i].iov_base, (uint8_t *)bounce + done, iov[i].iov_len);
	free(bounce);
	return ret;
}

bool disk_iov_direct_ok(const struct disk *disk, const struct iovec *iov,
			int iovcnt, uint64_t offset)
{
	return !disk->direct || iov_aligned(iov, iovcnt, offset, disk->align);
}

int disk_rw_rest(struct disk *disk, const struct iovec *iov, int iovcnt,
		 uint64_t offset, bool write, size_t done)
{
	struct iovec rest[IOV_MAX], *p = rest;

	if (iovcnt > IOV_MAX)
		return -EINVAL;
	memcpy(rest, iov, iovcnt * sizeof(*iov));
	if (!iov_advance(&p, &iovcnt, done))
		return 0;
	offset += done;
	return write ? disk_writev(disk, p, iovcnt, offset)
		     : disk_readv(disk, p, iovcnt, offset);
}

/* One RWF_NOWAIT call: 0 when whole, -EAGAIN when short or it would wait. */
static int disk_rw_nowait(struct disk *disk, const struct iovec *iov,
			  int iovcnt, uint64_t offset, bool write)
{
	size_t len = 0;
	ssize_t n;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	do {
		n = write ? pwritev2(disk->fd, iov, iovcnt, offset, RWF_NOWAIT)
			  : preadv2(disk->fd, iov, iovcnt, offset, RWF_NOWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* short: part of it is not cached; a redo costs less than a split */
	return (size_t)n == len ? 0 : -EAGAIN;
}

int disk_rw_try(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset, bool write)
{
	bool *nowait = write ? &disk->nowait_write : &disk->nowait_read;
	int ret;

	if (disk->qcow2)
		return qcow2_rw(disk, iov, iovcnt, offset, write);
	if (disk->direct)
		return -EAGAIN;
	if (__atomic_load_n(nowait, __ATOMIC_RELAXED)) {
		ret = disk_rw_nowait(disk, iov, iovcnt, offset, write);
		if (ret != -EOPNOTSUPP)
			return ret;
		__atomic_store_n(nowait, false, __ATOMIC_RELAXED);
	}
	return write ? disk_writev(disk, iov, iovcnt, offset)
		     : disk_readv(disk, iov, iovcnt, offset);
}

int disk_readv(struct disk *disk, const struct iovec *iov, int iovcnt,
	       uint64_t offset)
{
	if (disk->qcow2)
		return qcow2_rw(disk, iov, iovcnt, offset, false);
	if (disk->direct && !iov_aligned(iov, iovcnt, offset, disk->align))
		return disk_io_bounce(disk, iov, iovcnt, offset, false);
	return disk_io(disk, iov, iovcnt, offset, false);
}

int disk_writev(struct disk *disk, const struct iovec *iov, int iovcnt,
		uint64_t offset)
{
	if (disk->qcow2)
		return qcow2_rw(disk, iov, iovcnt, offset, true);
	if (disk->direct && !iov_aligned(iov, iovcnt, offset, disk->align))
		return disk_io_bounce(disk, iov, iovcnt, offset, true);
	return disk_io(disk, iov, iovcnt, offset, true);
}

int disk_flush(struct disk *disk)
{
	return fdatasync(disk->fd) ? -errno : 0;
}

int disk_discard(struct disk *disk, uint64_t offset, uint64_t len)
{
	if (!len)
		return 0;
	if (disk->qcow2)
		return qcow2_zero(disk, offset, len);
	if (disk->is_block_device) {
		uint64_t range[2] = { offset, len };

		return ioctl(disk->fd, BLKDISCARD, range) ? -errno : 0;
	}
	if (fallocate(disk->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      offset, len))
		return -errno;
	return 0;
}

/* The last resort for file systems without ZERO_RANGE (tmpfs, memfd). */
static int disk_write_zero_bytes(struct disk *disk, uint64_t offset,
				 uint64_t len)
{
	static const uint8_t zeroes[64 * 1024];

	while (len) {
		size_t chunk = len < sizeof(zeroes) ? len : sizeof(zeroes);
		ssize_t n = pwrite(disk->fd, zeroes, chunk, offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		offset += n;
		len -= n;
	}
	return 0;
}

/*
 * Zeroes read back whichever way the file system allows: a hole when the
 * guest lets us unmap, else ZERO_RANGE (the blocks stay allocated), else
 * plain writes of zeroes. A zero-length range is nothing to do.
 */
int disk_write_zeroes(struct disk *disk, uint64_t offset, uint64_t len,
		      bool may_unmap)
{
	if (!len)
		return 0;
	if (disk->qcow2)
		return qcow2_zero(disk, offset, len);
	if (disk->is_block_device) {
		uint64_t range[2] = { offset, len };

		return ioctl(disk->fd, BLKZEROOUT, range) ? -errno : 0;
	}
	if (may_unmap && !fallocate(disk->fd, FALLOC_FL_PUNCH_HOLE |
				    FALLOC_FL_KEEP_SIZE, offset, len))
		return 0;
	if (!fallocate(disk->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		       offset, len))
		return 0;
	if (errno != EOPNOTSUPP && errno != EINVAL)
		return -errno;
	return disk_write_zero_bytes(disk, offset, len);
}
