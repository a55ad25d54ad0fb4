/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kick.elf: what a queue notify costs. Sets up queue 0 of the first
 * virtio device (virtio-mmio slot 0, or the legacy virtio-pci I/O BAR with
 * transport=legacy) with an empty ring, then writes its notify register
 * kicks=N times (default 100000), unrolled so the loop costs little, and
 * once more times an empty loop of the same shape. The host side reads
 * lkvm's --stats to see where the kicks went (ioeventfd or vCPU exits).
 *
 * Prints: "kick: N kicks, T us, X.XX us/kick, loop Y.YY us/iteration".
 */
#include "kit.h"

#define MMIO_BASE		0xe0000000UL
#define MMIO_MAGIC		0x000
#define MMIO_DRIVER_FEATURES	0x020
#define MMIO_DRIVER_FEAT_SEL	0x024
#define MMIO_QUEUE_SEL		0x030
#define MMIO_QUEUE_NUM		0x038
#define MMIO_QUEUE_READY	0x044
#define MMIO_QUEUE_NOTIFY	0x050
#define MMIO_STATUS		0x070
#define MMIO_DESC_LO		0x080
#define MMIO_AVAIL_LO		0x090
#define MMIO_USED_LO		0x0a0

#define LEGACY_PFN		8
#define LEGACY_QUEUE_SEL	14
#define LEGACY_NOTIFY		16
#define LEGACY_STATUS		18

#define S_ACK			1
#define S_DRIVER		2
#define S_DRIVER_OK		4
#define S_FEATURES_OK		8
#define QUEUE_SIZE		16
#define UNROLL			16

/* One legacy-layout ring: page aligned, used on the next page. */
static uint8_t ring[2 * 4096] __attribute__((aligned(4096)));

static void mmio_setup(void)
{
	uintptr_t b = MMIO_BASE;

	mmio_write32(b + MMIO_STATUS, 0);
	mmio_write32(b + MMIO_STATUS, S_ACK | S_DRIVER);
	mmio_write32(b + MMIO_DRIVER_FEAT_SEL, 1);
	mmio_write32(b + MMIO_DRIVER_FEATURES, 1);	/* VERSION_1 */
	mmio_write32(b + MMIO_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK);
	mmio_write32(b + MMIO_QUEUE_SEL, 0);
	mmio_write32(b + MMIO_QUEUE_NUM, QUEUE_SIZE);
	mmio_write32(b + MMIO_DESC_LO, (uintptr_t)ring);
	mmio_write32(b + MMIO_AVAIL_LO, (uintptr_t)ring + 16 * QUEUE_SIZE);
	mmio_write32(b + MMIO_USED_LO, (uintptr_t)ring + 4096);
	mmio_write32(b + MMIO_QUEUE_READY, 1);
	mmio_write32(b + MMIO_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK |
		     S_DRIVER_OK);
}

/* The legacy I/O BAR of the first virtio function on bus 0. */
static uint16_t legacy_setup(void)
{
	unsigned int slot;
	uint16_t io = 0;

	for (slot = 1; slot < 32 && !io; slot++)
		if ((kit_pci_read32(0, slot, 0, 0) & 0xffff) == 0x1af4)
			io = kit_pci_read32(0, slot, 0, 0x10) & 0xfffc;
	if (!io)
		return 0;
	outb(io + LEGACY_STATUS, 0);
	outb(io + LEGACY_STATUS, S_ACK | S_DRIVER);
	outw(io + LEGACY_QUEUE_SEL, 0);
	outl(io + LEGACY_PFN, (uintptr_t)ring >> 12);
	outb(io + LEGACY_STATUS, S_ACK | S_DRIVER | S_DRIVER_OK);
	return io;
}

KIT_TEST(kick)
{
	uint64_t kicks = kit_cmdline_u64("kicks", 100000), i;
	bool legacy = kit_cmdline_has("legacy");
	uint64_t t0, t_kick, t_loop;
	volatile uint32_t sink = 0;
	uint16_t io = 0;

	if (legacy) {
		io = legacy_setup();
		kit_check(io, "no legacy virtio-pci device");
	} else {
		kit_check(mmio_read32(MMIO_BASE + MMIO_MAGIC) == 0x74726976,
			  "no virtio-mmio device in slot 0");
		mmio_setup();
	}
	if (kit_failures)
		kit_finish();
	kicks = (kicks + UNROLL - 1) / UNROLL * UNROLL;
	t0 = kit_now_us();
	for (i = 0; i < kicks; i += UNROLL) {
		for (unsigned int u = 0; u < UNROLL; u++) {
			if (legacy)
				outw(io + LEGACY_NOTIFY, 0);
			else
				mmio_write32(MMIO_BASE + MMIO_QUEUE_NOTIFY, 0);
		}
	}
	t_kick = kit_now_us() - t0;
	t0 = kit_now_us();
	for (i = 0; i < kicks; i += UNROLL)
		for (unsigned int u = 0; u < UNROLL; u++)
			sink = u;
	t_loop = kit_now_us() - t0;
	(void)sink;
	kit_printf("kick: %lu kicks, %lu us, %lu.%02lu us/kick, loop %lu.%02lu us/iteration\n",
		   kicks, t_kick, t_kick / kicks, (t_kick * 100 / kicks) % 100,
		   t_loop / kicks, (t_loop * 100 / kicks) % 100);
	kit_finish();
}
