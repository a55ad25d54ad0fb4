// SPDX-License-Identifier: GPL-2.0
/*
 * hostile.elf: a virtio-blk driver that breaks one rule per run
 * (case=NAME), to show that lkvm survives a malicious guest. For each case
 * the guest checks what the device did (NEEDS_RESET in Status, or the
 * request failed with an error status), then resets the device and does
 * an ordinary read to prove the device recovered.
 *
 * The rings are written by hand here (vio_raw_*): the library would not
 * build these chains.
 */
#include "virtio.h"

#define QSIZE		32
#define VEC_CONFIG	0x50	/* the device's IOAPIC pin, for NEEDS_RESET */
#define SECTOR		VIO_BLK_SECTOR
/*
 * How long an answer may take: every wait is for something that must
 * happen, so the bound costs nothing when it does, and an ASan build in a
 * nested TCG L1 once took longer than 1 s (and 100 ms for the ISR bit).
 */
#define WAIT_US		3000000

/* What a case allows the device to answer. */
#define ALLOW_RESET	(1u << 0)	/* NEEDS_RESET */
#define ALLOW_IOERR	(1u << 1)
#define ALLOW_UNSUPP	(1u << 2)
#define ALLOW_OK	(1u << 3)
#define ALLOW_NOSTATUS	(1u << 4)	/* used, len 0, status untouched */

static struct vio_dev dev;
static struct vio_queue vq;
static struct virtio_blk_outhdr *hdr;
static volatile uint8_t *status;
static uint8_t *data;
static uint64_t ram_end;

static bool negotiate(uint64_t features)
{
	return kit_check(!vio_negotiate(&dev, features),
			 "feature negotiation");
}

static bool bring_up(uint64_t features, unsigned int qsize)
{
	if (!negotiate(features))
		return false;
	if (!kit_check(!vio_queue_setup(&vq, &dev, 0, qsize), "queue setup"))
		return false;
	vio_driver_ok(&dev);
	return true;
}

/* A well-formed read of sector 0 in descriptors 0, 1, 2. */
static void std_chain(void)
{
	hdr->type = VIRTIO_BLK_T_IN;
	hdr->ioprio = 0;
	hdr->sector = 0;
	*status = 0xff;
	vio_raw_desc(&vq, 0, (uintptr_t)hdr, sizeof(*hdr), VRING_DESC_F_NEXT, 1);
	vio_raw_desc(&vq, 1, (uintptr_t)data, SECTOR,
		     VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	vio_raw_desc(&vq, 2, (uintptr_t)status, 1, VRING_DESC_F_WRITE, 0);
}

static void submit(uint16_t head, uint16_t delta)
{
	vio_raw_submit(&vq, head, delta);
}

/*
 * The NEEDS_RESET notification must also reach the IOAPIC pin: with IF=0
 * its vector waits in the LAPIC IRR. No completion comes before it in the
 * cases that end in NEEDS_RESET, so the vector is the config interrupt's.
 */
static void check_irq(const char *what)
{
	kit_check(vio_irq_wait(VEC_CONFIG, WAIT_US),
		  "%s: no interrupt on IOAPIC pin %u", what, dev.gsi);
}

/*
 * 2.1.2: a device that sets NEEDS_RESET should send a configuration change
 * notification. lkvm sets the Status bit first and the ISR bit a moment
 * later, so a polling driver may see one before the other: wait a little.
 */
static uint32_t wait_config_isr(void)
{
	uint64_t start = kit_now_us();
	uint32_t isr;

	while (!((isr = vio_isr(&dev)) & VIO_INT_CONFIG) &&
	       kit_now_us() - start < WAIT_US)
		kit_udelay(200);
	return isr;
}

/* Waits for the device's answer and checks it is one the case allows. */
static void expect(const char *what, unsigned int allowed)
{
	uint32_t id = 0, len = 0, isr;
	enum vio_wait w = vio_wait_used(&vq, WAIT_US, true, &id, &len);
	unsigned int got;
	char buf[64];

	switch (w) {
	case VIO_WAIT_NEEDS_RESET:
		got = ALLOW_RESET;
		kit_snprintf(buf, sizeof(buf), "set NEEDS_RESET");
		isr = wait_config_isr();
		check_irq(what);
		kit_check(isr & VIO_INT_CONFIG,
			  "%s: NEEDS_RESET without a config interrupt (ISR %#x)",
			  what, isr);
		break;
	case VIO_WAIT_USED:
		if (*status == 0xff && !len) {
			got = ALLOW_NOSTATUS;
			kit_snprintf(buf, sizeof(buf),
				     "returned it unanswered (len 0)");
		} else {
			got = *status == VIRTIO_BLK_S_OK ? ALLOW_OK :
			      *status == VIRTIO_BLK_S_IOERR ? ALLOW_IOERR :
			      *status == VIRTIO_BLK_S_UNSUPP ? ALLOW_UNSUPP : 0;
			kit_snprintf(buf, sizeof(buf),
				     "completed it: status %u, len %u",
				     *status, len);
		}
		break;
	default:
		got = 0;
		kit_snprintf(buf, sizeof(buf),
			     "neither completed it nor set NEEDS_RESET in %u s",
			     WAIT_US / 1000000);
		break;
	}
	kit_printf("%s: the device %s\n", what, buf);
	kit_check(got & allowed, "%s: unexpected answer: the device %s", what,
		  buf);
}

/* Waits for NEEDS_RESET without a request (ring setup errors). */
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
	kit_check(wait_config_isr() & VIO_INT_CONFIG,
		  "%s: NEEDS_RESET without a config interrupt", what);
	check_irq(what);
}

/* ---- descriptor cases ---- */

static void case_desc_past_ram(void)
{
	/* straddles the last byte of RAM */
	std_chain();
	vq.desc[1].addr = ram_end - 256;
	submit(0, 1);
	expect("buffer across the end of RAM", ALLOW_RESET | ALLOW_IOERR);
}

static void case_desc_hole(void)
{
	std_chain();
	vq.desc[1].addr = VIO_MMIO_BASE;	/* the device's own registers */
	submit(0, 1);
	expect("buffer in the MMIO hole", ALLOW_RESET | ALLOW_IOERR);
}

static void case_desc_high(void)
{
	std_chain();
	vq.desc[1].addr = 1ULL << 40;
	submit(0, 1);
	expect("buffer at 1 TiB", ALLOW_RESET | ALLOW_IOERR);
}

static void case_addr_overflow(void)
{
	std_chain();
	vq.desc[1].addr = ~0ULL - 0xfff;
	vq.desc[1].len = 0x2000;
	submit(0, 1);
	expect("addr + len wrapping past 2^64", ALLOW_RESET | ALLOW_IOERR);
}

static void case_loop(void)
{
	std_chain();
	vq.desc[1].next = 2;
	vq.desc[2].flags |= VRING_DESC_F_NEXT;
	vq.desc[2].next = 1;
	submit(0, 1);
	expect("descriptors 1 and 2 pointing at each other", ALLOW_RESET);
}

static void case_selfloop(void)
{
	std_chain();
	vq.desc[1].next = 1;
	submit(0, 1);
	expect("a descriptor chained to itself", ALLOW_RESET);
}

static void case_head_oob(void)
{
	std_chain();
	submit(QSIZE + 5, 1);
	expect("avail head past the queue size", ALLOW_RESET);
}

static void case_next_oob(void)
{
	std_chain();
	vq.desc[1].next = QSIZE + 3;
	submit(0, 1);
	expect("next index past the queue size", ALLOW_RESET);
}

static void case_order(void)
{
	/* hdr, data(W), a readable one after it, status(W) */
	std_chain();
	vio_raw_desc(&vq, 2, (uintptr_t)data + SECTOR, 16, VRING_DESC_F_NEXT, 3);
	vio_raw_desc(&vq, 3, (uintptr_t)status, 1, VRING_DESC_F_WRITE, 0);
	submit(0, 1);
	expect("readable descriptor after a writable one",
	       ALLOW_RESET | ALLOW_IOERR);
}

/* An indirect table with hdr, data, status; desc[0] points at it. */
static struct vring_desc *indirect_table(unsigned int extra)
{
	struct vring_desc *t = kit_zalloc(16 * (3 + extra));

	hdr->type = VIRTIO_BLK_T_IN;
	hdr->sector = 0;
	*status = 0xff;
	t[0] = (struct vring_desc){ (uintptr_t)hdr, sizeof(*hdr),
				    VRING_DESC_F_NEXT, 1 };
	t[1] = (struct vring_desc){ (uintptr_t)data, SECTOR,
				    VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2 };
	t[2] = (struct vring_desc){ (uintptr_t)status, 1, VRING_DESC_F_WRITE,
				    0 };
	vio_raw_desc(&vq, 0, (uintptr_t)t, 16 * 3, VRING_DESC_F_INDIRECT, 0);
	return t;
}

static void case_indirect_ok(void)
{
	/* the control: a well-formed indirect chain completes */
	indirect_table(0);
	submit(0, 1);
	expect("a well-formed indirect chain", ALLOW_OK);
}

static void case_nested_indirect(void)
{
	struct vring_desc *inner = kit_zalloc(16 * 3);
	struct vring_desc *t = indirect_table(0);

	inner[0] = t[1];
	inner[0].flags &= ~VRING_DESC_F_NEXT;
	t[1] = (struct vring_desc){ (uintptr_t)inner, 16,
				    VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT,
				    2 };
	submit(0, 1);
	expect("an indirect table inside an indirect table",
	       ALLOW_RESET | ALLOW_IOERR);
}

static void case_indirect_badlen(void)
{
	indirect_table(0);
	vq.desc[0].len = 40;	/* two and a half descriptors */
	submit(0, 1);
	expect("indirect table length not a multiple of 16", ALLOW_RESET);
}

static void case_indirect_next(void)
{
	/* 2.7.5.3.1: INDIRECT and NEXT together are forbidden */
	indirect_table(0);
	vq.desc[0].flags |= VRING_DESC_F_NEXT;
	vq.desc[0].next = 1;
	vio_raw_desc(&vq, 1, (uintptr_t)data, 16, 0, 0);
	submit(0, 1);
	expect("indirect descriptor with NEXT", ALLOW_RESET);
}

static void case_indirect_loop(void)
{
	struct vring_desc *t = indirect_table(0);

	t[1].next = 1;
	submit(0, 1);
	expect("a loop inside an indirect table", ALLOW_RESET);
}

static void case_indirect_unneg(void)
{
	/* brought up without INDIRECT_DESC: see run_case() */
	indirect_table(0);
	submit(0, 1);
	expect("indirect descriptor without INDIRECT_DESC negotiated",
	       ALLOW_RESET);
}

static void case_len_overflow(void)
{
	/* readable buffers whose total overflows 32 bits, all inside RAM */
	unsigned int i, n = 23;
	struct vring_desc *t = kit_zalloc(16 * (n + 2));
	uint64_t room = ram_end - (2u << 20);
	uint32_t big = room > 0x7fffffff ? 0x7fffffff : room;

	hdr->type = VIRTIO_BLK_T_OUT;
	hdr->sector = 0;
	*status = 0xff;
	t[0] = (struct vring_desc){ (uintptr_t)hdr, sizeof(*hdr),
				    VRING_DESC_F_NEXT, 1 };
	for (i = 1; i <= n; i++)
		t[i] = (struct vring_desc){ 1u << 20, big, VRING_DESC_F_NEXT,
					    i + 1 };
	t[n + 1] = (struct vring_desc){ (uintptr_t)status, 1,
					VRING_DESC_F_WRITE, 0 };
	vio_raw_desc(&vq, 0, (uintptr_t)t, 16 * (n + 2),
		     VRING_DESC_F_INDIRECT, 0);
	submit(0, 1);
	kit_printf("%u buffers of %u bytes\n", n, big);
	expect("chain longer than 4 GiB", ALLOW_RESET | ALLOW_IOERR);
}

static void case_avail_jump(void)
{
	std_chain();
	submit(0, QSIZE + 1);
	expect("avail index moved by more than the queue size", ALLOW_RESET);
}

static void case_avail_back(void)
{
	std_chain();
	submit(0, 0xffff);	/* avail->idx = -1 */
	expect("avail index moved backwards", ALLOW_RESET);
}

static void case_read_ro_buf(void)
{
	/* a read whose data buffer the device may not write */
	std_chain();
	vq.desc[1].flags &= ~VRING_DESC_F_WRITE;
	memset(data, 0xa5, SECTOR);
	submit(0, 1);
	expect("read into a device-readable buffer", ALLOW_RESET | ALLOW_IOERR);
	kit_check(data[0] == 0xa5 && data[SECTOR - 1] == 0xa5,
		  "the device wrote into a device-readable buffer");
}

static void case_write_wo_buf(void)
{
	/* a write whose data buffer is device-writable: nothing to write */
	std_chain();
	hdr->type = VIRTIO_BLK_T_OUT;
	submit(0, 1);
	expect("write from a device-writable buffer",
	       ALLOW_RESET | ALLOW_IOERR);
}

static void case_hdr_writable(void)
{
	/* no readable descriptor at all: the header is device-writable */
	std_chain();
	vq.desc[0].flags |= VRING_DESC_F_WRITE;
	submit(0, 1);
	expect("request header in a device-writable buffer",
	       ALLOW_RESET | ALLOW_IOERR);
}

static void case_no_status(void)
{
	/* a write request with no writable byte for the status */
	std_chain();
	hdr->type = VIRTIO_BLK_T_OUT;
	vq.desc[1].flags = 0;
	submit(0, 1);
	expect("request without a status byte",
	       ALLOW_RESET | ALLOW_NOSTATUS);
}

static void case_bad_len(void)
{
	/* 2.7.4 does not forbid it; the blk protocol wants whole sectors */
	std_chain();
	vq.desc[1].len = 100;
	submit(0, 1);
	expect("read of 100 bytes", ALLOW_IOERR | ALLOW_RESET);
}

/* ---- queue setup cases ---- */

/*
 * QueueNum must be a power of 2 no larger than QueueNumMax (4.2.2.2 and
 * 2.7); lkvm ignores other values and keeps QueueNumMax. A chain at a
 * descriptor index the bad size could not hold shows which size it used.
 */
static void case_qnum(unsigned int num, unsigned int head, unsigned int allow,
		      const char *what)
{
	uint32_t max;

	if (!negotiate(0))
		return;
	vio_write(&dev, VIRTIO_MMIO_QUEUE_SEL, 0);
	max = vio_read(&dev, VIRTIO_MMIO_QUEUE_NUM_MAX);
	vio_queue_free(&vq);
	if (!kit_check(!vio_queue_alloc(&vq, &dev, 0, max > num ? max : 512),
		       "queue alloc"))
		return;
	/* the ring as QueueNumMax: lkvm keeps it when it refuses num */
	vq.size = max;
	vio_queue_program(&vq, num);
	vio_driver_ok(&dev);
	hdr->type = VIRTIO_BLK_T_IN;
	hdr->sector = 0;
	*status = 0xff;
	vio_raw_desc(&vq, head, (uintptr_t)hdr, sizeof(*hdr),
		     VRING_DESC_F_NEXT, head + 1);
	vio_raw_desc(&vq, head + 1, (uintptr_t)data, SECTOR,
		     VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, head + 2);
	vio_raw_desc(&vq, head + 2, (uintptr_t)status, 1, VRING_DESC_F_WRITE, 0);
	submit(head, 1);
	kit_printf("QueueNumMax %u, wrote QueueNum %u, chain at %u\n", max,
		   num, head);
	expect(what, allow);
}

static void case_qnum_npot(void)
{
	/* completes only if the size stayed QueueNumMax */
	case_qnum(3, 10, ALLOW_OK, "QueueNum 3 (not a power of 2)");
}

static void case_qnum_big(void)
{
	/* index 300 exists only if the device took 512 > QueueNumMax */
	case_qnum(512, 300, ALLOW_RESET, "QueueNum 512 > QueueNumMax");
}

static void program_raw(uint64_t desc, uint64_t avail, uint64_t used)
{
	vio_write(&dev, VIRTIO_MMIO_QUEUE_SEL, 0);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_NUM, QSIZE);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)desc);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_DESC_HIGH, desc >> 32);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_AVAIL_LOW, (uint32_t)avail);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_AVAIL_HIGH, avail >> 32);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_USED_LOW, (uint32_t)used);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_USED_HIGH, used >> 32);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_READY, 1);
}

/* The queue was brought up by run_case(); start over on our own rings. */
static void ring_case(uint64_t desc, uint64_t avail, uint64_t used,
		      bool ready_after_ok, const char *what)
{
	if (!negotiate(0))
		return;
	if (ready_after_ok)
		vio_driver_ok(&dev);
	program_raw(desc, avail, used);
	if (!ready_after_ok)
		vio_driver_ok(&dev);
	expect_needs_reset(what);
}

static void case_ring_oob(void)
{
	ring_case(ram_end + 0x10000, (uintptr_t)vq.avail, (uintptr_t)vq.used,
		  false, "descriptor table outside RAM");
}

static void case_ring_straddle(void)
{
	/* the used ring's last bytes past the end of RAM */
	ring_case((uintptr_t)vq.desc, (uintptr_t)vq.avail, ram_end - 64,
		  false, "used ring across the end of RAM");
}

static void case_ring_misaligned(void)
{
	/* 2.7: the descriptor table is 16-byte aligned */
	ring_case((uintptr_t)vq.desc + 8, (uintptr_t)vq.avail,
		  (uintptr_t)vq.used, false, "descriptor table at 8 mod 16");
}

static void case_ring_late(void)
{
	/* QueueReady after DRIVER_OK takes another path in the device */
	ring_case((uintptr_t)vq.desc, 0xfffffffffff00000ULL,
		  (uintptr_t)vq.used, true,
		  "avail ring at 2^64 - 1 MiB, readied after DRIVER_OK");
}

static void case_ready_regs(void)
{
	/* queue registers are frozen while QueueReady is 1 (4.2.2.2) */
	vio_write(&dev, VIRTIO_MMIO_QUEUE_SEL, 0);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_NUM, 2);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_DESC_LOW, 0xdead0000);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0x12345);
	std_chain();
	submit(0, 1);
	expect("queue registers rewritten while ready", ALLOW_OK);
}

static void case_early_kick(void)
{
	/* 3.1.1: no buffers may be used before DRIVER_OK */
	uint32_t id, len;

	if (!negotiate(0))
		return;
	vio_queue_free(&vq);
	if (!kit_check(!vio_queue_setup(&vq, &dev, 0, QSIZE), "queue setup"))
		return;
	std_chain();
	submit(0, 1);
	kit_udelay(20000);
	kit_check(!vio_get_used(&vq, &id, &len),
		  "the device used a buffer before DRIVER_OK");
	vio_driver_ok(&dev);
	vio_notify(&vq);
	expect("kick before DRIVER_OK, then again after", ALLOW_OK);
}

static void case_reset_inflight(void)
{
	/* reset with requests queued: the device must let go of the ring */
	unsigned int i;

	std_chain();
	for (i = 0; i < 8; i++)
		vio_raw_publish(&vq, 0, 1);
	vio_notify(&vq);
	vio_set_status(&dev, 0);
	kit_check(vio_status(&dev) == 0, "Status not 0 after a reset");
	kit_printf("reset with 8 requests in flight\n");
}

/*
 * Two vCPUs: the AP keeps publishing and kicking on the rings while the
 * BSP resets and re-initialises the device under it, so every reset
 * races the device's serving of the queue. Only lkvm's survival (and
 * ASan's silence) is checked here; recover() then proves the device.
 */
struct race {
	volatile uint16_t *avail_idx;
	volatile uint16_t *avail_ring;
	uintptr_t notify;
	volatile bool stop;
	volatile unsigned int kicks;
};

static void race_ap(unsigned int idx, void *arg)
{
	struct race *r = arg;
	uint16_t i = 0;

	while (!r->stop) {
		r->avail_ring[i % QSIZE] = 0;
		*r->avail_idx = ++i;
		mmio_write32(r->notify, 0);
		r->kicks++;
	}
	r->kicks |= 1u << 31;	/* done: the BSP may reuse the rings */
}

static void case_reset_race(void)
{
	static struct race r;
	uint32_t ids[4];
	unsigned int i, rounds = kit_cmdline_u64("rounds", 40);
	uint64_t start;

	if (!kit_check(kit_madt_apic_ids(ids, ARRAY_SIZE(ids)) >= 2,
		       "reset_race needs 2 vCPUs (-c 2)"))
		return;
	std_chain();
	r = (struct race){
		.avail_idx = &vq.avail->idx,
		.avail_ring = vq.avail->ring,
		.notify = dev.base + VIRTIO_MMIO_QUEUE_NOTIFY,
	};
	if (!kit_check(!kit_ap_start(ids[1], race_ap, 1, &r, 1000000),
		       "AP did not start"))
		return;
	for (i = 0; i < rounds; i++) {
		/* the same rings each time: the AP keeps writing to them */
		vio_negotiate(&dev, 0);
		vio_queue_program(&vq, QSIZE);
		vio_driver_ok(&dev);
		kit_udelay(500);
	}
	r.stop = true;
	start = kit_now_us();
	while (!(r.kicks & (1u << 31)) && kit_now_us() - start < 1000000)
		cpu_relax();
	kit_check(r.kicks & (1u << 31), "AP did not stop");
	kit_printf("%u resets against %u kicks from the AP\n", rounds,
		   r.kicks & ~(1u << 31));
}

/*
 * Break the device, reset it, and again: each round is one more
 * NEEDS_RESET for lkvm to report. The host test counts its warnings.
 */
static void case_break_loop(void)
{
	unsigned int i, rounds = kit_cmdline_u64("rounds", 10), broken = 0;
	uint32_t id, len;

	for (i = 0; i < rounds; i++) {
		if (!negotiate(0))
			return;
		vq.avail_idx = vq.kicked_idx = vq.last_used = 0;
		vq.avail->idx = 0;
		vio_queue_program(&vq, QSIZE);
		vio_driver_ok(&dev);
		std_chain();
		submit(0, QSIZE + 1);
		broken += vio_wait_used(&vq, WAIT_US, true, &id, &len) ==
			  VIO_WAIT_NEEDS_RESET;
	}
	kit_check(broken == rounds, "NEEDS_RESET in %u of %u rounds", broken,
		  rounds);
	kit_printf("%u rounds of break and reset\n", rounds);
}

/* ---- register and config space cases ---- */

static void case_config_oob(void)
{
	uintptr_t cfg = dev.base + VIRTIO_MMIO_CONFIG;
	uint32_t nonzero = 0, off;
	uint64_t cap = vio_config_read64(&dev, 0);

	/* the config space is sizeof(struct virtio_blk_config) bytes */
	for (off = sizeof(struct virtio_blk_config);
	     off + 4 <= VIO_MMIO_SLOT_SIZE - VIRTIO_MMIO_CONFIG; off += 0x44) {
		nonzero += !!mmio_read8(cfg + off);
		nonzero += !!mmio_read16(cfg + (off & ~1u));
		nonzero += !!mmio_read32(cfg + (off & ~3u));
		mmio_write8(cfg + off, 0xa5);
		mmio_write16(cfg + (off & ~1u), 0xa5a5);
		mmio_write32(cfg + (off & ~3u), 0xa5a5a5a5);
		nonzero += !!mmio_read32(cfg + (off & ~3u));
	}
	/* across the end, and all of it read-only for virtio-blk */
	mmio_write32(cfg + sizeof(struct virtio_blk_config) - 2, 0xa5a5a5a5);
	mmio_write32(cfg, 0xa5a5a5a5);
	mmio_write64(cfg + 8, ~0ULL);
	kit_check(!nonzero, "%u config reads past the end were not 0", nonzero);
	kit_check(vio_config_read64(&dev, 0) == cap,
		  "a config write changed capacity from %llu to %llu",
		  (unsigned long long)cap,
		  (unsigned long long)vio_config_read64(&dev, 0));
	kit_printf("config space past %zu bytes: reads 0, writes ignored\n",
		   sizeof(struct virtio_blk_config));
	std_chain();
	submit(0, 1);
	expect("a read after the config writes", ALLOW_OK);
}

static void case_regs(void)
{
	uint32_t v;

	/* non-32-bit register accesses (4.2.2.2: the driver MUST NOT) */
	mmio_write8(dev.base + VIRTIO_MMIO_STATUS, 0);
	mmio_write16(dev.base + VIRTIO_MMIO_QUEUE_SEL, 7);
	v = mmio_read8(dev.base + VIRTIO_MMIO_MAGIC_VALUE);
	kit_printf("byte read of MagicValue: %#x\n", v);
	kit_check(vio_status(&dev) & VIRTIO_CONFIG_S_DRIVER_OK,
		  "a byte write to Status reset the device");
	/* read-only registers, unknown ones, shared memory ones */
	vio_write(&dev, VIRTIO_MMIO_MAGIC_VALUE, 0);
	vio_write(&dev, VIRTIO_MMIO_DEVICE_ID, 0);
	vio_write(&dev, 0x0d0, 0xffffffff);
	kit_check(vio_read(&dev, VIRTIO_MMIO_MAGIC_VALUE) == VIO_MMIO_MAGIC,
		  "MagicValue changed");
	kit_check(vio_read(&dev, VIRTIO_MMIO_DEVICE_ID) == VIRTIO_ID_BLOCK,
		  "DeviceID changed");
	/* a queue that does not exist */
	vio_write(&dev, VIRTIO_MMIO_QUEUE_SEL, 99);
	kit_check(vio_read(&dev, VIRTIO_MMIO_QUEUE_NUM_MAX) == 0,
		  "QueueNumMax of queue 99 is not 0");
	vio_write(&dev, VIRTIO_MMIO_QUEUE_READY, 1);
	kit_check(vio_read(&dev, VIRTIO_MMIO_QUEUE_READY) == 0,
		  "queue 99 became ready");
	vio_write(&dev, VIRTIO_MMIO_QUEUE_NOTIFY, 99);
	vio_write(&dev, VIRTIO_MMIO_QUEUE_NOTIFY, 0xffffffff);
	/* feature words past the second */
	vio_write(&dev, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 7);
	kit_check(vio_read(&dev, VIRTIO_MMIO_DEVICE_FEATURES) == 0,
		  "device feature word 7 is not 0");
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 7);
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES, 0xffffffff);
	vio_isr_ack(&dev, 0xffffffff);
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "NEEDS_RESET after harmless register writes");
	vio_write(&dev, VIRTIO_MMIO_QUEUE_SEL, 0);
	std_chain();
	submit(0, 1);
	expect("a read after register garbage", ALLOW_OK);
}

static uint64_t read_width(uintptr_t a, unsigned int w)
{
	return w == 1 ? mmio_read8(a) : w == 2 ? mmio_read16(a) :
	       w == 4 ? mmio_read32(a) : mmio_read64(a);
}

static void write_width(uintptr_t a, unsigned int w, uint64_t v)
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

/*
 * Every width at every offset of the registers and the first 256 bytes of
 * config space: the complement of what it read, all ones, zero, then what
 * it read. Status, QueueReady and the ring addresses pass through 0 and
 * all ones on the way.
 */
static void case_regs_all(void)
{
	uint64_t cap = vio_config_read64(&dev, 0);
	unsigned int off, w;

	for (off = 0; off < 0x200; off++)
		for (w = 1; w <= 8; w *= 2) {
			uint64_t r = read_width(dev.base + off, w);

			write_width(dev.base + off, w, ~r);
			write_width(dev.base + off, w, ~0ULL);
			write_width(dev.base + off, w, 0);
			write_width(dev.base + off, w, r);
		}
	kit_check(vio_read(&dev, VIRTIO_MMIO_MAGIC_VALUE) == VIO_MMIO_MAGIC &&
		  vio_config_read64(&dev, 0) == cap,
		  "MagicValue or capacity changed");
	kit_printf("512 offsets x 4 widths x 4 values\n");
}

/*
 * Status with only reserved bits set, the low byte 0: the device resets,
 * and InterruptStatus with it, as with a plain 0.
 */
static void case_status_wide(void)
{
	uint32_t isr;
	uint8_t st;

	std_chain();
	submit(0, 1);
	expect("a read", ALLOW_OK);
	vio_write(&dev, VIRTIO_MMIO_STATUS, 0x100);
	st = vio_status(&dev);
	isr = vio_isr(&dev);
	kit_printf("Status write of 0x100: Status %#x, InterruptStatus %#x\n",
		   st, isr);
	kit_check(st || !isr, "the device reset and kept InterruptStatus %#x",
		  isr);
}

static void case_shm(void)
{
	uint32_t lo, hi;

	/* 4.2.2: a region that does not exist has length -1 */
	vio_write(&dev, VIRTIO_MMIO_SHM_SEL, 3);
	lo = vio_read(&dev, VIRTIO_MMIO_SHM_LEN_LOW);
	hi = vio_read(&dev, VIRTIO_MMIO_SHM_LEN_HIGH);
	kit_printf("SHMLen of region 3: %#llx\n",
		   (unsigned long long)hi << 32 | lo);
	kit_check(lo == 0xffffffff && hi == 0xffffffff,
		  "SHMLen of a missing region is %#llx, not -1",
		  (unsigned long long)hi << 32 | lo);
}

static void case_features(void)
{
	uint8_t st;

	/* without VERSION_1 a modern device must refuse FEATURES_OK */
	vio_reset(&dev);
	vio_set_status(&dev, VIRTIO_CONFIG_S_ACKNOWLEDGE |
			     VIRTIO_CONFIG_S_DRIVER);
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES, 0);
	vio_set_status(&dev, VIRTIO_CONFIG_S_ACKNOWLEDGE |
			     VIRTIO_CONFIG_S_DRIVER |
			     VIRTIO_CONFIG_S_FEATURES_OK);
	st = vio_status(&dev);
	kit_printf("no VERSION_1: Status %#x\n", st);
	kit_check(!(st & VIRTIO_CONFIG_S_FEATURES_OK),
		  "FEATURES_OK accepted without VERSION_1");

	/* a feature the device never offered */
	vio_reset(&dev);
	vio_set_status(&dev, VIRTIO_CONFIG_S_ACKNOWLEDGE |
			     VIRTIO_CONFIG_S_DRIVER);
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	vio_write(&dev, VIRTIO_MMIO_DRIVER_FEATURES,
		  1u | 1u << (50 - 32));	/* VERSION_1 and bit 50 */
	vio_set_status(&dev, VIRTIO_CONFIG_S_ACKNOWLEDGE |
			     VIRTIO_CONFIG_S_DRIVER |
			     VIRTIO_CONFIG_S_FEATURES_OK);
	st = vio_status(&dev);
	kit_printf("unoffered bit 50: Status %#x\n", st);
	kit_check(!(st & VIRTIO_CONFIG_S_FEATURES_OK),
		  "FEATURES_OK accepted with an unoffered feature");
}

struct hostile_case {
	const char *name;
	void (*fn)(void);
	bool no_indirect;		/* bring up without INDIRECT_DESC */
};

static const struct hostile_case cases[] = {
	{ "desc_past_ram", case_desc_past_ram, false },
	{ "desc_hole", case_desc_hole, false },
	{ "desc_high", case_desc_high, false },
	{ "addr_overflow", case_addr_overflow, false },
	{ "loop", case_loop, false },
	{ "selfloop", case_selfloop, false },
	{ "head_oob", case_head_oob, false },
	{ "next_oob", case_next_oob, false },
	{ "order", case_order, false },
	{ "indirect_ok", case_indirect_ok, false },
	{ "nested_indirect", case_nested_indirect, false },
	{ "indirect_badlen", case_indirect_badlen, false },
	{ "indirect_next", case_indirect_next, false },
	{ "indirect_loop", case_indirect_loop, false },
	{ "indirect_unneg", case_indirect_unneg, true },
	{ "len_overflow", case_len_overflow, false },
	{ "avail_jump", case_avail_jump, false },
	{ "avail_back", case_avail_back, false },
	{ "read_ro_buf", case_read_ro_buf, false },
	{ "write_wo_buf", case_write_wo_buf, false },
	{ "hdr_writable", case_hdr_writable, false },
	{ "no_status", case_no_status, false },
	{ "bad_len", case_bad_len, false },
	{ "qnum_npot", case_qnum_npot, false },
	{ "qnum_big", case_qnum_big, false },
	{ "ring_oob", case_ring_oob, false },
	{ "ring_straddle", case_ring_straddle, false },
	{ "ring_misaligned", case_ring_misaligned, false },
	{ "ring_late", case_ring_late, false },
	{ "ready_regs", case_ready_regs, false },
	{ "early_kick", case_early_kick, false },
	{ "reset_inflight", case_reset_inflight, false },
	{ "reset_race", case_reset_race, false },
	{ "break_loop", case_break_loop, false },
	{ "config_oob", case_config_oob, false },
	{ "regs", case_regs, false },
	{ "shm", case_shm, false },
	{ "regs_all", case_regs_all, false },
	{ "status_wide", case_status_wide, false },
	{ "features", case_features, false },
};

/* Reset, bring the device up again, and read sector 0. */
static void recover(void)
{
	uint8_t *buf = kit_malloc(SECTOR);
	uint32_t isr;
	int st;

	if (!kit_check(vio_reset(&dev), "reset after the hostile step"))
		return;
	isr = vio_isr(&dev);
	kit_check(!isr, "InterruptStatus %#x after a reset", isr);
	vio_queue_free(&vq);
	if (!bring_up(0, QSIZE))
		return;
	st = vio_blk_rw(&vq, false, 0, buf, SECTOR, false);
	kit_check(st == VIRTIO_BLK_S_OK, "read after the reset: status %d", st);
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "NEEDS_RESET after the recovery read");
	if (st == VIRTIO_BLK_S_OK)
		kit_printf("recovered: read after reset ok\n");
	kit_free(buf);
}

KIT_TEST(hostile)
{
	const struct hostile_case *c = NULL;
	char name[32] = "";
	unsigned int i;

	kit_cmdline_get("case", name, sizeof(name));
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (!strcmp(cases[i].name, name))
			c = &cases[i];
	if (!c) {
		kit_printf("cases:");
		for (i = 0; i < ARRAY_SIZE(cases); i++)
			kit_printf(" %s", cases[i].name);
		kit_printf("\n");
		kit_fail("unknown case '%s'", name);
		kit_finish();
	}
	ram_end = kit_ram_end();
	hdr = kit_malloc(sizeof(*hdr));
	status = kit_malloc(1);
	data = kit_malloc(2 * SECTOR);
	if (!kit_check(ram_end && hdr && status && data, "set-up") ||
	    !kit_check(vio_find(&dev, 1) == 1 &&
		       dev.device_id == VIRTIO_ID_BLOCK, "no virtio-blk") ||
	    !bring_up(c->no_indirect ? 0 : 1ULL << VIRTIO_RING_F_INDIRECT_DESC,
		      QSIZE))
		kit_finish();
	vio_irq_route(&dev, VEC_CONFIG);
	kit_printf("case %s (RAM ends at %#llx)\n", c->name,
		   (unsigned long long)ram_end);
	c->fn();
	recover();
	kit_finish();
}
