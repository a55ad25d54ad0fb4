// SPDX-License-Identifier: GPL-2.0
/*
 * hostile_pci.elf: a virtio-blk driver that attacks the virtio-pci
 * transports at the register level, one case per run (case=NAME,
 * transport=pci|legacy): BARs moved under load, onto RAM, other devices,
 * 0 and all ones; MSI-X table, PBA and vector abuse; every width at every
 * offset of the function's PCI config space, of the virtio regions and of
 * the legacy register file; status writes in every order. Each case ends
 * with a reset and a written and read back pattern that prove the device
 * (and lkvm) survived.
 *
 * Run it with --poll off: a case checks that a kick through a BAR's old
 * place reaches nothing, which a polling device would hide.
 */
#include <linux/virtio_pci.h>

#include "virtio_pci.h"

#define QSIZE		32
#define SECTOR		VIO_BLK_SECTOR
#define WAIT_US		3000000
#define NREQ		8		/* requests kept in flight */
#define SILENT_US	100000		/* how long "nothing happened" waits */

#define PCI_CMD		0x04
#define PCI_CMD_IO	0x1
#define PCI_CMD_MEM	0x2
#define PCI_CMD_MASTER	0x4
#define PCI_BAR0	0x10
#define PCI_BAR4	0x20
#define PCI_BAR5	0x24
#define CFG_ADDR	0xcf8
#define CFG_DATA	0xcfc

/* lkvm's BARs (virtio/pci.c): 32 KiB memory BAR 4, 256-port I/O BAR 0. */
#define MODERN_BAR_SIZE	0x8000
#define LEGACY_BAR_SIZE	0x100
#define BAR_NOTIFY	0x3000
/* Room in the windows (x86/layout.h) past lkvm's own assignments. */
#define MODERN_SPARE	0x1000000
#define LEGACY_SPARE	0x2000

struct req {
	struct virtio_blk_outhdr hdr;
	uint8_t status;
};

static struct vio_dev dev;
static struct vio_queue vq;
static bool legacy;
static uint64_t ram_end;
static uint64_t mapped;		/* the BAR address dev's pointers follow */
static uint64_t home;		/* where lkvm put the BAR */
static int other_slot = -1;	/* another function of the same flavour */
static bool bar_away;		/* the registers are not where dev says */
static struct req *reqs;
static int heads[NREQ];
static uint8_t *bufs;

/* ---- config space at any width and offset (mechanism #1) ---- */

static uint16_t cfg_port(unsigned int slot, unsigned int off)
{
	outl(CFG_ADDR, 0x80000000u | slot << 11 | (off & 0xfc));
	return CFG_DATA + (off & 3);
}

static uint32_t cfg_read(unsigned int slot, unsigned int off, unsigned int w)
{
	uint16_t p = cfg_port(slot, off);

	return w == 1 ? inb(p) : w == 2 ? inw(p) : inl(p);
}

static void cfg_write(unsigned int slot, unsigned int off, unsigned int w,
		      uint32_t v)
{
	uint16_t p = cfg_port(slot, off);

	if (w == 1)
		outb(p, v);
	else if (w == 2)
		outw(p, v);
	else
		outl(p, v);
}

/* ---- MMIO and ports at any width ---- */

static uint64_t width_mask(unsigned int w)
{
	return w == 8 ? ~0ULL : (1ULL << (8 * w)) - 1;
}

static uint64_t mem_read(uintptr_t a, unsigned int w)
{
	return w == 1 ? mmio_read8(a) : w == 2 ? mmio_read16(a) :
	       w == 4 ? mmio_read32(a) : mmio_read64(a);
}

static void mem_write(uintptr_t a, unsigned int w, uint64_t v)
{
	if (w == 1)
		mmio_write8(a, v);
	else if (w == 2)
		mmio_write16(a, v);
	else if (w == 4)
		mmio_write32(a, v);
	else
		mmio_write64(a, v);
}

static uint32_t io_read(uint16_t p, unsigned int w)
{
	return w == 1 ? inb(p) : w == 2 ? inw(p) : inl(p);
}

static void io_write(uint16_t p, unsigned int w, uint32_t v)
{
	if (w == 1)
		outb(p, v);
	else if (w == 2)
		outw(p, v);
	else
		outl(p, v);
}

/* ---- the BAR ---- */

static unsigned int bar_reg(void)
{
	return legacy ? PCI_BAR0 : PCI_BAR4;
}

static uint64_t bar_get(void)
{
	uint32_t lo = cfg_read(dev.slot, bar_reg(), 4);

	if (legacy)
		return lo & ~3u;
	return (lo & ~0xfu) | (uint64_t)cfg_read(dev.slot, PCI_BAR5, 4) << 32;
}

/* The low dword, then the high one: a modern BAR passes through both. */
static void bar_set_raw(uint32_t lo, uint32_t hi)
{
	cfg_write(dev.slot, bar_reg(), 4, lo);
	if (!legacy)
		cfg_write(dev.slot, PCI_BAR5, 4, hi);
}

static void bar_set(uint64_t a)
{
	bar_set_raw((uint32_t)a, a >> 32);
}

static uint16_t command(void)
{
	return cfg_read(dev.slot, PCI_CMD, 2);
}

static void set_command(uint16_t cmd)
{
	cfg_write(dev.slot, PCI_CMD, 2, cmd);
}

static uint16_t decode_bits(void)
{
	return (legacy ? PCI_CMD_IO : PCI_CMD_MEM) | PCI_CMD_MASTER;
}

/* The driver's addresses follow the BAR to `to`. */
static void rebase(uint64_t to)
{
	uintptr_t delta = to - mapped;

	dev.base += delta;
	if (!legacy) {
		dev.common += delta;
		dev.isr += delta;
		dev.devcfg += delta;
		dev.notify += delta;
		dev.msix_table += delta;
		dev.msix_pba += delta;
		vq.notify += delta;
	}
	mapped = to;
}

static void move_to(uint64_t to)
{
	bar_set(to);
	rebase(to);
}

/* The other virtio function of our flavour, whose BAR is a target. */
static int find_other(void)
{
	unsigned int slot;

	for (slot = 0; slot < 32; slot++) {
		uint32_t id = cfg_read(slot, 0, 4);
		uint16_t did = id >> 16;

		if (slot == dev.slot || (id & 0xffff) != VIO_PCI_VENDOR)
			continue;
		if (legacy ? did < 0x1040 : did >= 0x1040)
			return slot;
	}
	return -1;
}

static uint64_t other_bar(void)
{
	uint32_t lo = cfg_read(other_slot, bar_reg(), 4);

	if (legacy)
		return lo & ~3u;
	return (lo & ~0xfu) | (uint64_t)cfg_read(other_slot, PCI_BAR5, 4) << 32;
}

/* The other function is only a target: ACKNOWLEDGE | DRIVER, no more. */
static void greet_other(void)
{
	uint64_t b = other_bar();

	if (legacy) {
		outb(b + VIRTIO_PCI_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
					   VIRTIO_CONFIG_S_DRIVER);
		return;
	}
	/* lkvm's common config is at the start of its BAR (virtio/pci.c) */
	if (b < (1ULL << 32))
		mmio_write8(b + VIRTIO_PCI_COMMON_STATUS,
			    VIRTIO_CONFIG_S_ACKNOWLEDGE |
			    VIRTIO_CONFIG_S_DRIVER);
}

/* ---- requests in flight ---- */

static uint8_t pattern(unsigned int sector, unsigned int i, unsigned int seed)
{
	return (uint8_t)(sector * 7 + i * 13 + seed * 101 + (i >> 8));
}

/* NREQ requests on sectors first.., published and kicked once. */
static bool queue_reqs(bool write, unsigned int first, unsigned int seed)
{
	unsigned int i, j;

	for (i = 0; i < NREQ; i++) {
		struct req *r = &reqs[i];
		uint8_t *b = bufs + i * SECTOR;
		struct vio_buf v[3] = {
			{ (uintptr_t)&r->hdr, sizeof(r->hdr), false },
			{ (uintptr_t)b, SECTOR, !write },
			{ (uintptr_t)&r->status, 1, true },
		};

		r->hdr.type = write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN;
		r->hdr.ioprio = 0;
		r->hdr.sector = first + i;
		r->status = 0xff;
		for (j = 0; j < SECTOR; j++)
			b[j] = write ? pattern(first + i, j, seed) : 0;
		heads[i] = vio_add(&vq, v, 3, false);
		if (!kit_check(heads[i] >= 0, "no room for request %u", i))
			return false;
	}
	vio_notify(&vq);
	return true;
}

/* Takes all NREQ completions; a read's data must carry seed's pattern. */
static bool reap_reqs(const char *what, bool write, unsigned int first,
		      unsigned int seed)
{
	unsigned int n, i, j, bad = 0;
	uint32_t id, len;

	for (n = 0; n < NREQ; n++) {
		enum vio_wait w = vio_wait_used(&vq, WAIT_US, !bar_away, &id,
						&len);

		if (!kit_check(w == VIO_WAIT_USED,
			       "%s: request %u of %u: %s", what, n, NREQ,
			       w == VIO_WAIT_NEEDS_RESET ? "NEEDS_RESET" :
							   "no completion"))
			return false;
		for (i = 0; i < NREQ && heads[i] != (int)id; i++)
			;
		if (!kit_check(i < NREQ, "%s: used id %u is no request of ours",
			       what, id))
			return false;
		heads[i] = -1;
		bad += reqs[i].status != VIRTIO_BLK_S_OK;
		for (j = 0; !write && j < SECTOR; j++)
			if (bufs[i * SECTOR + j] != pattern(first + i, j, seed)) {
				bad++;
				break;
			}
	}
	return kit_check(!bad, "%s: %u requests failed or read back wrong",
			 what, bad);
}

/* Writes NREQ sectors and reads them back. */
static bool rw_check(const char *what, unsigned int first, unsigned int seed)
{
	return queue_reqs(true, first, seed) &&
	       reap_reqs(what, true, first, seed) &&
	       queue_reqs(false, first, seed) &&
	       reap_reqs(what, false, first, seed);
}

static bool bring_up(bool msix)
{
	dev.msix_on = false;
	if (!kit_check(!vio_negotiate(&dev, 0), "feature negotiation"))
		return false;
	if (msix && !kit_check(vio_msix_enable(&dev), "MSI-X enable"))
		return false;
	if (!kit_check(!vio_queue_setup(&vq, &dev, 0, QSIZE), "queue setup"))
		return false;
	vio_driver_ok(&dev);
	return true;
}

/* ---- BAR cases ---- */

static uint32_t old_read(uint64_t old)
{
	return legacy ? inl(old + VIRTIO_PCI_HOST_FEATURES) :
			mmio_read32(old + VIRTIO_PCI_COMMON_DF);
}

/*
 * Nothing may answer at the BAR's old place: registers read all ones, a
 * reset written there does not reset, and a kick there (lkvm's old
 * ioeventfd) serves nothing until one through the new place does.
 */
static void check_gone(uint64_t old, int restore_cmd)
{
	uint32_t id, len, v = old_read(old);
	int head;
	struct vio_buf b[3] = {
		{ (uintptr_t)&reqs[0].hdr, sizeof(reqs[0].hdr), false },
		{ (uintptr_t)bufs, SECTOR, true },
		{ (uintptr_t)&reqs[0].status, 1, true },
	};

	kit_check(v == 0xffffffff, "the old BAR place %#llx still reads %#x",
		  (unsigned long long)old, v);
	if (legacy)
		outb(old + VIRTIO_PCI_STATUS, 0);
	else
		mmio_write8(old + VIRTIO_PCI_COMMON_STATUS, 0);
	kit_check(vio_status(&dev) & VIRTIO_CONFIG_S_DRIVER_OK,
		  "a reset at the old BAR place reached the device");
	reqs[0].hdr = (struct virtio_blk_outhdr){ VIRTIO_BLK_T_IN, 0, 0 };
	reqs[0].status = 0xff;
	head = vio_add(&vq, b, 3, false);
	if (legacy)
		outw(old + VIRTIO_PCI_QUEUE_NOTIFY, 0);
	else
		mmio_write16(old + BAR_NOTIFY, 0);
	kit_check(vio_wait_used(&vq, SILENT_US, false, &id, &len) ==
		  VIO_WAIT_TIMEOUT,
		  "a kick at the old BAR place reached the device");
	if (restore_cmd >= 0)
		set_command(restore_cmd);
	vio_notify(&vq);
	kit_check(vio_wait_used(&vq, WAIT_US, true, &id, &len) ==
		  VIO_WAIT_USED && id == (uint32_t)head &&
		  reqs[0].status == VIRTIO_BLK_S_OK,
		  "no completion after a kick at the new BAR place");
}

static void case_bar_move(void)
{
	uint64_t spare = home + (legacy ? LEGACY_SPARE : MODERN_SPARE);
	unsigned int round;

	/* there and back, each move with writes in flight */
	for (round = 0; round < 4; round++) {
		uint64_t from = mapped, to = round % 2 ? home : spare;

		if (!queue_reqs(true, 8 * round, round))
			return;
		move_to(to);
		if (!reap_reqs("writes across a BAR move", true, 8 * round,
			       round))
			return;
		check_gone(from, -1);
		if (!queue_reqs(false, 8 * round, round) ||
		    !reap_reqs("reads after a BAR move", false, 8 * round,
			       round))
			return;
		kit_printf("BAR moved from %#llx to %#llx under load\n",
			   (unsigned long long)from, (unsigned long long)to);
	}
}

struct bar_target {
	const char *what;
	uint32_t lo, hi;
	bool decode_off;		/* instead of a move: decoding off */
	bool sizing;			/* all ones: check the size it reads */
};

/* Where a modern BAR may be put that is no free room. */
static const struct bar_target modern_targets[] = {
	{ "RAM at 4 MiB", 0x400000, 0, false, false },
	{ "0", 0, 0, false, false },
	{ "all ones (sizing, decoding on)", 0xffffffff, 0xffffffff, false, true },
	{ "the top of 4 GiB", 0xffffffff, 0, false, false },
	{ "the local APIC", 0xfee00000, 0, false, false },
	{ "the IOAPIC", 0xfec00000, 0, false, false },
	{ "above 4 GiB", 0xc0000000, 1, false, false },
	{ "decoding off", 0, 0, true, false },
};

static const struct bar_target legacy_targets[] = {
	{ "COM1's ports", 0x301, 0, false, false },
	{ "the PCI host's ports", 0xc01, 0, false, false },
	{ "the debug exit port", 0x501, 0, false, false },
	{ "the ACPI PM ports", 0x601, 0, false, false },
	{ "port 0", 0x1, 0, false, false },
	{ "all ones (sizing, decoding on)", 0xffffffff, 0, false, true },
	{ "decoding off", 0, 0, true, false },
};

/* Sizing: the BAR reads back its size and type (PCI 3.0, 6.2.5.1). */
static void check_sizing(void)
{
	uint32_t lo = cfg_read(dev.slot, bar_reg(), 4);
	uint32_t want = legacy ? (uint32_t)~(LEGACY_BAR_SIZE - 1) | 1 :
				 (uint32_t)~(MODERN_BAR_SIZE - 1) | 4;

	kit_check(lo == want, "all ones in the BAR read back %#x, not %#x", lo,
		  want);
	if (!legacy)
		kit_check(cfg_read(dev.slot, PCI_BAR5, 4) == 0xffffffff,
			  "all ones in BAR 5 read back %#x",
			  cfg_read(dev.slot, PCI_BAR5, 4));
}

/* Writes in flight, the BAR put on t, back to a free place, read them. */
static void bar_target(const struct bar_target *t, unsigned int seed,
		       uint64_t back)
{
	uint16_t cmd = command();

	if (!queue_reqs(true, 8 * (seed % 16), seed))
		return;
	if (t->decode_off)
		set_command(cmd & ~(PCI_CMD_IO | PCI_CMD_MEM));
	else
		bar_set_raw(t->lo, t->hi);
	if (t->sizing)
		check_sizing();
	bar_away = true;
	if (!reap_reqs(t->what, true, 8 * (seed % 16), seed))
		return;
	bar_away = false;
	if (t->decode_off)
		check_gone(mapped, cmd);
	else
		move_to(back);
	if (!queue_reqs(false, 8 * (seed % 16), seed) ||
	    !reap_reqs(t->what, false, 8 * (seed % 16), seed))
		return;
	kit_printf("BAR on %s and back to %#llx: ok\n", t->what,
		   (unsigned long long)back);
}

static void case_bar_targets(void)
{
	const struct bar_target *t = legacy ? legacy_targets : modern_targets;
	unsigned int i, n = legacy ? ARRAY_SIZE(legacy_targets) :
				     ARRAY_SIZE(modern_targets);
	uint64_t spare = home + (legacy ? LEGACY_SPARE : MODERN_SPARE);
	struct bar_target o;

	for (i = 0; i < n; i++)
		bar_target(&t[i], i + 1, i % 2 ? home : spare);
	if (other_slot < 0) {
		kit_printf("no second function: its BAR is no target\n");
		return;
	}
	/* on top of the other device's BAR (and its ioeventfds) */
	o = (struct bar_target){ "the other device's BAR",
				 (uint32_t)other_bar() | (legacy ? 1 : 4),
				 other_bar() >> 32, false, false };
	bar_target(&o, n + 1, home);
	kit_check(other_bar() == (o.lo & ~0xfu), "the other device's BAR moved");
}

/* ---- MSI-X ---- */

/* Reads of whatever sectors 0.. hold: only the completions matter. */
static void one_request(const char *what)
{
	if (queue_reqs(false, 0, 0))
		reap_reqs(what, true, 0, 0);
}

static uintptr_t entry(unsigned int e)
{
	return dev.msix_table + 16 * e;
}

static void set_entry(unsigned int e, uint32_t lo, uint32_t hi, uint32_t data,
		      bool masked)
{
	mmio_write32(entry(e) + 12, 1);
	mmio_write32(entry(e) + 0, lo);
	mmio_write32(entry(e) + 4, hi);
	mmio_write32(entry(e) + 8, data);
	if (!masked)
		mmio_write32(entry(e) + 12, 0);
}

static void check_entry(unsigned int e, uint32_t lo, uint32_t data,
			uint32_t ctrl, const char *after)
{
	uint32_t a = mmio_read32(entry(e)), h = mmio_read32(entry(e) + 4);
	uint32_t d = mmio_read32(entry(e) + 8), c = mmio_read32(entry(e) + 12);

	kit_check(a == lo && !h && d == data && (c & 1) == ctrl,
		  "after %s entry %u reads %#x:%#x data %#x ctrl %#x", after,
		  e, h, a, d, c);
}

static void queue_vector(uint16_t v)
{
	mmio_write16(dev.common + VIRTIO_PCI_COMMON_Q_SELECT, 0);
	mmio_write16(dev.common + VIRTIO_PCI_COMMON_Q_MSIX, v);
}

static void msix_good(unsigned int vector, const char *what)
{
	set_entry(1, VIO_MSI_ADDR, 0, vector, false);
	queue_vector(1);
	one_request(what);
	kit_check(vio_irq_wait(vector, WAIT_US), "%s: no MSI on vector %#x",
		  what, vector);
}

static void msix_outside(void)
{
	unsigned int n = dev.nr_vectors, e, off;
	uint16_t v;

	/* entries past the table's size, up to the end of its 8 KiB */
	for (e = n; e < n + 4; e++)
		for (off = 0; off < 16; off += 4)
			mmio_write32(entry(e) + off, 0xffffffff);
	mmio_write64(entry(0x1ff), ~0ULL);
	mmio_write64(entry(0x1ff) + 8, 0);
	for (e = n; e < n + 4; e++)
		kit_check(!mmio_read32(entry(e) + 8),
			  "entry %u past the table (size %u) reads data %#x",
			  e, n, mmio_read32(entry(e) + 8));
	/* a queue and the config pointed at vectors the table lacks */
	mmio_write16(dev.common + VIRTIO_PCI_COMMON_MSIX, n);
	v = mmio_read16(dev.common + VIRTIO_PCI_COMMON_MSIX);
	kit_check(v == VIO_NO_VECTOR, "msix_config %u (table size %u) reads %#x",
		  n, n, v);
	mmio_write16(dev.common + VIRTIO_PCI_COMMON_MSIX, 0);
	queue_vector(0x7ff);
	v = vio_msix_queue_vector(&dev, 0);
	kit_check(v == VIO_NO_VECTOR, "queue vector 0x7ff reads %#x", v);
	queue_vector(n);
	v = vio_msix_queue_vector(&dev, 0);
	kit_check(v == VIO_NO_VECTOR, "queue vector %u reads %#x", n, v);
	one_request("a request with no vector");
}

static void msix_pba(void)
{
	unsigned int off, w;

	/* masked: the message waits in the PBA, which writes cannot touch */
	set_entry(1, VIO_MSI_ADDR, 0, 0x61, true);
	queue_vector(1);
	one_request("a request on a masked vector");
	kit_check(vio_msix_pending(&dev, 1), "masked vector 1 not pending");
	for (off = 0; off < 16; off++)
		for (w = 1; w <= 8; w *= 2) {
			mem_write(dev.msix_pba + off, w, 0);
			mem_write(dev.msix_pba + off, w, ~0ULL);
		}
	kit_check(vio_msix_pending(&dev, 1) && !vio_msix_pending(&dev, 0),
		  "PBA writes changed it: %#x", mmio_read32(dev.msix_pba));
	kit_check(!vio_irq_pending(0x61), "a masked vector was delivered");
	vio_msix_mask(&dev, 1, false);
	kit_check(vio_irq_wait(0x61, WAIT_US), "unmasking did not deliver");
	kit_check(!vio_msix_pending(&dev, 1), "still pending after delivery");
}

static void msix_odd_writes(void)
{
	unsigned int off, w;

	/* every width at every offset of entry 1, and across into 2 */
	for (off = 0; off < 20; off++)
		for (w = 1; w <= 8; w *= 2) {
			uint64_t r = mem_read(entry(1) + off, w);

			mem_write(entry(1) + off, w, ~r & width_mask(w));
			mem_write(entry(1) + off, w, 0xa5a5a5a5a5a5a5a5ULL);
		}
	msix_good(0x62, "entry 1 reprogrammed after odd writes");
	check_entry(0, VIO_MSI_ADDR, 0x50, 1, "odd writes to entry 1");
}

static void msix_bad_address(void)
{
	static const uint32_t addr[][3] = {
		{ 0x12345000, 0, 0x63 },	/* RAM, not the LAPIC window */
		{ VIO_MSI_ADDR, 0xffffffff, 0x64 },
		{ 0, 0, 0 },			/* vector 0: illegal */
		{ 0xfef00000, 0, 0x65 },	/* past the window */
		{ 0xfee00ffc, 0, 0x66 },	/* odd low bits */
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(addr); i++) {
		set_entry(1, addr[i][0], addr[i][1], addr[i][2], false);
		one_request("a request whose MSI goes astray");
	}
	/* the same entry, a proper message: delivery is back */
	msix_good(0x67, "entry 1 after stray addresses");
}

static void msix_function_mask(void)
{
	set_entry(1, VIO_MSI_ADDR, 0, 0x68, false);
	vio_msix_function_mask(&dev, true);
	one_request("a request under the function mask");
	kit_check(!vio_irq_pending(0x68), "delivered under the function mask");
	kit_check(vio_msix_pending(&dev, 1), "not pending under the function mask");
	vio_msix_function_mask(&dev, false);
	kit_check(vio_irq_wait(0x68, WAIT_US),
		  "clearing the function mask did not deliver");
}

static void case_msix(void)
{
	set_entry(0, VIO_MSI_ADDR, 0, 0x50, true);
	msix_good(0x60, "a well-formed MSI");
	msix_outside();
	check_entry(0, VIO_MSI_ADDR, 0x50, 1, "writes past the table");
	msix_pba();
	msix_odd_writes();
	msix_bad_address();
	msix_function_mask();
	kit_printf("MSI-X: past the table, PBA, odd widths, stray vectors and addresses survived\n");
}

/* ---- every width at every offset ---- */

/*
 * Each byte of the function's config space at each width: its complement,
 * all ones, zero, each followed by what was there. The BAR passes through
 * all ones (sizing), 0 and odd places while decoding is on.
 */
static void sweep_config(unsigned int slot)
{
	static const uint32_t vals[] = { 0, 0xffffffff };
	unsigned int off, w, k;

	for (off = 0; off < 256; off++)
		for (w = 1; w <= 4; w *= 2) {
			uint32_t r = cfg_read(slot, off, w);

			cfg_write(slot, off, w, ~r);
			cfg_write(slot, off, w, r);
			for (k = 0; k < ARRAY_SIZE(vals); k++) {
				cfg_write(slot, off, w, vals[k]);
				cfg_write(slot, off, w, r);
			}
		}
}

static void case_config_space(void)
{
	uint32_t id = cfg_read(dev.slot, 0, 4), before[64], after;
	uint16_t cmd = command();
	unsigned int i, diff = 0;

	for (i = 0; i < 64; i++)
		before[i] = cfg_read(dev.slot, 4 * i, 4);
	if (!queue_reqs(true, 16, 3))
		return;
	sweep_config(dev.slot);
	if (!reap_reqs("writes during the config sweep", true, 16, 3))
		return;
	sweep_config(0);		/* the host bridge */
	if (other_slot >= 0)
		sweep_config(other_slot);
	for (i = 0; i < 64; i++) {
		after = cfg_read(dev.slot, 4 * i, 4);
		/* Status bit 3: the interrupt the sweep's requests raised */
		if (i == 1)
			after = (after & ~(8u << 16)) | (before[i] & (8u << 16));
		if (after != before[i] && diff++ < 4)
			kit_fail("config dword %#x: %#x before, %#x after",
				 4 * i, before[i], after);
	}
	kit_check(cfg_read(dev.slot, 0, 4) == id && command() == cmd &&
		  bar_get() == mapped, "the function's identity, command or BAR changed");
	if (!queue_reqs(false, 16, 3) ||
	    !reap_reqs("reads after the config sweep", false, 16, 3))
		return;
	kit_printf("config space: 256 offsets x 3 widths x 3 values, restored\n");
}

/* Every width at offsets [from, to) of a modern region: ~r, all ones, r. */
static void sweep_mem(uintptr_t base, unsigned int from, unsigned int to,
		      unsigned int step)
{
	unsigned int off, w;

	for (off = from; off < to; off += step)
		for (w = 1; w <= 8; w *= 2) {
			uint64_t r = mem_read(base + off, w);

			mem_write(base + off, w, ~r & width_mask(w));
			mem_write(base + off, w, ~0ULL);
			mem_write(base + off, w, r);
		}
}

static void case_virtio_regions(void)
{
	uint64_t cap = vio_config_read64(&dev, 0);
	unsigned int q;

	/* the common config (0x3c bytes), then the rest of its 4 KiB */
	sweep_mem(dev.common, 0, 0x40, 1);
	sweep_mem(dev.common, 0x40, 0x1000, 0x1c4);
	sweep_mem(dev.isr, 0, 0x10, 1);
	sweep_mem(dev.isr, 0x10, 0x1000, 0x1c4);
	sweep_mem(dev.devcfg, 0, 0x44, 1);
	sweep_mem(dev.devcfg, 0x44, 0x1000, 0x1c4);
	/* notify: queue 0's place, then places of queues that do not exist */
	sweep_mem(dev.notify, 0, 0x20, 1);
	for (q = 1; q < 1024; q += 37) {
		mmio_write16(dev.notify + 4 * q, q);
		mmio_write32(dev.notify + 4 * q, 0xffffffff);
	}
	mmio_write16(dev.notify, 0xffff);
	mmio_write16(dev.notify, 99);
	/* what follows the table and the PBA, to the end of the BAR */
	sweep_mem(dev.msix_pba, 0, 0x10, 1);
	sweep_mem(dev.msix_pba, 0x10, 0x2000, 0x1c4);
	kit_check(vio_config_read64(&dev, 0) == cap,
		  "capacity changed from %llu to %llu",
		  (unsigned long long)cap,
		  (unsigned long long)vio_config_read64(&dev, 0));
	kit_printf("virtio regions: common, ISR, device, notify, PBA swept\n");
}

/* ---- the legacy register file ---- */

static void case_legacy_regs(void)
{
	uint16_t p = dev.base;
	unsigned int off, w;

	/* all 256 ports, each width: ~r, all ones, zero, then r */
	for (off = 0; off < LEGACY_BAR_SIZE; off++)
		for (w = 1; w <= 4; w *= 2) {
			uint32_t r = io_read(p + off, w);

			io_write(p + off, w, ~r);
			io_write(p + off, w, 0xffffffff);
			io_write(p + off, w, 0);
			io_write(p + off, w, r);
		}
	kit_printf("legacy registers: 256 ports x 3 widths swept\n");
}

static void expect_needs_reset(const char *what)
{
	uint64_t start = kit_now_us();
	uint8_t st;

	while (!((st = vio_status(&dev)) & VIO_STATUS_NEEDS_RESET) &&
	       kit_now_us() - start < WAIT_US)
		kit_udelay(200);
	kit_printf("%s: Status %#x\n", what, st);
	kit_check(st & VIO_STATUS_NEEDS_RESET, "%s: no NEEDS_RESET (Status %#x)",
		  what, st);
}

static void legacy_pfn(uint32_t pfn, bool after_ok, const char *what)
{
	vio_reset(&dev);
	vio_negotiate(&dev, 0);
	if (after_ok)
		vio_driver_ok(&dev);
	outw(dev.base + VIRTIO_PCI_QUEUE_SEL, 0);
	outl(dev.base + VIRTIO_PCI_QUEUE_PFN, pfn);
	if (!after_ok)
		vio_driver_ok(&dev);
	expect_needs_reset(what);
}

/* One bad ring per run (pfn=N): lkvm warns about each, rate-limited. */
static void case_legacy_pfn(void)
{
	uint32_t num = inw(dev.base + VIRTIO_PCI_QUEUE_NUM);

	switch (kit_cmdline_u64("pfn", 0)) {
	case 0:
		legacy_pfn((ram_end + (1u << 20)) >> 12, false,
			   "ring outside RAM, then DRIVER_OK");
		break;
	case 1:
		legacy_pfn((ram_end + (1u << 20)) >> 12, true,
			   "ring outside RAM after DRIVER_OK");
		break;
	case 2:
		/* the used ring (past 16 * num + 6 + 2 * num) across the end */
		legacy_pfn((ram_end - 16 * num) >> 12, false,
			   "ring across the end of RAM");
		break;
	case 3:
		legacy_pfn(0xffffffff, false, "ring at PFN 0xffffffff");
		break;
	default:
		legacy_pfn(0xfee00, false, "ring on the local APIC");
		break;
	}
}

static void case_legacy_qsel(void)
{
	static const uint16_t sel[] = { 1, 2, 99, 0x7fff, 0xffff };
	uint16_t p = dev.base;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sel); i++) {
		outw(p + VIRTIO_PCI_QUEUE_SEL, sel[i]);
		kit_check(!inw(p + VIRTIO_PCI_QUEUE_NUM),
			  "queue %u has size %u", sel[i],
			  inw(p + VIRTIO_PCI_QUEUE_NUM));
		outl(p + VIRTIO_PCI_QUEUE_PFN, (uintptr_t)vq.desc >> 12);
		kit_check(!inl(p + VIRTIO_PCI_QUEUE_PFN),
			  "queue %u took a PFN", sel[i]);
		outw(p + VIRTIO_PCI_QUEUE_NOTIFY, sel[i]);
		outl(p + VIRTIO_PCI_QUEUE_NOTIFY, 0xffff0000u | sel[i]);
	}
	outw(p + VIRTIO_PCI_QUEUE_SEL, 0);
	kit_check(inl(p + VIRTIO_PCI_QUEUE_PFN) == (uintptr_t)vq.desc >> 12,
		  "queue 0's PFN changed");
	if (!queue_reqs(true, 24, 5) || !reap_reqs("writes", true, 24, 5) ||
	    !queue_reqs(false, 24, 5) || !reap_reqs("reads", false, 24, 5))
		return;
	kit_printf("queue select out of range: no size, no PFN, kicks ignored\n");
}

/* ---- status ---- */

static const uint8_t status_bits[] = {
	VIRTIO_CONFIG_S_ACKNOWLEDGE, VIRTIO_CONFIG_S_DRIVER,
	VIRTIO_CONFIG_S_FEATURES_OK, VIRTIO_CONFIG_S_DRIVER_OK,
};

/* The queue set up on a fresh reset, then the bits in perm's order. */
static void status_order(const uint8_t *perm, unsigned int seed)
{
	uint8_t st = 0, got = 0;
	unsigned int i;

	vio_reset(&dev);
	vio_queue_free(&vq);
	vio_pci_features(&dev, 0);
	if (!kit_check(!vio_queue_setup(&vq, &dev, 0, QSIZE), "queue setup"))
		return;
	for (i = 0; i < 4; i++) {
		st |= status_bits[perm[i]];
		vio_set_status(&dev, st);
		got = vio_status(&dev);
		kit_check(!(got & ~(st | VIO_STATUS_NEEDS_RESET)),
			  "Status %#x after writing %#x", got, st);
	}
	if ((got & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    !(got & VIO_STATUS_NEEDS_RESET))
		rw_check("a device started in an odd order", 32, seed);
}

static void case_status_order(void)
{
	uint8_t perm[4];
	unsigned int n, i, j, started = 0;

	/* the 24 orders of the four bits, by factorial numbering */
	for (n = 0; n < 24; n++) {
		uint8_t left[4] = { 0, 1, 2, 3 };
		unsigned int k = n, m = 4;

		for (i = 0; i < 4; i++, m--) {
			unsigned int f = 1, pick;

			for (j = 2; j < m; j++)
				f *= j;
			pick = k / f;
			k %= f;
			perm[i] = left[pick];
			for (j = pick; j + 1 < m; j++)
				left[j] = left[j + 1];
		}
		status_order(perm, n);
		started += !!(vio_status(&dev) & VIRTIO_CONFIG_S_DRIVER_OK);
	}
	/* FAILED on a live device, then more bits after it */
	vio_set_status(&dev, vio_status(&dev) | VIRTIO_CONFIG_S_FAILED);
	vio_set_status(&dev, 0xff & ~VIO_STATUS_NEEDS_RESET);
	kit_printf("status in 24 orders: %u started\n", started);
}

/*
 * Status written wider than its byte, the byte 0: the device resets, and
 * with it the transport's interrupt state (lkvm's own reset clears the
 * ISR): a completion's ISR bit must not survive.
 */
static void case_status_wide(void)
{
	uint8_t st;
	uint32_t isr;

	if (!queue_reqs(false, 0, 0) || !reap_reqs("a request", true, 0, 0))
		return;
	if (legacy)
		outw(dev.base + VIRTIO_PCI_STATUS, 0x0100);
	else
		mmio_write16(dev.common + VIRTIO_PCI_COMMON_STATUS, 0x0100);
	st = vio_status(&dev);
	isr = vio_isr(&dev);
	kit_printf("16-bit Status write of 0x100: Status %#x, ISR %#x\n", st,
		   isr);
	kit_check(st || !isr, "the device reset and kept ISR %#x", isr);
}

struct pci_case {
	const char *name;
	void (*fn)(void);
	bool modern, legacy;		/* the transports it applies to */
	bool msix;			/* brought up with MSI-X */
};

static const struct pci_case cases[] = {
	{ "bar_move", case_bar_move, true, true, false },
	{ "bar_targets", case_bar_targets, true, true, false },
	{ "msix", case_msix, true, false, true },
	{ "config_space", case_config_space, true, true, false },
	{ "virtio_regions", case_virtio_regions, true, false, true },
	{ "legacy_regs", case_legacy_regs, false, true, false },
	{ "legacy_pfn", case_legacy_pfn, false, true, false },
	{ "legacy_qsel", case_legacy_qsel, false, true, false },
	{ "status_order", case_status_order, true, true, false },
	{ "status_wide", case_status_wide, true, true, false },
};

/* The BAR home, decoding on, reset, up again, a pattern written and read. */
static void recover(void)
{
	uint32_t isr;

	move_to(home);
	set_command(command() | decode_bits());
	bar_away = false;
	if (!kit_check(vio_reset(&dev), "reset after the hostile step"))
		return;
	isr = vio_isr(&dev);
	kit_check(!isr, "ISR %#x after a reset", isr);
	vio_queue_free(&vq);
	if (!bring_up(false))
		return;
	if (rw_check("after the reset", 100, 42) &&
	    kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		      "NEEDS_RESET after the recovery"))
		kit_printf("recovered: read after reset ok\n");
}

static const struct pci_case *pick_case(void)
{
	char name[32] = "";
	unsigned int i;

	kit_cmdline_get("case", name, sizeof(name));
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (!strcmp(cases[i].name, name) &&
		    (legacy ? cases[i].legacy : cases[i].modern))
			return &cases[i];
	kit_printf("cases (%s):", legacy ? "legacy" : "pci");
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (legacy ? cases[i].legacy : cases[i].modern)
			kit_printf(" %s", cases[i].name);
	kit_printf("\n");
	kit_fail("unknown case '%s'", name);
	return NULL;
}

KIT_TEST(hostile_pci)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);
	const struct pci_case *c;

	if (!kit_check(t != VIO_MMIO, "transport=pci or legacy"))
		kit_finish();
	legacy = t == VIO_PCI_LEGACY;
	c = pick_case();
	if (!c)
		kit_finish();
	ram_end = kit_ram_end();
	reqs = kit_zalloc(NREQ * sizeof(*reqs));
	bufs = kit_malloc(NREQ * SECTOR);
	if (!kit_check(ram_end && reqs && bufs, "set-up") ||
	    !kit_check(vio_pci_find(&dev, legacy) &&
		       dev.device_id == VIRTIO_ID_BLOCK, "no virtio-blk") ||
	    !bring_up(c->msix))
		kit_finish();
	home = mapped = bar_get();
	other_slot = find_other();
	if (other_slot >= 0)
		greet_other();
	kit_printf("case %s (%s, 00:%02x.0, BAR %#llx, RAM ends at %#llx)\n",
		   c->name, legacy ? "legacy" : "modern", dev.slot,
		   (unsigned long long)home, (unsigned long long)ram_end);
	c->fn();
	recover();
	kit_finish();
}
