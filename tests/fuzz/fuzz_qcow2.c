// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for qcow2 images (make fuzz-qcow2): a user's image
 * may be anything. The input is a 16-bit length, that many bytes of image
 * file (header, L1, refcount table and blocks, L2 tables, data), then
 * requests: read, write, discard, write-zeroes, each 8 bytes (kind,
 * sector, sectors). The image goes through a file into disk_open(), as
 * `lkvm run -d` does.
 *
 * Either it is refused, or every request fails or succeeds: never a
 * crash, never a read or write outside our buffers (ASan), nothing that
 * runs away, and nothing written but the image's own file (the only one
 * lkvm opens writable). A corrupt image may well read back what it was
 * not given (its tables can point into each other, as QEMU's overlap
 * checks exist to catch); on images qemu-img made, tests/unit/test_qcow2
 * checks every byte.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/disk.h"
#include "lkvm/util.h"
#include "fuzz_common.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

#define MAX_REQS	32
#define MAX_BYTES	(64 * 1024)

static char dir[64], img[96];
static uint8_t wbuf[MAX_BYTES], rbuf[MAX_BYTES];

static void setup_once(void)
{
	if (dir[0])
		return;
	log_threshold = LOG_SILENT;
	/* a folder of its own: backing file names resolve in here only */
	snprintf(dir, sizeof(dir), "/tmp/lkvm-fuzz-qcow2-%d", getpid());
	CHECK(!mkdir(dir, 0700));
	snprintf(img, sizeof(img), "%s/image", dir);
}

static void request(struct disk *d, struct input *in)
{
	uint8_t kind = take8(in) % 4;
	uint64_t sector = take32(in) % (d->size / 512 ? d->size / 512 : 1);
	size_t len = (size_t)(take16(in) % (MAX_BYTES / 512) + 1) * 512;
	struct iovec iov = { kind ? wbuf : rbuf, len };
	int ret;

	if (sector * 512 + len > d->size)
		return;
	memset(wbuf, (int)(sector ^ len) | 1, len);
	switch (kind) {
	case 0:
		ret = disk_readv(d, &iov, 1, sector * 512);
		break;
	case 1:
		ret = disk_writev(d, &iov, 1, sector * 512);
		break;
	case 2:
		ret = disk_discard(d, sector * 512, len);
		break;
	default:
		ret = disk_write_zeroes(d, sector * 512, len, true);
		break;
	}
	CHECK(ret <= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct disk_params cfg = { 0 };
	size_t img_len = take16(&in);
	struct disk d;
	unsigned int i;
	int fd;

	setup_once();
	img_len = MIN(img_len, in.n);
	fd = open(img, O_CREAT | O_TRUNC | O_RDWR, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, in.p, img_len) == (ssize_t)img_len);
	close(fd);
	in.p += img_len;
	in.n -= img_len;
	cfg.path = img;
	cfg.format = DISK_FORMAT_QCOW2;
	if (disk_open(&d, &cfg))
		return 0;
	for (i = 0; i < MAX_REQS && in.n && d.size >= 512; i++)
		request(&d, &in);
	disk_close(&d);
	return 0;
}
