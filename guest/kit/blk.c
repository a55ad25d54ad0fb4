// SPDX-License-Identifier: GPL-2.0
/*
 * blk.elf: lkvm's virtio-blk over virtio-mmio (or virtio-pci, modern or
 * legacy, with transport=), driven from inside the guest. The host test (tests/kit/test_virtio_blk.py) chooses what to do
 * on the command line and then checks the image file itself, so data
 * written here must land exactly where the guest asked:
 *
 *   seed=N            pattern seed (pattern_word() below; the test has a copy)
 *   sectors=a,b,last  sectors to write one pattern sector each (or, with
 *                     ro=1, to find the pattern the host put there)
 *   multi=S           16 sectors at S, written from 3 buffers, read into 2
 *   discard=S,N       DISCARD N sectors at S, then read back zeroes
 *   wzeroes=S,N       WRITE_ZEROES N sectors at S, then read back zeroes
 *   ro=1              the disk is -d IMG,ro: F_RO offered, writes fail
 *   cap=N             expected capacity in sectors
 *   indirect=1        negotiate INDIRECT_DESC; every other request uses it
 *   event_idx=1       negotiate EVENT_IDX
 *   qsize=N           queue size to ask for (default 32)
 *   unaligned=1       scatter-gather buffers at 16 mod 512 (virtio allows
 *                     any alignment); otherwise sector-aligned, like Linux
 *   dev=N ndev=M      use the Nth of M virtio-mmio devices (default 0 of 1)
 *   stream=N          N reads kept 8 deep in flight, kicks suppressed as
 *                     the device asks: a lost kick or interrupt stalls it
 *   transport=pci     the modern virtio-pci function on bus 0, MSI-X
 *   transport=legacy  the legacy (0.9.5) virtio-pci function, INTx
 *   msix=0            (pci) leave MSI-X off: the modern function uses INTx
 *   move_bar=1        (pci, legacy) move the BAR before using the device
 *   intx_disable=1    (legacy) also the PCI Interrupt Disable bit and
 *                     Interrupt Status (PCI 3.0, 6.2.2-6.2.3)
 *
 * Interrupts are checked without an IDT: with IF=0 a delivered vector
 * waits in the LAPIC's IRR, so after a completion the vector programmed on
 * the device's IOAPIC pin (or its MSI-X table entry) must be pending
 * there. Level-triggered INTx is EOIed through vio_irq_accept().
 */
#include <linux/virtio_pci.h>

#include "virtio_pci.h"

#define SECTOR			VIO_BLK_SECTOR
#define MULTI_SECTORS		16
#define CHUNK_SECTORS		64	/* read-back buffer for ranges */

static struct vio_dev dev;
static enum vio_transport transport;
static bool use_msix = true;		/* modern virtio-pci: else INTx */
static bool unaligned;
static struct vio_queue vq;
static uint64_t seed, capacity;
static bool ro, use_indirect;
static unsigned int nr_requests;	/* completed: lkvm counts them too */
static unsigned int toggle;

/* The test computes the same words (tests/kit/test_virtio_blk.py). */
static uint64_t pattern_word(uint64_t sector, unsigned int w)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL +
		     sector * 0xbf58476d1ce4e5b9ULL + w;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return x;
}

static void pattern_fill(uint64_t *buf, uint64_t sector, unsigned int nr)
{
	unsigned int s, w;

	for (s = 0; s < nr; s++)
		for (w = 0; w < SECTOR / 8; w++)
			*buf++ = pattern_word(sector + s, w);
}

/* Index of the first wrong sector, or -1. */
static int pattern_check(const uint64_t *buf, uint64_t sector, unsigned int nr)
{
	unsigned int s, w;

	for (s = 0; s < nr; s++)
		for (w = 0; w < SECTOR / 8; w++)
			if (*buf++ != pattern_word(sector + s, w))
				return s;
	return -1;
}

static bool all_zero(const uint64_t *buf, size_t bytes)
{
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		if (buf[i])
			return false;
	return true;
}

static void fill_words(uint64_t *buf, size_t bytes, uint64_t v)
{
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		buf[i] = v;
}

/*
 * Data buffers start on a sector boundary, as a Linux guest's do, unless
 * unaligned=1 asks for the odd placement virtio also allows. Never freed.
 */
static void *alloc_buf(size_t size)
{
	uintptr_t p = (uintptr_t)kit_malloc(size + 2 * SECTOR);

	if (!p)
		return NULL;
	p = (p + SECTOR - 1) & ~(uintptr_t)(SECTOR - 1);
	return (void *)(p + (unaligned ? 16 : 0));
}

/* Alternate direct and indirect chains when indirect=1. */
static bool next_indirect(void)
{
	return use_indirect && (toggle++ & 1);
}

static int request(uint32_t type, uint64_t sector, const struct vio_buf *data,
		   unsigned int n, uint32_t *used_len)
{
	enum vio_wait w;
	int st = vio_blk_request(&vq, type, sector, data, n, next_indirect(),
				 used_len, &w);

	if (w == VIO_WAIT_USED)
		nr_requests++;
	else
		kit_fail("request type %u sector %llu: %s", type,
			 (unsigned long long)sector,
			 w == VIO_WAIT_NEEDS_RESET ? "device set NEEDS_RESET"
						   : "no completion in 2 s");
	return st;
}

static int rw(bool write, uint64_t sector, void *buf, uint32_t len)
{
	struct vio_buf b = { (uintptr_t)buf, len, !write };

	return request(write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN, sector, &b,
		       1, NULL);
}

/*
 * A completion interrupts (ISR bit 0, the vector pending) when the driver
 * wants it, and stays silent when the driver suppressed it: through
 * VRING_AVAIL_F_NO_INTERRUPT, or used_event with EVENT_IDX. Each step uses
 * a fresh vector because an IRR bit cannot be cleared with IF=0.
 */
static void check_interrupts(void *buf)
{
	const char *how = vq.event_idx ? "used_event" : "NO_INTERRUPT";
	uint32_t isr;

	vio_isr_ack(&dev, vio_isr(&dev));

	vio_irq_route(&dev, 0x40);
	vio_want_interrupt(&vq, true);
	kit_check(rw(false, 0, buf, SECTOR) == VIRTIO_BLK_S_OK, "read sector 0");
	kit_check(vio_irq_wait(0x40, 200000),
		  "no vector on IOAPIC pin %u after a completion", dev.gsi);
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING,
		  "InterruptStatus %#x after a completion: bit 0 clear", isr);
	vio_isr_ack(&dev, isr);
	isr = vio_isr(&dev);
	kit_check(!isr, "InterruptStatus %#x after InterruptACK", isr);

	vio_irq_route(&dev, 0x41);
	vio_want_interrupt(&vq, false);
	kit_check(rw(false, 0, buf, SECTOR) == VIRTIO_BLK_S_OK, "read sector 0");
	/* the device may raise it just after publishing: give it time */
	kit_check(!vio_irq_wait(0x41, 20000),
		  "interrupt despite %s", how);
	isr = vio_isr(&dev);
	kit_check(!(isr & VIO_INT_VRING),
		  "InterruptStatus %#x despite %s", isr, how);
	vio_isr_ack(&dev, isr);

	vio_irq_route(&dev, 0x42);
	vio_want_interrupt(&vq, true);
	/* 2.7.10: with EVENT_IDX the device ignores the avail flags */
	if (vq.event_idx)
		*(volatile uint16_t *)&vq.avail->flags =
			VRING_AVAIL_F_NO_INTERRUPT;
	kit_check(rw(false, 0, buf, SECTOR) == VIRTIO_BLK_S_OK, "read sector 0");
	kit_check(vio_irq_wait(0x42, 200000),
		  "no interrupt after %s was lifted%s", how, vq.event_idx ?
		  " (NO_INTERRUPT set, which EVENT_IDX overrides)" : "");
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING, "InterruptStatus %#x: bit 0 clear", isr);
	vio_isr_ack(&dev, isr);
	*(volatile uint16_t *)&vq.avail->flags = 0;

	vio_irq_mask(&dev);
	kit_printf("interrupts: GSI %u, suppression by %s ok\n", dev.gsi, how);
}

static bool read0(void *buf)
{
	return kit_check(rw(false, 0, buf, SECTOR) == VIRTIO_BLK_S_OK,
			 "read sector 0");
}

/*
 * MSI-X: the queue's table entry (1) delivers its data as the vector;
 * masked, the completion only sets its PBA bit, and unmasking sends it
 * with whatever the entry holds by then; the function mask does the same
 * for all entries. The config entry (0) stays silent throughout.
 */
static void check_msix(void *buf)
{
	unsigned int e = 1 + vq.index;
	uint16_t v = vio_msix_queue_vector(&dev, vq.index);

	kit_check(v == e, "queue_msix_vector %#x, not %u", v, e);
	vio_msix_set(&dev, 0, 0x5f, false);

	vio_msix_set(&dev, e, 0x50, false);
	vio_want_interrupt(&vq, true);
	read0(buf);
	kit_check(vio_irq_wait(0x50, 200000),
		  "MSI-X: no vector 0x50 after a completion");
	kit_check(!vio_msix_pending(&dev, e), "MSI-X: PBA bit set, entry unmasked");

	vio_msix_set(&dev, e, 0x51, true);
	read0(buf);
	kit_check(!vio_irq_wait(0x51, 20000),
		  "MSI-X: vector 0x51 delivered while its entry was masked");
	kit_check(vio_msix_pending(&dev, e),
		  "MSI-X: PBA bit %u clear after a completion with the entry masked",
		  e);
	/* the pending message goes out with the entry's data at unmask time */
	vio_msix_set(&dev, e, 0x54, true);
	vio_msix_mask(&dev, e, false);
	kit_check(vio_irq_wait(0x54, 200000),
		  "MSI-X: unmasking did not deliver the pending message");
	kit_check(!vio_irq_pending(0x51),
		  "MSI-X: the pending message used the data from before unmask");
	kit_check(!vio_msix_pending(&dev, e),
		  "MSI-X: PBA bit still set after the message went out");

	vio_msix_set(&dev, e, 0x52, false);
	vio_msix_function_mask(&dev, true);
	read0(buf);
	kit_check(!vio_irq_wait(0x52, 20000),
		  "MSI-X: vector 0x52 delivered under the function mask");
	kit_check(vio_msix_pending(&dev, e),
		  "MSI-X: PBA bit clear after a completion under the function mask");
	vio_msix_function_mask(&dev, false);
	kit_check(vio_irq_wait(0x52, 200000),
		  "MSI-X: clearing the function mask did not deliver");
	kit_check(!vio_msix_pending(&dev, e),
		  "MSI-X: PBA bit still set after the function mask cleared");

	vio_msix_set(&dev, e, 0x53, false);
	vio_want_interrupt(&vq, false);
	read0(buf);
	kit_check(!vio_irq_wait(0x53, 20000), "MSI-X: interrupt despite %s",
		  vq.event_idx ? "used_event" : "NO_INTERRUPT");
	kit_check(!vio_msix_pending(&dev, e),
		  "MSI-X: PBA bit set for a suppressed interrupt");
	vio_want_interrupt(&vq, true);

	kit_check(!vio_irq_pending(0x5f), "MSI-X: config vector without a change");
	/* leave the queue's entry masked: later completions only set the PBA */
	vio_msix_mask(&dev, e, true);
	kit_printf("interrupts: MSI-X entry %u of %u, mask, PBA, function mask ok\n",
		   e, dev.nr_vectors);
}

#define PCI_COMMAND_INTX_DISABLE	(1u << 10)
#define PCI_STATUS_INTERRUPT		(1u << (16 + 3))	/* in dword 0x04 */

/*
 * PCI 3.0, 6.2.2-6.2.3: Interrupt Disable keeps INTx# deasserted while
 * set; the Status register's Interrupt Status bit shows the function's
 * interrupt regardless, and clearing Interrupt Disable with it set
 * asserts INTx#.
 */
static void check_intx_disable(void *buf)
{
	uint32_t cmd = kit_pci_read32(0, dev.slot, 0, 4) & 0xffff;
	uint32_t isr;

	vio_isr(&dev);
	vio_irq_accept();
	kit_pci_write32(0, dev.slot, 0, 4, cmd | PCI_COMMAND_INTX_DISABLE);
	vio_intx_route(&dev, 0x68);
	read0(buf);
	kit_check(!vio_irq_wait(0x68, 20000),
		  "INTx: asserted with Interrupt Disable set");
	kit_check(kit_pci_read32(0, dev.slot, 0, 4) & PCI_STATUS_INTERRUPT,
		  "PCI Status: Interrupt Status clear with an interrupt pending");
	kit_pci_write32(0, dev.slot, 0, 4, cmd);
	kit_check(vio_irq_wait(0x68, 200000),
		  "INTx: clearing Interrupt Disable with an interrupt pending did not assert INTx");
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING, "ISR %#x after a completion", isr);
	vio_irq_accept();
}

/*
 * INTx as the DSDT's _PRT routes it: a level-triggered, active-low pin.
 * The line stays up until the driver reads ISR (which acknowledges) and
 * EOIs; an EOI without the read must bring the interrupt back.
 */
static void check_intx(void *buf)
{
	uint8_t pin = kit_pci_read8(0, dev.slot, 0, 0x3d);
	uint32_t isr;

	kit_check(pin == 1, "Interrupt Pin %u, not INTA", pin);
	kit_check(dev.gsi == 16 + (dev.slot + pin - 1) % 4,
		  "Interrupt Line %u, the _PRT swizzle gives %u", dev.gsi,
		  16 + (dev.slot + pin - 1) % 4);
	vio_isr(&dev);
	vio_intx_route(&dev, 0x60);
	vio_irq_accept();		/* anything already waiting */
	vio_want_interrupt(&vq, true);

	read0(buf);
	kit_check(vio_irq_wait(0x60, 200000),
		  "INTx: no vector on IOAPIC pin %u after a completion", dev.gsi);
	kit_check(vio_intx_remote_irr(&dev),
		  "INTx: Remote IRR clear: not delivered level-triggered");
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING, "ISR %#x after a completion", isr);
	isr = vio_isr(&dev);
	kit_check(!isr, "ISR %#x after the read that acknowledged it", isr);
	kit_check(vio_irq_accept() >= 1, "INTx: the pending vector was not taken");
	kit_check(!vio_intx_remote_irr(&dev), "INTx: Remote IRR set after EOI");
	kit_check(!vio_irq_wait(0x60, 20000),
		  "INTx: delivered again after the ISR read and EOI");

	read0(buf);
	kit_check(vio_irq_wait(0x60, 200000),
		  "INTx: no interrupt for the second completion");
	/* One EOI with the ISR still set: the line is up, it fires again. */
	kit_check(vio_irq_accept_one(), "INTx: the pending vector was not taken");
	kit_check(vio_irq_wait(0x60, 200000),
		  "INTx: EOI without reading ISR did not bring the interrupt back");
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING, "ISR %#x for a pending interrupt", isr);
	vio_irq_accept();
	kit_check(!vio_irq_wait(0x60, 20000), "INTx: still raised after ISR read");

	vio_want_interrupt(&vq, false);
	read0(buf);
	kit_check(!vio_irq_wait(0x60, 20000), "INTx: interrupt despite %s",
		  vq.event_idx ? "used_event" : "NO_INTERRUPT");
	isr = vio_isr(&dev);
	kit_check(!(isr & VIO_INT_VRING), "ISR %#x for a suppressed interrupt",
		  isr);
	vio_want_interrupt(&vq, true);

	/*
	 * 4.1.4.5: reading ISR "causes the device to de-assert the
	 * interrupt". Re-arming the pin without an EOI (an edge write drops
	 * Remote IRR) fires again while the line is up, and stays quiet
	 * once the ISR read lowered it.
	 */
	read0(buf);
	kit_check(vio_irq_wait(0x60, 200000), "INTx: no interrupt");
	vio_intx_route(&dev, 0x61);
	kit_check(vio_irq_wait(0x61, 200000),
		  "INTx: a re-armed pin did not fire with the line up");
	isr = vio_isr(&dev);
	kit_check(isr & VIO_INT_VRING, "ISR %#x after a completion", isr);
	vio_intx_route(&dev, 0x62);
	kit_check(!vio_irq_wait(0x62, 20000),
		  "INTx: line still asserted after the ISR read (a re-armed pin fired)");
	if (kit_cmdline_u64("intx_disable", 0) && transport == VIO_PCI_LEGACY)
		check_intx_disable(buf);
	vio_intx_mask(&dev);
	vio_irq_accept();
	kit_printf("interrupts: INTx GSI %u level, ISR acknowledge, EOI re-fire ok\n",
		   dev.gsi);
}

/* ---- the steps ---- */

/*
 * Moves the function's BAR as an OS may (decoding off, new address, on)
 * and checks that the old place no longer answers: the registers, and
 * lkvm's ioeventfds, must follow.
 */
static bool move_bar(bool legacy)
{
	unsigned int bar = legacy ? 0x10 : 0x20;
	uint32_t cmd = kit_pci_read32(0, dev.slot, 0, 4) & 0xffff;
	uint32_t lo = kit_pci_read32(0, dev.slot, 0, bar);
	uintptr_t old = dev.common ? dev.common : dev.base;
	/* past lkvm's own assignments, still inside the window */
	uint32_t to = legacy ? (lo & ~3u) + 0x800 : (lo & ~0xfu) + 0x100000;
	uint32_t v;

	kit_pci_write32(0, dev.slot, 0, 4, cmd & ~3u);
	kit_pci_write32(0, dev.slot, 0, bar, to | (lo & (legacy ? 3 : 0xf)));
	kit_pci_write32(0, dev.slot, 0, 4, cmd);
	if (!kit_check(vio_pci_find(&dev, legacy), "function lost after the BAR move"))
		return false;
	kit_check((legacy ? dev.base : dev.common) == to,
		  "BAR reads back %#lx, moved to %#x",
		  legacy ? dev.base : dev.common, to);
	/* nothing decodes there now: all ones, as a master abort gives */
	v = legacy ? inl(old + VIRTIO_PCI_HOST_FEATURES) :
		     mmio_read32(old + VIRTIO_PCI_COMMON_DF);
	kit_check(v == 0xffffffff, "old BAR place %#lx still reads %#x", old, v);
	kit_printf("BAR moved from %#lx to %#x\n", old, to);
	return true;
}

static bool find_pci_device(void)
{
	bool legacy = transport == VIO_PCI_LEGACY;

	if (!kit_check(vio_pci_find(&dev, legacy), "no %s virtio-pci function",
		       legacy ? "legacy" : "modern"))
		return false;
	if (kit_cmdline_u64("move_bar", 0) && !move_bar(legacy))
		return false;
	kit_printf("virtio-pci%s 00:%02x.0 at %#lx: device %u, INTx GSI %u\n",
		   legacy ? " legacy" : "", dev.slot, dev.base, dev.device_id,
		   dev.gsi);
	kit_check(dev.device_id == VIRTIO_ID_BLOCK, "device type %u, not 2",
		  dev.device_id);
	if (!legacy) {
		kit_check(dev.devcfg, "no device-config capability");
		kit_check(dev.msix_cap && dev.nr_vectors >= 2,
			  "MSI-X: capability %#x with %u vectors", dev.msix_cap,
			  dev.nr_vectors);
		/* lkvm's layout (virtio/pci.c); a driver would not care */
		kit_check(dev.isr - dev.common == 0x1000 &&
			  dev.devcfg - dev.common == 0x2000 &&
			  dev.notify - dev.common == 0x3000 &&
			  dev.notify_mult == 4 &&
			  dev.msix_table - dev.common == 0x4000 &&
			  dev.msix_pba - dev.common == 0x6000,
			  "BAR layout: isr +%#lx cfg +%#lx notify +%#lx x%u msix +%#lx pba +%#lx",
			  dev.isr - dev.common, dev.devcfg - dev.common,
			  dev.notify - dev.common, dev.notify_mult,
			  dev.msix_table - dev.common, dev.msix_pba - dev.common);
	}
	return dev.device_id == VIRTIO_ID_BLOCK;
}

static bool find_device(void)
{
	unsigned int want = kit_cmdline_u64("dev", 0), n, i;
	unsigned int ndev = kit_cmdline_u64("ndev", 1);
	struct vio_dev devs[VIO_MMIO_SLOTS];
	uint32_t size = 0, gsi = 0;
	bool edge_high = false;

	if (transport != VIO_MMIO)
		return find_pci_device();
	n = vio_find(devs, ARRAY_SIZE(devs));
	kit_check(n == ndev, "%u virtio-mmio devices, expected %u", n, ndev);
	/* lkvm fills the slots in order, from 0 */
	for (i = 0; i < n; i++)
		kit_check(devs[i].slot == i, "device %u is in slot %u", i,
			  devs[i].slot);
	if (!kit_check(want < n, "no virtio-mmio device %u", want))
		return false;
	dev = devs[want];
	kit_printf("virtio-mmio slot %u at %#lx: device %u, GSI %u\n",
		   dev.slot, dev.base, dev.device_id, dev.gsi);
	kit_check(dev.device_id == VIRTIO_ID_BLOCK, "device ID %u, not 2",
		  dev.device_id);
	kit_check(vio_read(&dev, VIRTIO_MMIO_VENDOR_ID) != 0, "vendor ID 0");
	if (kit_check(vio_dsdt_lookup(dev.base, &size, &gsi, &edge_high),
		      "DSDT: no LNRO0005 with Memory32Fixed at %#lx", dev.base)) {
		kit_check(size == VIO_MMIO_SLOT_SIZE, "DSDT: size %#x", size);
		kit_check(gsi == dev.gsi, "DSDT: GSI %u, slot %u has %u", gsi,
			  dev.slot, dev.gsi);
		kit_check(edge_high, "DSDT: interrupt not edge, active-high");
		kit_printf("DSDT: LNRO0005 at %#lx size %#x GSI %u\n", dev.base,
			   size, gsi);
	}
	return dev.device_id == VIRTIO_ID_BLOCK;
}

static bool setup(bool event_idx, unsigned int qsize)
{
	uint64_t want = (1ULL << VIRTIO_BLK_F_RO) |
			(1ULL << VIRTIO_BLK_F_FLUSH) |
			(1ULL << VIRTIO_BLK_F_BLK_SIZE) |
			(1ULL << VIRTIO_BLK_F_SEG_MAX) |
			(1ULL << VIRTIO_BLK_F_SIZE_MAX) |
			(1ULL << VIRTIO_BLK_F_DISCARD) |
			(1ULL << VIRTIO_BLK_F_WRITE_ZEROES);
	uint8_t status;

	if (use_indirect)
		want |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	if (event_idx)
		want |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (!kit_check(!vio_negotiate(&dev, want), "feature negotiation"))
		return false;
	kit_printf("features offered %#llx accepted %#llx\n",
		   (unsigned long long)dev.offered,
		   (unsigned long long)dev.features);
	if (transport == VIO_PCI_LEGACY)
		kit_check(!(dev.offered >> 32), "legacy features above bit 31");
	else
		kit_check(dev.offered & (1ULL << VIRTIO_F_VERSION_1),
			  "no VERSION_1");
	kit_check(dev.offered & (1ULL << VIRTIO_BLK_F_FLUSH), "no FLUSH");
	kit_check(!!(dev.offered & (1ULL << VIRTIO_BLK_F_RO)) == ro,
		  "VIRTIO_BLK_F_RO %s offered", ro ? "not" : "");
	kit_check(!(dev.offered & (1ULL << VIRTIO_BLK_F_DISCARD)) == ro,
		  "DISCARD %s offered", ro ? "" : "not");
	kit_check(!(dev.offered & (1ULL << VIRTIO_BLK_F_WRITE_ZEROES)) == ro,
		  "WRITE_ZEROES %s offered", ro ? "" : "not");
	kit_check(!use_indirect ||
		  (dev.features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC)),
		  "INDIRECT_DESC not offered");
	kit_check(!event_idx ||
		  (dev.features & (1ULL << VIRTIO_RING_F_EVENT_IDX)),
		  "EVENT_IDX not offered");

	capacity = vio_config_read64(&dev, 0);
	if (dev.offered & (1ULL << VIRTIO_BLK_F_BLK_SIZE))
		kit_check(vio_config_read32(&dev, 20) == SECTOR,
			  "blk_size %u", vio_config_read32(&dev, 20));
	kit_printf("capacity %llu sectors\n", (unsigned long long)capacity);
	if (kit_cmdline_has("cap"))
		kit_check(capacity == kit_cmdline_u64("cap", 0),
			  "capacity %llu, the image has %llu sectors",
			  (unsigned long long)capacity,
			  (unsigned long long)kit_cmdline_u64("cap", 0));

	/* 4.1.5.1.2: vectors are chosen before the queues are enabled */
	if (transport == VIO_PCI && use_msix)
		kit_check(vio_msix_enable(&dev), "MSI-X enable");
	if (!kit_check(!vio_queue_setup(&vq, &dev, 0, qsize), "queue 0 setup"))
		return false;
	kit_check(vio_queue_enabled(&vq), "queue 0 does not read back enabled");
	if (transport == VIO_PCI_LEGACY)
		kit_check(vq.size == 256, "legacy queue size %u", vq.size);
	vio_driver_ok(&dev);
	status = vio_status(&dev);
	kit_check(status == (VIRTIO_CONFIG_S_ACKNOWLEDGE |
			     VIRTIO_CONFIG_S_DRIVER |
			     (transport == VIO_PCI_LEGACY ? 0 :
			      VIRTIO_CONFIG_S_FEATURES_OK) |
			     VIRTIO_CONFIG_S_DRIVER_OK),
		  "Status %#x after DRIVER_OK", status);
	return capacity > 0;
}

/* Parses "a,b,last" into sectors; returns how many. */
static unsigned int parse_sectors(uint64_t *out, unsigned int max)
{
	char buf[256];
	const char *p = buf, *end;
	unsigned int n = 0;

	if (!kit_cmdline_get("sectors", buf, sizeof(buf)))
		return 0;
	while (*p && n < max) {
		if (!strncmp(p, "last", 4)) {
			out[n++] = capacity - 1;
			end = p + 4;
		} else {
			out[n++] = kit_strtou64(p, &end);
			if (end == p)
				break;
		}
		p = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return n;
}

static void check_sectors(uint64_t *buf, uint64_t *rbuf)
{
	uint64_t sectors[16];
	unsigned int i, n = parse_sectors(sectors, ARRAY_SIZE(sectors));

	for (i = 0; i < n; i++) {
		uint64_t s = sectors[i];
		int bad;

		if (!kit_check(s < capacity, "sector %llu is past the end",
			       (unsigned long long)s))
			continue;
		if (!ro) {
			pattern_fill(buf, s, 1);
			kit_check(rw(true, s, buf, SECTOR) == VIRTIO_BLK_S_OK,
				  "write sector %llu", (unsigned long long)s);
		}
		fill_words(rbuf, SECTOR, 0x5a5a5a5a5a5a5a5aULL);
		kit_check(rw(false, s, rbuf, SECTOR) == VIRTIO_BLK_S_OK,
			  "read sector %llu", (unsigned long long)s);
		bad = pattern_check(rbuf, s, 1);
		kit_check(bad < 0, "sector %llu does not hold the pattern",
			  (unsigned long long)s);
		if (ro) {
			/* a refused write must leave the data alone */
			pattern_fill(buf, s + 1, 1);
			kit_check(rw(true, s, buf, SECTOR) == VIRTIO_BLK_S_IOERR,
				  "write to a read-only disk did not fail with IOERR");
			rw(false, s, rbuf, SECTOR);
			kit_check(pattern_check(rbuf, s, 1) < 0,
				  "sector %llu changed on a read-only disk",
				  (unsigned long long)s);
		}
		kit_printf("sector %llu %s\n", (unsigned long long)s,
			   bad < 0 ? "ok" : "BAD");
	}
}

/* Scatter-gather: 3 uneven readable buffers out, 2 writable ones back. */
static void check_multi(void)
{
	uint64_t s = kit_cmdline_u64("multi", 0);
	uint32_t total = MULTI_SECTORS * SECTOR, used_len = 0;
	uint8_t *buf = alloc_buf(total), *rbuf = alloc_buf(total);
	struct vio_buf out[3] = {
		{ (uintptr_t)buf, 512, false },
		{ (uintptr_t)buf + 512, 2560, false },
		{ (uintptr_t)buf + 3072, total - 3072, false },
	};
	struct vio_buf in[2] = {
		{ (uintptr_t)rbuf, 1536, true },
		{ (uintptr_t)rbuf + 1536, total - 1536, true },
	};
	int bad;

	if (!kit_check(buf && rbuf, "out of heap"))
		return;
	if (!ro) {
		pattern_fill((uint64_t *)buf, s, MULTI_SECTORS);
		kit_check(request(VIRTIO_BLK_T_OUT, s, out, 3, NULL) ==
			  VIRTIO_BLK_S_OK, "3-buffer write at %llu",
			  (unsigned long long)s);
	}
	fill_words((uint64_t *)rbuf, total, 0);
	kit_check(request(VIRTIO_BLK_T_IN, s, in, 2, &used_len) ==
		  VIRTIO_BLK_S_OK, "2-buffer read at %llu",
		  (unsigned long long)s);
	/* 2.7.8: len is what the device wrote, status byte included */
	kit_check(used_len == total + 1, "used len %u for a %u-byte read",
		  used_len, total);
	bad = pattern_check((const uint64_t *)rbuf, s, MULTI_SECTORS);
	kit_check(bad < 0, "multi: sector %llu does not hold the pattern",
		  (unsigned long long)s + bad);
	kit_printf("multi %llu+%u %s\n", (unsigned long long)s, MULTI_SECTORS,
		   bad < 0 ? "ok" : "BAD");
}

static bool kicks_wanted(void)
{
	if (vq.event_idx)
		return *(volatile uint16_t *)vq.avail_event == vq.avail_idx;
	return !(*(volatile uint16_t *)&vq.used->flags & VRING_USED_F_NO_NOTIFY);
}

static bool wait_kicks_wanted(void)
{
	uint64_t start = kit_now_us();

	while (!kicks_wanted()) {
		if (kit_now_us() - start > 200000)
			return false;
		kit_udelay(100);
	}
	return true;
}

/* Several chains for one kick, and the device's side of suppression. */
static void check_batch(uint8_t *buf)
{
	struct virtio_blk_outhdr *hdr = kit_malloc(4 * sizeof(*hdr));
	uint8_t *status = kit_malloc(4);
	unsigned int i, done = 0;
	uint32_t id, len;

	if (!kit_check(hdr && status, "out of heap"))
		return;
	for (i = 0; i < 4; i++) {
		struct vio_buf b[3] = {
			{ (uintptr_t)&hdr[i], sizeof(*hdr), false },
			{ (uintptr_t)buf + i * SECTOR, SECTOR, true },
			{ (uintptr_t)&status[i], 1, true },
		};

		hdr[i] = (struct virtio_blk_outhdr){ VIRTIO_BLK_T_IN, 0, i };
		status[i] = 0xff;
		kit_check(vio_add(&vq, b, 3, next_indirect()) >= 0, "vio_add");
	}
	vio_kick(&vq);
	while (done < 4 &&
	       vio_wait_used(&vq, VIO_BLK_TIMEOUT_US, true, &id, &len) ==
	       VIO_WAIT_USED) {
		kit_check(len == SECTOR + 1, "batch: used len %u", len);
		done++;
	}
	nr_requests += done;
	kit_check(done == 4, "batch: %u of 4 completed", done);
	for (i = 0; i < 4; i++)
		kit_check(status[i] == VIRTIO_BLK_S_OK, "batch: status %u",
			  status[i]);
	/*
	 * Idle again, the device must ask for the next kick. It publishes
	 * used->idx before it re-enables kicks, so give it a moment.
	 */
	kit_check(wait_kicks_wanted(), vq.event_idx ?
		  "EVENT_IDX: avail_event %u stays behind avail idx %u" :
		  "idle device keeps VRING_USED_F_NO_NOTIFY set (%u, %u)",
		  *(volatile uint16_t *)vq.avail_event, vq.avail_idx);
	kit_free(hdr);
	kit_free(status);
}

/*
 * Requests go in while the device is still serving earlier ones, so
 * every suppression decision (ours and the device's) races the I/O
 * thread. A kick lost in that race leaves requests that never complete.
 */
static void check_stream(unsigned int total, uint8_t *buf)
{
	enum { DEPTH = 8 };
	struct virtio_blk_outhdr *hdr = kit_malloc(DEPTH * sizeof(*hdr));
	uint8_t *status = kit_malloc(DEPTH);
	int8_t *slot_of = kit_malloc(vq.size);
	unsigned int submitted = 0, done = 0, inflight = 0, i, kicks = 0;
	uint32_t busy = 0, id, len;

	if (!kit_check(hdr && status && slot_of, "out of heap"))
		return;
	while (done < total) {
		/* a direct chain takes 3 descriptors of a maybe small ring */
		while (inflight < DEPTH && submitted < total &&
		       vq.nr_free >= 3) {
			unsigned int k = __builtin_ctz(~busy);
			struct vio_buf b[3] = {
				{ (uintptr_t)&hdr[k], sizeof(*hdr), false },
				{ (uintptr_t)buf + k * SECTOR, SECTOR, true },
				{ (uintptr_t)&status[k], 1, true },
			};
			int head;

			hdr[k] = (struct virtio_blk_outhdr){
				VIRTIO_BLK_T_IN, 0, submitted % capacity };
			status[k] = 0xff;
			head = vio_add(&vq, b, 3, next_indirect());
			if (!kit_check(head >= 0, "stream: ring full"))
				goto out;
			slot_of[head] = k;
			busy |= 1u << k;
			inflight++;
			submitted++;
		}
		kicks += vio_kick(&vq);
		if (vio_wait_used(&vq, VIO_BLK_TIMEOUT_US, true, &id, &len) !=
		    VIO_WAIT_USED) {
			kit_fail("stream: stalled with %u in flight after %u of %u",
				 inflight, done, total);
			goto out;
		}
		i = slot_of[id];
		kit_check(status[i] == VIRTIO_BLK_S_OK && len == SECTOR + 1,
			  "stream: status %u len %u", status[i], len);
		busy &= ~(1u << i);
		inflight--;
		done++;
	}
out:
	nr_requests += done;
	kit_printf("stream: %u reads, %u kicks\n", done, kicks);
	kit_free(hdr);
	kit_free(status);
	kit_free(slot_of);
}

static void check_flush_and_id(void)
{
	char id1[VIRTIO_BLK_ID_BYTES + 1] = "", id2[VIRTIO_BLK_ID_BYTES + 1] = "";
	struct vio_buf b = { (uintptr_t)id1, VIRTIO_BLK_ID_BYTES, true };
	uint32_t len = 0;

	kit_check(request(VIRTIO_BLK_T_FLUSH, 0, NULL, 0, &len) ==
		  VIRTIO_BLK_S_OK, "FLUSH");
	kit_check(request(VIRTIO_BLK_T_GET_ID, 0, &b, 1, &len) ==
		  VIRTIO_BLK_S_OK, "GET_ID");
	kit_check(len >= 2 && len <= VIRTIO_BLK_ID_BYTES + 1,
		  "GET_ID: used len %u", len);
	b.addr = (uintptr_t)id2;
	kit_check(request(VIRTIO_BLK_T_GET_ID, 0, &b, 1, &len) ==
		  VIRTIO_BLK_S_OK, "GET_ID again");
	kit_check(id1[0], "GET_ID: empty serial");
	kit_check(!memcmp(id1, id2, sizeof(id1)), "GET_ID: not stable");
	kit_printf("blk id: %s\n", id1);
}

static bool parse_range(const char *key, uint64_t *start, uint64_t *nr)
{
	char buf[64];
	const char *end;

	if (!kit_cmdline_get(key, buf, sizeof(buf)))
		return false;
	*start = kit_strtou64(buf, &end);
	*nr = *end == ',' ? kit_strtou64(end + 1, &end) : 1;
	return true;
}

static void check_zero_range(const char *what, uint64_t s, uint64_t nr,
			     uint64_t *rbuf)
{
	uint64_t done;

	for (done = 0; done < nr; done += CHUNK_SECTORS) {
		uint64_t n = nr - done < CHUNK_SECTORS ? nr - done : CHUNK_SECTORS;

		fill_words(rbuf, n * SECTOR, ~0ULL);
		if (!kit_check(rw(false, s + done, rbuf, n * SECTOR) ==
			       VIRTIO_BLK_S_OK, "%s: read back", what) ||
		    !kit_check(all_zero(rbuf, n * SECTOR),
			       "%s: sectors %llu+%llu are not zero", what,
			       (unsigned long long)(s + done),
			       (unsigned long long)n))
			return;
	}
}

/*
 * lkvm punches a hole for DISCARD, so zeroes come back; the spec would
 * allow anything there, which is why the host test checks st_blocks.
 */
static void check_discard(uint32_t type, const char *key, uint64_t *rbuf)
{
	const char *what = type == VIRTIO_BLK_T_DISCARD ? "DISCARD"
							: "WRITE_ZEROES";
	struct virtio_blk_discard_write_zeroes *seg = kit_malloc(sizeof(*seg));
	struct vio_buf b = { (uintptr_t)seg, sizeof(*seg), false };
	uint64_t s, nr;
	int st;

	if (!parse_range(key, &s, &nr) || !kit_check(seg, "out of heap"))
		return;
	seg->sector = s;
	seg->num_sectors = nr;
	seg->flags = 0;
	st = request(type, 0, &b, 1, NULL);
	if (ro) {
		kit_check(st == VIRTIO_BLK_S_IOERR || st == VIRTIO_BLK_S_UNSUPP,
			  "%s on a read-only disk: status %d", what, st);
	} else {
		kit_check(st == VIRTIO_BLK_S_OK, "%s %llu+%llu: status %d",
			  what, (unsigned long long)s, (unsigned long long)nr,
			  st);
		check_zero_range(what, s, nr, rbuf);
	}
	kit_printf("%s %llu+%llu status %d\n", what, (unsigned long long)s,
		   (unsigned long long)nr, st);
	kit_free(seg);
}

/* One DISCARD or WRITE_ZEROES segment; returns the status. */
static int discard_seg(uint32_t type, uint64_t sector, uint32_t nr,
		       uint32_t flags)
{
	struct virtio_blk_discard_write_zeroes *seg = kit_malloc(sizeof(*seg));
	struct vio_buf b = { (uintptr_t)seg, sizeof(*seg), false };
	int st;

	seg->sector = sector;
	seg->num_sectors = nr;
	seg->flags = flags;
	st = request(type, 0, &b, 1, NULL);
	kit_free(seg);
	return st;
}

/*
 * 5.2.6.2: UNSUPP for DISCARD with the unmap flag and for any unknown
 * flag; a range past the end cannot succeed.
 */
static void check_discard_errors(void)
{
	int st;

	st = discard_seg(VIRTIO_BLK_T_DISCARD, 0, 8,
			 VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
	kit_check(st == VIRTIO_BLK_S_UNSUPP, "DISCARD with unmap: status %d",
		  st);
	st = discard_seg(VIRTIO_BLK_T_WRITE_ZEROES, 0, 8, 2);
	kit_check(st == VIRTIO_BLK_S_UNSUPP,
		  "WRITE_ZEROES with unknown flag 2: status %d", st);
	st = discard_seg(VIRTIO_BLK_T_DISCARD, capacity - 4, 8, 0);
	kit_check(st == VIRTIO_BLK_S_IOERR || st == VIRTIO_BLK_S_UNSUPP,
		  "DISCARD across the end: status %d", st);
	st = discard_seg(VIRTIO_BLK_T_WRITE_ZEROES, ~0ULL - 3, 8, 0);
	kit_check(st == VIRTIO_BLK_S_IOERR || st == VIRTIO_BLK_S_UNSUPP,
		  "WRITE_ZEROES wrapping past sector 2^64: status %d", st);
}

/*
 * 2.6.4: the device must not assume any framing. A read with the header
 * split 4 + 12 and the status byte sharing a buffer with the data.
 */
static void check_framing(uint8_t *buf)
{
	uint64_t s = kit_cmdline_u64("multi", 0) + 1;
	struct virtio_blk_outhdr *hdr = kit_malloc(sizeof(*hdr));
	volatile uint8_t *st = buf + 2 * SECTOR;
	enum vio_wait w;
	uint32_t id, len = 0;
	struct vio_buf b[3] = {
		{ (uintptr_t)hdr, 4, false },
		{ (uintptr_t)hdr + 4, sizeof(*hdr) - 4, false },
		{ (uintptr_t)buf, 2 * SECTOR + 1, true },
	};
	int head;

	hdr->type = VIRTIO_BLK_T_IN;
	hdr->ioprio = 0;
	hdr->sector = s;
	fill_words((uint64_t *)buf, 2 * SECTOR, 0);
	*st = 0xff;
	/* vio_blk_request adds its own header and status: go one level down */
	head = vio_add(&vq, b, 3, next_indirect());
	if (!kit_check(head >= 0, "framing: vio_add"))
		return;
	vio_kick(&vq);
	w = vio_wait_used(&vq, VIO_BLK_TIMEOUT_US, true, &id, &len);
	if (!kit_check(w == VIO_WAIT_USED, "framing: no completion"))
		return;
	kit_check(id == (uint32_t)head, "framing: used id %u, head %d", id,
		  head);
	nr_requests++;
	kit_check(*st == VIRTIO_BLK_S_OK, "framing: status %u", *st);
	kit_check(len == 2 * SECTOR + 1, "framing: used len %u", len);
	kit_check(pattern_check((uint64_t *)buf, s, 2) < 0,
		  "framing: sectors %llu+2 do not hold the pattern",
		  (unsigned long long)s);
	kit_printf("framing: split header, status after the data ok\n");
	kit_free(hdr);
}

/* Requests the device must refuse, with the status the spec gives. */
static void check_errors(uint8_t *buf)
{
	struct vio_buf b = { (uintptr_t)buf, SECTOR, true };
	int st;

	st = rw(false, capacity, buf, SECTOR);
	kit_check(st == VIRTIO_BLK_S_IOERR, "read at capacity: status %d", st);
	st = rw(false, capacity - 1, buf, 2 * SECTOR);
	kit_check(st == VIRTIO_BLK_S_IOERR,
		  "read across the end: status %d", st);
	st = rw(false, ~0ULL, buf, SECTOR);
	kit_check(st == VIRTIO_BLK_S_IOERR,
		  "read at sector 2^64-1: status %d", st);
	if (!ro) {
		st = rw(true, capacity, buf, SECTOR);
		kit_check(st == VIRTIO_BLK_S_IOERR,
			  "write at capacity: status %d", st);
	}
	st = request(0x55, 0, &b, 1, NULL);
	kit_check(st == VIRTIO_BLK_S_UNSUPP,
		  "unknown request type: status %d", st);
	kit_printf("errors checked\n");
}

KIT_TEST(blk)
{
	uint8_t *buf, *rbuf;

	transport = vio_cmdline_transport(VIO_MMIO);
	use_msix = kit_cmdline_u64("msix", 1);
	unaligned = kit_cmdline_u64("unaligned", 0);
	buf = alloc_buf(CHUNK_SECTORS * SECTOR);
	rbuf = alloc_buf(CHUNK_SECTORS * SECTOR);
	seed = kit_cmdline_u64("seed", 1);
	ro = kit_cmdline_u64("ro", 0);
	use_indirect = kit_cmdline_u64("indirect", 0);
	if (!kit_check(buf && rbuf, "out of heap") || !find_device() ||
	    !setup(kit_cmdline_u64("event_idx", 0),
		   kit_cmdline_u64("qsize", 32)))
		kit_finish();

	if (transport == VIO_PCI && use_msix)
		check_msix(buf);
	else if (transport != VIO_MMIO)
		check_intx(buf);
	else
		check_interrupts(buf);
	check_sectors((uint64_t *)buf, (uint64_t *)rbuf);
	if (kit_cmdline_has("multi")) {
		check_multi();
		check_framing(buf);
	}
	check_batch(buf);
	if (kit_cmdline_has("stream"))
		check_stream(kit_cmdline_u64("stream", 0), buf);
	check_flush_and_id();
	check_discard(VIRTIO_BLK_T_DISCARD, "discard", (uint64_t *)rbuf);
	check_discard(VIRTIO_BLK_T_WRITE_ZEROES, "wzeroes", (uint64_t *)rbuf);
	check_errors(buf);
	if (!ro)
		check_discard_errors();
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "NEEDS_RESET set after a well-behaved run");

	kit_printf("blk: requests=%u kicks=%lu reg_reads=%lu reg_writes=%lu\n",
		   nr_requests, vio_kicks, vio_reg_reads, vio_reg_writes);
	kit_finish();
}
