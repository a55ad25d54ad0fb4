/* SPDX-License-Identifier: GPL-2.0 */
/*
 * crashdisk.elf: the guest half of the crash-safety test
 * (tests/kit/test_crash_safety.py), which SIGKILLs lkvm at random moments.
 * It writes blocks first..first+count-1 of the disk in order, batch=N at a
 * time, each followed by a FLUSH, and after every completed FLUSH prints
 * "crashdisk: flushed B" (B blocks written and flushed so far). Every
 * 64-bit word of every block says what it is: trial (gen=), block, sector
 * and word, so the host can tell a block that is intact from a stale,
 * torn or misplaced one by comparing it with what it must hold. Exits 0
 * when the range is done, 1 on any device error.
 */
#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define BLOCK		4096
#define WORDS		(VIO_BLK_SECTOR / 8)
#define MAGIC		0x484b5341524b4c4cULL	/* "LLKRASKH" */

static struct vio_dev dev;
static struct vio_queue vq;

/* The host's tests/kit/test_crash_safety.py computes the same words. */
static void fill_block(uint64_t *w, uint64_t gen, uint64_t block)
{
	for (unsigned int s = 0; s < BLOCK / VIO_BLK_SECTOR; s++)
		for (unsigned int i = 0; i < WORDS; i++)
			w[s * WORDS + i] = i ? gen << 48 ^ block << 16 ^
					       s << 8 ^ i : MAGIC;
}

static bool find_disk(void)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);

	if (t != VIO_MMIO)
		return vio_pci_find(&dev, t == VIO_PCI_LEGACY);
	return vio_find(&dev, 1) == 1;
}

static bool setup(void)
{
	uint64_t want = 1ULL << VIRTIO_BLK_F_FLUSH;

	return kit_check(find_disk() && dev.device_id == VIRTIO_ID_BLOCK,
			 "no virtio-blk disk") &&
	       kit_check(!vio_negotiate(&dev, want) &&
			 (dev.features & want), "FLUSH not negotiated") &&
	       kit_check(!vio_queue_setup(&vq, &dev, 0, 128), "queue setup") &&
	       (vio_driver_ok(&dev), true);
}

static bool write_block(uint64_t *buf, uint64_t gen, uint64_t block)
{
	fill_block(buf, gen, block);
	return kit_check(vio_blk_rw(&vq, true, block * (BLOCK / VIO_BLK_SECTOR),
				    buf, BLOCK, false) == VIRTIO_BLK_S_OK,
			 "write of block %lu", block);
}

static bool flush(void)
{
	uint32_t len;
	enum vio_wait wait;

	return kit_check(vio_blk_request(&vq, VIRTIO_BLK_T_FLUSH, 0, NULL, 0,
					 false, &len, &wait) ==
			 VIRTIO_BLK_S_OK, "FLUSH");
}

KIT_TEST(crashdisk)
{
	uint64_t gen = kit_cmdline_u64("gen", 1) & 0xffff;
	uint64_t first = kit_cmdline_u64("first", 0);
	uint64_t count = kit_cmdline_u64("count", 1024);
	uint64_t batch = kit_cmdline_u64("batch", 8);
	uint64_t *buf = kit_malloc(2 * BLOCK), done = 0;

	if (!kit_check(buf && batch, "heap or batch=0") || !setup())
		kit_finish();
	/* Sector-aligned data, as O_DIRECT disks need. */
	buf = (uint64_t *)(((uintptr_t)buf + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1));
	kit_printf("crashdisk: gen %lu blocks %lu..%lu\n", gen, first,
		   first + count - 1);
	while (done < count) {
		uint64_t n = count - done < batch ? count - done : batch;

		for (uint64_t i = 0; i < n; i++)
			if (!write_block(buf, gen, first + done + i))
				kit_finish();
		if (!flush())
			kit_finish();
		done += n;
		kit_printf("crashdisk: flushed %lu\n", done);
	}
	kit_finish();
}
