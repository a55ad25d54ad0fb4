/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blkhdr.elf: the guest half of the format-probing escape test
 * (tests/kit/test_blk_format_probe.py). A hostile guest with a writable
 * raw disk writes a qcow2 header into its sector 0 naming a host file as
 * the backing file: an lkvm that probes the image again at its next open
 * would serve that file as the guest's disk.
 *
 *   backing=PATH   with write=1: write the header naming PATH, then a
 *                  plain sector (the device must still work), and say
 *                  "blkhdr: header write status S" (0 OK, 1 IOERR)
 *   (always)       read the first 8 sectors and say
 *                  "blkhdr: head FNV1A64 HEX16" (the hash of those 4 KiB
 *                  and their first 16 bytes), for the host to compare
 *                  with what the image and the host file hold
 */
#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define HEAD		4096
#define CLUSTER_BITS	16
#define L1_OFFSET	(1ULL << CLUSTER_BITS)
#define REFTABLE_OFFSET	(2ULL << CLUSTER_BITS)
#define NAME_OFFSET	112		/* past the header and an end marker */

static struct vio_dev dev;
static struct vio_queue vq;

static void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (24 - 8 * i);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

/*
 * A version 3 header as QEMU's docs/interop/qcow2.txt lays it out, valid
 * enough for an open: 64 KiB clusters, all of them unallocated (its L1
 * and refcount tables are the disk's zeroes), so every read goes to the
 * backing file.
 */
static void make_header(uint8_t *s, const char *backing, uint64_t size)
{
	size_t len = strlen(backing);

	memset(s, 0, VIO_BLK_SECTOR);
	put_be32(s + 0, 0x514649fb);		/* "QFI\xfb" */
	put_be32(s + 4, 3);			/* version */
	put_be64(s + 8, NAME_OFFSET);		/* backing_file_offset */
	put_be32(s + 16, len);			/* backing_file_size */
	put_be32(s + 20, CLUSTER_BITS);
	put_be64(s + 24, size);
	put_be32(s + 36, 1);			/* l1_size */
	put_be64(s + 40, L1_OFFSET);
	put_be64(s + 48, REFTABLE_OFFSET);
	put_be32(s + 56, 1);			/* refcount_table_clusters */
	put_be32(s + 96, 4);			/* refcount_order */
	put_be32(s + 100, 104);			/* header_length */
	memcpy(s + NAME_OFFSET, backing, len);
}

static bool setup(void)
{
	return kit_check(vio_find(&dev, 1) == 1 &&
			 dev.device_id == VIRTIO_ID_BLOCK, "no virtio-blk disk") &&
	       kit_check(!vio_negotiate(&dev, 0), "features") &&
	       kit_check(!vio_queue_setup(&vq, &dev, 0, 32), "queue setup") &&
	       (vio_driver_ok(&dev), true);
}

static void write_header(uint8_t *buf, uint64_t capacity)
{
	char backing[VIO_BLK_SECTOR - NAME_OFFSET];
	int st;

	if (!kit_check(kit_cmdline_get("backing", backing, sizeof(backing)),
		       "no backing= to name"))
		return;
	make_header(buf, backing, capacity * VIO_BLK_SECTOR);
	st = vio_blk_rw(&vq, true, 0, buf, VIO_BLK_SECTOR, false);
	kit_printf("blkhdr: header write status %d\n", st);
	/* refused or not, the device goes on */
	memset(buf, 0x77, VIO_BLK_SECTOR);
	kit_check(vio_blk_rw(&vq, true, 64, buf, VIO_BLK_SECTOR, false) ==
		  VIRTIO_BLK_S_OK, "a plain write after the header's");
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "NEEDS_RESET after a refused write");
}

static void say_head(uint8_t *buf)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	if (!kit_check(vio_blk_rw(&vq, false, 0, buf, HEAD, false) ==
		       VIRTIO_BLK_S_OK, "read of the first sectors"))
		return;
	for (int i = 0; i < HEAD; i++)
		h = (h ^ buf[i]) * 0x100000001b3ULL;
	kit_printf("blkhdr: head %016lx ", h);
	for (int i = 0; i < 16; i++)
		kit_printf("%02x", buf[i]);
	kit_printf("\n");
}

KIT_TEST(blkhdr)
{
	uint8_t *buf = kit_malloc(2 * HEAD);

	if (!kit_check(buf, "out of heap") || !setup())
		kit_finish();
	buf = (uint8_t *)(((uintptr_t)buf + HEAD - 1) & ~(uintptr_t)(HEAD - 1));
	if (kit_cmdline_u64("write", 0))
		write_header(buf, vio_config_read64(&dev, 0));
	say_head(buf);
	kit_finish();
}
