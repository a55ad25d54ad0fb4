// SPDX-License-Identifier: GPL-2.0
/*
 * balloon.elf: a balloon driver for lkvm's virtio-balloon (--balloon), on
 * the transport= the command line names. It fills a pool of pool_mib MiB
 * (default 8) at 16 MiB, says "balloon: ready", then follows the target
 * that `lkvm balloon` sets: pages it gives up (from the pool's start) are
 * left alone while given, and must read back as zeroes when it takes them
 * back, since lkvm dropped them; then they are written again. Once it has held pages and the target is back at 0, it
 * ends. Frame numbers outside RAM (4 of them, once) must leave the device
 * working. Waits at most 60 s for each change.
 */
#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define VIRTIO_ID_BALLOON	5
#define CFG_NUM_PAGES		0
#define CFG_ACTUAL		4
#define PAGE			4096ul
#define POOL_BASE		(16ul << 20)
#define PFNS_PER_CHAIN		256
#define WAIT_US			60000000ull

static struct vio_dev dev;
static struct vio_queue inflateq, deflateq;
static uint32_t pfns[PFNS_PER_CHAIN];

static bool find_balloon(void)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);

	if (t != VIO_MMIO)
		return vio_pci_find(&dev, t == VIO_PCI_LEGACY);
	return vio_find(&dev, 1) == 1;
}

static uint8_t *pool_page(uint32_t i)
{
	return (uint8_t *)(POOL_BASE + i * PAGE);
}

static void fill_page(uint32_t i)
{
	memset(pool_page(i), 0xa0 + i % 16, PAGE);
}

static bool page_is_zero(uint32_t i)
{
	const uint64_t *p = (const uint64_t *)pool_page(i);

	for (unsigned int k = 0; k < PAGE / 8; k++)
		if (p[k])
			return false;
	return true;
}

/* One chain of n frame numbers on q; true once used. */
static bool send_pfns(struct vio_queue *q, unsigned int n)
{
	struct vio_buf b = { (uintptr_t)pfns, n * 4, false };
	uint32_t id, len;

	if (!kit_check(vio_add(q, &b, 1, false) >= 0, "ring full"))
		return false;
	vio_kick(q);
	return kit_check(vio_wait_used(q, 5000000, true, &id, &len) ==
			 VIO_WAIT_USED, "frame numbers not taken");
}

/* Pages [from, to) of the pool, in chains, to inflateq or deflateq. */
static void give(struct vio_queue *q, uint32_t from, uint32_t to)
{
	while (from < to) {
		unsigned int n = 0;

		while (n < PFNS_PER_CHAIN && from < to)
			pfns[n++] = (POOL_BASE >> 12) + from++;
		if (!send_pfns(q, n))
			return;
	}
}

/* Frame numbers that are not RAM: lkvm must skip them and go on. */
static void give_bad_pfns(void)
{
	pfns[0] = 0xffffffff;
	pfns[1] = 0xfee00;		/* the LAPIC */
	pfns[2] = 0xe0000;		/* virtio-mmio slots */
	pfns[3] = kit_ram_end() >> 12;	/* just past RAM */
	send_pfns(&inflateq, 4);
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "bad frame numbers broke the device");
}

static uint32_t wait_target(uint32_t held)
{
	uint64_t end = kit_now_us() + WAIT_US;
	uint32_t t;

	do {
		t = vio_config_read32(&dev, CFG_NUM_PAGES);
		if (t != held)
			return t;
		kit_udelay(2000);
	} while (kit_now_us() < end);
	kit_fail("the target stayed at %u pages for 60 s", held);
	kit_finish();
}

KIT_TEST(balloon)
{
	uint32_t pool = kit_cmdline_u64("pool_mib", 8) * 256, held = 0;
	bool held_some = false, bad_sent = false;

	if (!kit_check(find_balloon() && dev.device_id == VIRTIO_ID_BALLOON,
		       "no virtio-balloon device") ||
	    !kit_check(!vio_negotiate(&dev, 0), "feature negotiation") ||
	    !kit_check(!vio_queue_setup(&inflateq, &dev, 0, 16), "inflateq") ||
	    !kit_check(!vio_queue_setup(&deflateq, &dev, 1, 16), "deflateq"))
		kit_finish();
	vio_driver_ok(&dev);
	for (uint32_t i = 0; i < pool; i++)
		fill_page(i);
	kit_printf("balloon: ready, pool %u pages\n", pool);
	for (unsigned int round = 0; round < 16; round++) {
		uint32_t target = wait_target(held);

		if (!kit_check(target <= pool, "target %u pages, pool %u",
			       target, pool))
			break;
		if (target > held) {
			/* not touched while given: a read would fault them in */
			give(&inflateq, held, target);
			held_some = true;
		} else {
			uint32_t zero = 0;

			give(&deflateq, target, held);
			for (uint32_t i = target; i < held; i++) {
				zero += page_is_zero(i);
				fill_page(i);
			}
			kit_check(zero == held - target,
				  "%u of %u pages taken back kept their data: lkvm never dropped them",
				  held - target - zero, held - target);
		}
		held = target;
		vio_config_write32(&dev, CFG_ACTUAL, held);
		kit_printf("balloon: holding %u pages\n", held);
		if (!bad_sent) {
			give_bad_pfns();
			bad_sent = true;
		}
		if (held_some && !held)
			break;
	}
	kit_check(held_some && !held, "never inflated and deflated again");
	for (uint32_t i = 0; i < pool; i++)
		if (!kit_check(pool_page(i)[100] == 0xa0 + i % 16,
			       "page %u lost its data", i))
			break;
	kit_finish();
}
