/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kick_kvmtool.bin: guest/kit/kick.c for kvmtool, to compare what a queue
 * notify costs there with lkvm on the same machine. kvmtool boots it as a
 * flat binary (`lkvm run -k kick_kvmtool.bin -d IMG`, see kick_kvmtool.S).
 *
 * Finds kvmtool's virtio-blk PCI function, sets up queue 0 with an empty
 * ring, then writes its queue-notify register KICKS times (default 100000,
 * a multiple of 16) in kick.elf's loop, unrolled by 16, and once more
 * times an empty loop of the same shape. Prints the line kick.elf prints:
 * "kick: N kicks, T us, X.XX us/kick, loop Y.YY us/iteration"
 * preceded by one "kick_kvmtool: ..." line that says what was measured.
 *
 * Transport: kvmtool's default is modern virtio-pci (device 0x1042); with
 * --virtio-transport pci-legacy (or --virtio-legacy) it is legacy
 * (device 0x1001). Both put the same registers behind BAR0 (I/O, 256
 * ports) and BAR1 (MMIO, 256 bytes), and kvmtool registers a 2-byte,
 * datamatch = queue index KVM_IOEVENTFD on the doorbell in both BARs
 * (virtio/pci.c virtio_pci__init_ioeventfd): legacy at offset 16
 * (VIRTIO_PCI_QUEUE_NOTIFY), modern at 0x38 (just past the common config;
 * the notify capability names BAR1, multiplier 0). So:
 *   legacy device: outw(BAR0 + 16, 0), as kick.elf does with "legacy";
 *   modern device: 16-bit store to BAR1 + notify offset (what Linux does),
 *                  or with NOTIFY_PIO=1 at build time outw(BAR0 + 0x38, 0),
 *                  which hits kvmtool's PIO ioeventfd (not what a driver
 *                  would do: the modern capabilities only name BAR1).
 * kvmtool has no switch to turn ioeventfd off; with NOTIFY_EXIT=1 the
 * doorbell is written 4 bytes wide (outl / movl), which the 2-byte
 * ioeventfd does not match, so every kick exits to kvmtool's vCPU thread
 * (its handler reads 16 bits, queue 0, and calls notify_vq, which wakes
 * the blk thread).
 *
 * Time: kvmtool has no ACPI, so no PM timer. The TSC is calibrated against
 * PIT channel 0 (KVM's in-kernel PIT, KVM_CREATE_PIT2) over ~220 ms, then
 * read with rdtsc. Not PIT channel 2: kvmtool creates the PIT without
 * KVM_PIT_SPEAKER_DUMMY, so port 0x61 (channel 2's gate and output) is
 * kvmtool's i8042 code, which always reads 0x20, and channel 2 never counts.
 *
 * End: the i8042 "pulse reset line" command (0xfe to port 0x64), which
 * kvmtool turns into kvm__reboot(): the vCPU threads stop and `lkvm run`
 * returns 0 ("KVM session ended normally"). Should that not happen within
 * ~0.2 s, a triple fault: on hardware KVM a KVM_EXIT_SHUTDOWN; on this
 * kvm_pvm it comes out as KVM_EXIT_INTERNAL_ERROR, which kvmtool reports
 * with a register dump, but it ends the VM (exit status 0) all the same.
 */
#include <stdint.h>
#include <stdbool.h>

#include "../cpu.h"

#ifndef KICKS
#define KICKS		100000
#endif
#ifndef NOTIFY_PIO
#define NOTIFY_PIO	0
#endif
#ifndef NOTIFY_EXIT
#define NOTIFY_EXIT	0
#endif
#define UNROLL		16
#define CAL_TICKS	(4 * 65536ULL)	/* ~220 ms */
#define PIT_HZ		1193182ULL

#define COM1		0x3f8

#define VIRTIO_VENDOR		0x1af4
#define VIRTIO_BLK_LEGACY	0x1001
#define VIRTIO_BLK_MODERN	0x1042

#define LEGACY_PFN		8
#define LEGACY_QUEUE_SEL	14
#define LEGACY_NOTIFY		16
#define LEGACY_STATUS		18

#define COMMON_GFSELECT		0x08
#define COMMON_GF		0x0c
#define COMMON_STATUS		0x14
#define COMMON_Q_SELECT		0x16
#define COMMON_Q_SIZE		0x18
#define COMMON_Q_ENABLE		0x1c
#define COMMON_Q_DESCLO		0x20
#define COMMON_Q_DESCHI		0x24
#define COMMON_Q_AVAILLO	0x28
#define COMMON_Q_AVAILHI	0x2c
#define COMMON_Q_USEDLO		0x30
#define COMMON_Q_USEDHI		0x34

#define CAP_VNDR		0x09
#define CFG_COMMON		1
#define CFG_NOTIFY		2

#define S_ACK			1
#define S_DRIVER		2
#define S_DRIVER_OK		4
#define S_FEATURES_OK		8
#define MODERN_QUEUE_SIZE	16

void kt_kick_loop(uint64_t n, uint16_t port, uintptr_t mmio, int pio);
void kt_kick_loop32(uint64_t n, uint16_t port, uintptr_t mmio, int pio);
void kt_empty_loop(uint64_t n);
void kt_triple_fault(void) __attribute__((noreturn));
void kick_main(void);

/*
 * kvmtool's legacy virtio-blk queue is 256 entries at a 4 KiB alignment:
 * descriptors 4 KiB, avail ring, used ring on the third page. 4 pages.
 */
static uint8_t ring[4 * 4096] __attribute__((aligned(4096)));

/* ---- console: kvmtool's 8250 flushes every THR write to the terminal ---- */

static void putc_(char c)
{
	if (c == '\n')
		outb(COM1, '\r');
	outb(COM1, c);
}

static void puts_(const char *s)
{
	while (*s)
		putc_(*s++);
}

static void putu(uint64_t v)
{
	char buf[21];
	int i = 20;

	buf[i] = 0;
	do {
		buf[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	puts_(buf + i);
}

static void puthex(uint64_t v)
{
	char buf[17];
	int i = 16;

	buf[i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	puts_("0x");
	puts_(buf + i);
}

/* u/100 as "X.XX", the way kick.c prints it. */
static void put_cents(uint64_t t, uint64_t n)
{
	uint64_t c = t * 100 / n;

	putu(t / n);
	putc_('.');
	putc_('0' + (c % 100) / 10);
	putc_('0' + c % 10);
}

/* ---- the end ---- */

static void __attribute__((noreturn)) end_vm(void)
{
	uint64_t t = rdtsc();

	outb(0x64, 0xfe);	/* i8042 reset: kvmtool's kvm__reboot() */
	while (rdtsc() - t < 500000000ULL)
		asm volatile("pause");
	kt_triple_fault();
}

/* ---- time ---- */

static uint64_t tsc_khz, tsc_base;

/* PIT channel 0's current count: latch, then low and high byte. */
static uint16_t pit0_read(uint64_t *tsc)
{
	uint8_t lo, hi;

	outb(0x43, 0x00);	/* counter latch, channel 0 */
	*tsc = rdtsc();
	lo = inb(0x40);
	hi = inb(0x40);
	return lo | hi << 8;
}

/*
 * Channel 0 in mode 0 with a count of 0 (65536) counts down from the moment
 * it is loaded and keeps wrapping through 0xffff: sample it (far more often
 * than every 55 ms) and add up the ticks gone by until CAL_TICKS have
 * passed, reading the TSC at the first and the last latch. KVM's in-kernel
 * PIT derives the count from the host clock at each latch. The one IRQ0
 * this raises stays pending: the guest runs with interrupts off.
 */
static void clock_init(void)
{
	uint64_t t0, t1, ticks = 0, limit = 20000000000ULL;
	uint16_t prev, cur;

	outb(0x43, 0x30);	/* channel 0, lobyte/hibyte, mode 0, binary */
	outb(0x40, 0);
	outb(0x40, 0);
	prev = pit0_read(&t0);
	do {
		cur = pit0_read(&t1);
		ticks += (uint16_t)(prev - cur);
		prev = cur;
		if (t1 - t0 > limit) {
			puts_("kick_kvmtool: PIT channel 0 does not count\n");
			end_vm();
		}
	} while (ticks < CAL_TICKS);
	tsc_khz = (t1 - t0) * PIT_HZ / (ticks * 1000);
	tsc_base = rdtsc();
}

static uint64_t now_us(void)
{
	return (rdtsc() - tsc_base) * 1000 / tsc_khz;
}

/* ---- PCI ---- */

static uint32_t pci_read32(unsigned int slot, unsigned int off)
{
	outl(0xcf8, 0x80000000u | slot << 11 | (off & 0xfc));
	return inl(0xcfc);
}

static uint8_t pci_read8(unsigned int slot, unsigned int off)
{
	return pci_read32(slot, off) >> 8 * (off & 3);
}

static uintptr_t pci_bar(unsigned int slot, unsigned int bar)
{
	uint32_t v = pci_read32(slot, 0x10 + 4 * bar);

	return (v & 1) ? (v & 0xfffc) : (v & 0xfffffff0);
}

/* ---- virtio ---- */

static uint16_t legacy_setup(unsigned int slot)
{
	uint16_t io = pci_bar(slot, 0);

	outb(io + LEGACY_STATUS, 0);
	outb(io + LEGACY_STATUS, S_ACK | S_DRIVER);
	outw(io + LEGACY_QUEUE_SEL, 0);
	outl(io + LEGACY_PFN, (uintptr_t)ring >> 12);
	outb(io + LEGACY_STATUS, S_ACK | S_DRIVER | S_DRIVER_OK);
	return io;
}

/* Returns the notify address (BAR + offset) of queue 0; 0 on failure. */
static uintptr_t modern_setup(unsigned int slot)
{
	uintptr_t common = 0, notify = 0, r = (uintptr_t)ring;
	unsigned int cap = pci_read8(slot, 0x34);

	for (int guard = 0; cap && guard < 48; guard++) {
		if (pci_read8(slot, cap) == CAP_VNDR) {
			uint8_t type = pci_read8(slot, cap + 3);
			uint8_t bar = pci_read8(slot, cap + 4);
			uint32_t off = pci_read32(slot, cap + 8);

			if (type == CFG_COMMON && !common)
				common = pci_bar(slot, bar) + off;
			else if (type == CFG_NOTIFY && !notify)
				notify = pci_bar(slot, bar) + off;
		}
		cap = pci_read8(slot, cap + 1);
	}
	if (!common || !notify)
		return 0;
	/* Queue 0's notify_off times the multiplier: kvmtool's is 0. */
	mmio_write8(common + COMMON_STATUS, 0);
	mmio_write8(common + COMMON_STATUS, S_ACK | S_DRIVER);
	mmio_write32(common + COMMON_GFSELECT, 1);
	mmio_write32(common + COMMON_GF, 1);		/* VIRTIO_F_VERSION_1 */
	mmio_write8(common + COMMON_STATUS, S_ACK | S_DRIVER | S_FEATURES_OK);
	mmio_write16(common + COMMON_Q_SELECT, 0);
	mmio_write16(common + COMMON_Q_SIZE, MODERN_QUEUE_SIZE);
	mmio_write32(common + COMMON_Q_DESCLO, r);
	mmio_write32(common + COMMON_Q_DESCHI, 0);
	mmio_write32(common + COMMON_Q_AVAILLO, r + 16 * MODERN_QUEUE_SIZE);
	mmio_write32(common + COMMON_Q_AVAILHI, 0);
	mmio_write32(common + COMMON_Q_USEDLO, r + 4096);
	mmio_write32(common + COMMON_Q_USEDHI, 0);
	mmio_write16(common + COMMON_Q_ENABLE, 1);
	mmio_write8(common + COMMON_STATUS,
	   S_ACK | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK);
	return notify;
}

void kick_main(void)
{
	uint64_t kicks = (KICKS + UNROLL - 1) / UNROLL * UNROLL;
	uint64_t t0, t_kick, t_loop;
	unsigned int slot, dev = 0;
	uint16_t port = 0;
	uintptr_t mmio = 0;
	int pio;

	for (slot = 0; slot < 32 && !dev; slot++) {
		uint32_t id = pci_read32(slot, 0);

		if ((id & 0xffff) == VIRTIO_VENDOR &&
		    ((id >> 16) == VIRTIO_BLK_LEGACY ||
		     (id >> 16) == VIRTIO_BLK_MODERN))
			dev = id >> 16;
	}
	slot--;
	if (!dev) {
		puts_("kick_kvmtool: no virtio-blk PCI function (use -d IMG)\n");
		end_vm();
	}
	if (dev == VIRTIO_BLK_LEGACY) {
		port = legacy_setup(slot) + LEGACY_NOTIFY;
		pio = 1;
	} else {
		mmio = modern_setup(slot);
		if (!mmio) {
			puts_("kick_kvmtool: no virtio capabilities\n");
			end_vm();
		}
		pio = NOTIFY_PIO;
		/* kvmtool: the same doorbell offset in the I/O BAR. */
		port = pci_bar(slot, 0) + (mmio - pci_bar(slot, 1));
	}
	clock_init();

	puts_("kick_kvmtool: virtio-blk ");
	puts_(dev == VIRTIO_BLK_LEGACY ? "legacy" : "modern");
	puts_(" at 00:");
	putu(slot);
	puts_(".0, notify ");
	if (pio) {
		puts_(NOTIFY_EXIT ? "outl port " : "outw port ");
		puthex(port);
	} else {
		puts_(NOTIFY_EXIT ? "movl mmio " : "movw mmio ");
		puthex(mmio);
	}
	puts_(NOTIFY_EXIT ? " (exits)" : " (ioeventfd)");
	puts_(", tsc ");
	putu(tsc_khz);
	puts_(" kHz (PIT)\n");

	t0 = now_us();
	if (NOTIFY_EXIT)
		kt_kick_loop32(kicks, port, mmio, pio);
	else
		kt_kick_loop(kicks, port, mmio, pio);
	t_kick = now_us() - t0;
	t0 = now_us();
	kt_empty_loop(kicks);
	t_loop = now_us() - t0;

	puts_("kick: ");
	putu(kicks);
	puts_(" kicks, ");
	putu(t_kick);
	puts_(" us, ");
	put_cents(t_kick, kicks);
	puts_(" us/kick, loop ");
	put_cents(t_loop, kicks);
	puts_(" us/iteration\n");
	end_vm();
}
