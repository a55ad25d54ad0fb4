/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pci.elf: PCI bus 0 as a driver sees it. The host bridge answers
 * configuration mechanism #1; with `-d IMG` (modern virtio-pci, the
 * default) a virtio-blk function appears with its capability list, a
 * 64-bit BAR inside the host bridge window, an MSI-X capability, and a
 * common configuration that reads back what the driver writes.
 * Expectations come from the command line: blk=1 when a disk is attached,
 * queues=N its queue count (one per vCPU), scans=N repeats the bus scan N
 * times (the test counts exits with them).
 */
#include "kit.h"

#define PCI_VENDOR		0x00
#define PCI_CLASS_REV		0x08
#define PCI_HEADER		0x0c
#define PCI_BAR4		0x20
#define PCI_BAR5		0x24
#define PCI_CAP_PTR		0x34
#define PCI_INT_LINE		0x3c
#define CAP_ID_MSIX		0x11
#define CAP_ID_VNDR		0x09
#define VIRTIO_CAP_COMMON	1
#define COMMON_NUMQ		0x12
#define COMMON_Q_SELECT		0x16
#define COMMON_Q_SIZE		0x18



static unsigned int scan_bus0(int *blk_slot)
{
	unsigned int slot, found = 0;

	*blk_slot = -1;
	for (slot = 0; slot < 32; slot++) {
		uint32_t id = kit_pci_read32(0, slot, 0, PCI_VENDOR);

		if (id == 0xffffffff)
			continue;
		found++;
		if (id == 0x10421af4)	/* modern virtio-blk */
			*blk_slot = slot;
	}
	return found;
}

/* Returns the config offset of the first capability with this id. */
static unsigned int find_cap(unsigned int slot, uint8_t id, uint8_t vtype)
{
	unsigned int at = kit_pci_read8(0, slot, 0, PCI_CAP_PTR), guard = 0;

	while (at && guard++ < 48) {
		if (kit_pci_read8(0, slot, 0, at) == id &&
		    (id != CAP_ID_VNDR || kit_pci_read8(0, slot, 0, at + 3) == vtype))
			return at;
		at = kit_pci_read8(0, slot, 0, at + 1);
	}
	return 0;
}

static void check_blk(unsigned int slot)
{
	uint64_t bar = (kit_pci_read32(0, slot, 0, PCI_BAR4) & ~0xfULL) |
		       ((uint64_t)kit_pci_read32(0, slot, 0, PCI_BAR5) << 32);
	unsigned int common = find_cap(slot, CAP_ID_VNDR, VIRTIO_CAP_COMMON);
	uintptr_t cfg;

	kit_check(find_cap(slot, CAP_ID_MSIX, 0), "no MSI-X capability");
	kit_check(common, "no virtio common-config capability");
	kit_check(bar >= 0xc0000000 && bar < 0xe0000000,
		  "BAR4 %#lx outside the host bridge window", (unsigned long)bar);
	kit_check(kit_pci_read8(0, slot, 0, PCI_INT_LINE) >= 16,
		  "INTx line %u is not a PCI GSI",
		  kit_pci_read8(0, slot, 0, PCI_INT_LINE));
	if (!common || !bar)
		return;
	cfg = bar + kit_pci_read32(0, slot, 0, common + 8);
	kit_check(mmio_read16(cfg + COMMON_NUMQ) == kit_cmdline_u64("queues", 1),
		  "num_queues %u", mmio_read16(cfg + COMMON_NUMQ));
	mmio_write16(cfg + COMMON_Q_SELECT, 0);
	kit_check(mmio_read16(cfg + COMMON_Q_SIZE) == 256, "queue size %u",
		  mmio_read16(cfg + COMMON_Q_SIZE));
	mmio_write16(cfg + COMMON_Q_SIZE, 64);
	kit_check(mmio_read16(cfg + COMMON_Q_SIZE) == 64,
		  "queue size did not take 64");
	mmio_write16(cfg + COMMON_Q_SIZE, 100);	/* not a power of two */
	kit_check(mmio_read16(cfg + COMMON_Q_SIZE) == 64,
		  "queue size took 100");
	kit_printf("virtio-blk at slot %u, BAR4 %#lx\n", slot,
		   (unsigned long)bar);
}

KIT_TEST(pci)
{
	uint64_t scans = kit_cmdline_u64("scans", 1), i;
	bool want_blk = kit_cmdline_u64("blk", 0);
	unsigned int found = 0;
	int blk_slot = -1;

	kit_check(kit_pci_read32(0, 0, 0, PCI_VENDOR) != 0xffffffff,
		  "no host bridge at 00:00.0");
	kit_check(kit_pci_read32(0, 0, 0, PCI_CLASS_REV) >> 8 == 0x060000,
		  "00:00.0 is not a host bridge");
	for (i = 0; i < scans; i++)
		found = scan_bus0(&blk_slot);
	kit_printf("%u functions on bus 0\n", found);
	kit_check(found == (want_blk ? 2u : 1u), "found %u functions", found);
	kit_check((blk_slot >= 0) == want_blk, "virtio-blk %s",
		  want_blk ? "missing" : "unexpected");
	if (blk_slot >= 0)
		check_blk(blk_slot);
	kit_finish();
}
