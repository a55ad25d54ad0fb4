// SPDX-License-Identifier: GPL-2.0
/*
 * rng.elf: lkvm's virtio-rng (--rng) driven from inside the guest, on the
 * transport= the command line names (default modern virtio-pci). Buffers
 * come back filled with bytes that look random and differ from one
 * request to the next; a chain of several buffers is filled across them;
 * a huge buffer gets at most 64 KiB (the device may fill less than it is
 * offered) and nothing past what the used length says is touched; a
 * chain with nothing writable comes back empty.
 */
#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define CAP		(64 * 1024)	/* virtio/rng.c's RNG_MAX_PER_CHAIN */
#define BIG		(128 * 1024)
#define TIMEOUT_US	2000000

static struct vio_dev dev;
static struct vio_queue vq;

static bool find_rng(void)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);

	if (t != VIO_MMIO)
		return vio_pci_find(&dev, t == VIO_PCI_LEGACY);
	return vio_find(&dev, 1) == 1;
}

/* One chain of n buffers; the used length, or -1 when none came. */
static long request(const struct vio_buf *bufs, unsigned int n)
{
	uint32_t id, len;

	if (!kit_check(vio_add(&vq, bufs, n, false) >= 0, "ring full"))
		return -1;
	vio_kick(&vq);
	if (!kit_check(vio_wait_used(&vq, TIMEOUT_US, true, &id, &len) ==
		       VIO_WAIT_USED, "no used buffer"))
		return -1;
	return len;
}

/* Distinct byte values in buf: random bytes have nearly all 256. */
static unsigned int distinct(const uint8_t *buf, size_t len)
{
	bool seen[256] = { false };
	unsigned int n = 0;

	for (size_t i = 0; i < len; i++)
		if (!seen[buf[i]]) {
			seen[buf[i]] = true;
			n++;
		}
	return n;
}

static void check_fills(void)
{
	uint8_t *a = kit_zalloc(4096), *b = kit_zalloc(4096);
	struct vio_buf one = { (uintptr_t)a, 4096, true };
	struct vio_buf three[3] = {
		{ (uintptr_t)b, 100, true }, { (uintptr_t)b + 1000, 100, true },
		{ (uintptr_t)b + 2000, 100, true },
	};

	kit_check(request(&one, 1) == 4096, "4 KiB not filled whole");
	kit_check(distinct(a, 4096) >= 250, "4 KiB of %u byte values",
		  distinct(a, 4096));
	memset(b, 0, 4096);
	kit_check(request(three, 3) == 300, "three buffers: not 300 bytes");
	kit_check(distinct(b, 100) > 50 && distinct(b + 1000, 100) > 50 &&
		  distinct(b + 2000, 100) > 50, "a buffer of three left empty");
	kit_check(memcmp(a, b, 100), "two requests gave the same bytes");
	kit_check(!b[100] && !b[999] && !b[1100], "bytes between buffers");
	kit_free(a);
	kit_free(b);
}

static void check_limits(void)
{
	uint8_t *big = kit_malloc(BIG), *ro = kit_zalloc(64);
	struct vio_buf huge = { (uintptr_t)big, BIG, true };
	struct vio_buf readable = { (uintptr_t)ro, 64, false };
	long len;

	memset(big, 0xa5, BIG);
	len = request(&huge, 1);
	kit_check(len > 0 && len <= CAP, "128 KiB buffer: used length %ld",
		  len);
	for (long i = len > 0 ? len : 0; i < BIG; i++)
		if (!kit_check(big[i] == 0xa5, "byte %ld past the used length",
			       i))
			break;
	kit_check(request(&readable, 1) == 0, "a readable buffer was used");
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "the device broke");
	kit_free(big);
	kit_free(ro);
}

KIT_TEST(rng)
{
	if (!kit_check(find_rng() && dev.device_id == VIRTIO_ID_RNG,
		       "no virtio-rng device") ||
	    !kit_check(!vio_negotiate(&dev, 0), "feature negotiation") ||
	    !kit_check(!vio_queue_setup(&vq, &dev, 0, 16), "queue setup"))
		kit_finish();
	vio_driver_ok(&dev);
	check_fills();
	check_limits();
	kit_printf("rng: requests done\n");
	kit_finish();
}
