// SPDX-License-Identifier: GPL-2.0
/*
 * The file under a disk image and its synchronous engine: see
 * lkvm/disk_file.h. Requests are served with vectored positional I/O;
 * discard and write-zeroes become fallocate() hole punching and zero
 * ranges (or the block device's ioctls), so a discarded range really
 * frees host space.
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

#include "lkvm/disk_file.h"
#include "lkvm/util.h"

static int file_lock(struct disk_file *f)
{
	struct flock fl = {
		.l_type = f->readonly ? F_RDLCK : F_WRLCK,
		.l_whence = SEEK_SET,
	};

	if (fcntl(f->fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	if (errno == EAGAIN || errno == EACCES)
		pr_err("disk '%s' is in use: locked by another VM, or given twice",
		       f->path);
	else
		pr_err("cannot lock disk '%s': %s", f->path, strerror(errno));
	return -1;
}

static int file_get_size(struct disk_file *f, const struct stat *st,
			 bool regular)
{
	if (S_ISBLK(st->st_mode) && !regular) {
		f->is_block_device = true;
		if (ioctl(f->fd, BLKGETSIZE64, &f->size) < 0) {
			pr_err("cannot get the size of '%s': %s", f->path,
			       strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!S_ISREG(st->st_mode)) {
		pr_err("disk '%s' is %s", f->path, regular ?
		       "not a regular file" : "neither a file nor a block device");
		return -1;
	}
	f->size = st->st_size;
	return 0;
}

/* What O_DIRECT needs: the logical block size, at least 512 bytes. */
static unsigned int file_direct_alignment(struct disk_file *f)
{
	int lbs = 0;

	if (f->is_block_device && !ioctl(f->fd, BLKSSZGET, &lbs) &&
	    lbs >= 512)
		return lbs;
	return 512;	/* the logical block size nearly every disk has */
}

static int file_flags(bool readonly, bool direct)
{
	return (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
	       (direct ? O_DIRECT : 0);
}

int disk_file_open(struct disk_file *f, const char *path, unsigned int how)
{
	bool regular = how & DISK_FILE_REGULAR;
	int flags = file_flags(how & DISK_FILE_READONLY, how & DISK_FILE_DIRECT);
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->readonly = how & DISK_FILE_READONLY;
	f->direct = how & DISK_FILE_DIRECT;
	f->fd = open(path, flags | (regular ? O_NONBLOCK | O_NOFOLLOW : 0));
	if (f->fd < 0) {
		pr_err("cannot open disk '%s': %s", path, strerror(errno));
		return -1;
	}
	/* a regular file is what it was opened to be: blocking I/O again */
	if (fstat(f->fd, &st) < 0 || file_get_size(f, &st, regular) ||
	    (regular && fcntl(f->fd, F_SETFL, flags & ~O_CLOEXEC)) ||
	    file_lock(f)) {
		disk_file_close(f);
		return -1;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	if (f->direct)
		f->align = file_direct_alignment(f);
	f->nowait_read = f->nowait_write = !f->direct;
	return 0;
}

int disk_file_reopen(const struct disk_file *f)
{
	int flags = file_flags(f->readonly, f->direct);
	char self[32];
	struct stat st;
	int fd;

	/* through our own fd, so that no rename or symlink can come between */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", f->fd);
	fd = open(self, flags);
	if (fd < 0)
		fd = open(f->path, flags);	/* no /proc: checked below */
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_dev != f->dev || st.st_ino != f->ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

void disk_file_close(struct disk_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

ssize_t disk_file_read_head(struct disk_file *f, struct disk_file_head *h)
{
	ssize_t n;

	do {
		n = pread(f->fd, h->b, sizeof(h->b), 0);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int disk_iov_advance(struct iovec **iov, int *iovcnt, size_t done)
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

static int file_io(struct disk_file *f, const struct iovec *iov_in,
		   int iovcnt, uint64_t offset, bool write)
{
	struct iovec iov_buf[IOV_MAX], *iov = iov_buf;

	if (iovcnt > IOV_MAX)
		return -EINVAL;
	memcpy(iov_buf, iov_in, iovcnt * sizeof(*iov));
	while (iovcnt) {
		ssize_t n = write ? pwritev(f->fd, iov, iovcnt, offset)
				  : preadv(f->fd, iov, iovcnt, offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* the image shrank under us */
		offset += n;
		disk_iov_advance(&iov, &iovcnt, n);
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
static int file_io_bounce(struct disk_file *f, const struct iovec *iov,
			  int iovcnt, uint64_t offset, bool write)
{
	size_t len = 0, done = 0;
	struct iovec one;
	void *bounce;
	int i, ret;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (offset % f->align || len % f->align)
		return -EINVAL;	/* not whole blocks: nothing to bounce to */
	if (posix_memalign(&bounce, f->align, len ? len : f->align))
		return -ENOMEM;
	for (i = 0; write && i < iovcnt; done += iov[i].iov_len, i++)
		memcpy((uint8_t *)bounce + done, iov[i].iov_base, iov[i].iov_len);
	one = (struct iovec) { .iov_base = bounce, .iov_len = len };
	ret = file_io(f, &one, 1, offset, write);
	for (i = 0, done = 0; !ret && !write && i < iovcnt;
	     done += iov[i].iov_len, i++)
		memcpy(iov[i].iov_base, (uint8_t *)bounce + done, iov[i].iov_len);
	free(bounce);
	return ret;
}

bool disk_file_iov_ok(const struct disk_file *f, const struct iovec *iov,
		      int iovcnt, uint64_t offset)
{
	return !f->direct || iov_aligned(iov, iovcnt, offset, f->align);
}

int disk_file_rw(struct disk_file *f, const struct iovec *iov, int iovcnt,
		 uint64_t offset, bool write)
{
	if (!disk_file_iov_ok(f, iov, iovcnt, offset))
		return file_io_bounce(f, iov, iovcnt, offset, write);
	return file_io(f, iov, iovcnt, offset, write);
}

/* One RWF_NOWAIT call: 0 when whole, -EAGAIN when short or it would wait. */
static int file_rw_nowait(struct disk_file *f, const struct iovec *iov,
			  int iovcnt, uint64_t offset, bool write)
{
	size_t len = 0;
	ssize_t n;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	do {
		n = write ? pwritev2(f->fd, iov, iovcnt, offset, RWF_NOWAIT)
			  : preadv2(f->fd, iov, iovcnt, offset, RWF_NOWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* short: part of it is not cached; a redo costs less than a split */
	return (size_t)n == len ? 0 : -EAGAIN;
}

int disk_file_rw_try(struct disk_file *f, const struct iovec *iov,
		     int iovcnt, uint64_t offset, bool write)
{
	bool *nowait = write ? &f->nowait_write : &f->nowait_read;
	int ret;

	if (f->direct)
		return -EAGAIN;
	if (__atomic_load_n(nowait, __ATOMIC_RELAXED)) {
		ret = file_rw_nowait(f, iov, iovcnt, offset, write);
		if (ret != -EOPNOTSUPP)
			return ret;
		__atomic_store_n(nowait, false, __ATOMIC_RELAXED);
	}
	return disk_file_rw(f, iov, iovcnt, offset, write);
}

int disk_file_flush(struct disk_file *f)
{
	return fdatasync(f->fd) ? -errno : 0;
}

int disk_file_discard(struct disk_file *f, uint64_t offset, uint64_t len)
{
	if (f->is_block_device) {
		uint64_t range[2] = { offset, len };

		return ioctl(f->fd, BLKDISCARD, range) ? -errno : 0;
	}
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      offset, len))
		return -errno;
	return 0;
}

/* The last resort for file systems without ZERO_RANGE (tmpfs, memfd). */
static int file_write_zero_bytes(struct disk_file *f, uint64_t offset,
				 uint64_t len)
{
	static const uint8_t zeroes[64 * 1024];

	while (len) {
		size_t chunk = len < sizeof(zeroes) ? len : sizeof(zeroes);
		ssize_t n = pwrite(f->fd, zeroes, chunk, offset);

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
 * plain writes of zeroes.
 */
int disk_file_write_zeroes(struct disk_file *f, uint64_t offset,
			   uint64_t len, bool may_unmap)
{
	if (f->is_block_device) {
		uint64_t range[2] = { offset, len };

		return ioctl(f->fd, BLKZEROOUT, range) ? -errno : 0;
	}
	if (may_unmap && !fallocate(f->fd, FALLOC_FL_PUNCH_HOLE |
				    FALLOC_FL_KEEP_SIZE, offset, len))
		return 0;
	if (!fallocate(f->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		       offset, len))
		return 0;
	if (errno != EOPNOTSUPP && errno != EINVAL)
		return -errno;
	return file_write_zero_bytes(f, offset, len);
}
