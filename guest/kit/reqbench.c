// SPDX-License-Identifier: GPL-2.0
/*
 * reqbench.elf: what serving one virtio-blk request costs. A minimal
 * polling driver keeps qd 4 KiB reads (random 4 KiB blocks) in flight on
 * each disk until `requests` have completed in all, refilling each slot
 * as its completion shows up in the used ring. Interrupts are suppressed
 * (NO_INTERRUPT) unless irq=1, kicks go out only when the device asks for
 * them (VRING_USED_F_NO_NOTIFY, or avail_event with event_idx=1, as
 * Linux's driver does), and no per-request bookkeeping beyond the ring:
 * on a software KVM every guest instruction costs about a microsecond, so
 * the loop is kept short.
 *
 *   transport=mmio|pci|legacy  (default mmio)
 *   disks=N                    drive the first N virtio-mmio disks, 1-4
 *   qd=N                       requests in flight per disk, 1-64 (default 1)
 *   requests=N                 total (default 20000)
 *   irq=1                      ask for an interrupt at the next completion
 *                              after each reap, as Linux re-enables its
 *                              callback (nobody listens: the count is what
 *                              matters)
 *   event_idx=1                negotiate VIRTIO_F_EVENT_IDX
 *   verify=1                   check that each 4 KiB block read starts
 *                              with its block number (a 64-bit word), as
 *                              the host test wrote it
 *   idle_ms=N                  then do no I/O for N ms (the vCPU waits
 *                              on the PM timer) before exiting
 *
 * Prints "reqbench: N requests qd Q in T us, K kicks, E errors" and exits
 * with the failure count; tests/bench/request_bench.py reads it.
 */
#include "virtio_pci.h"

#define BLOCK		4096
#define MAX_QD		64
#define MAX_DISKS	4

struct disk {
	struct vio_dev dev;
	struct vio_queue vq;
	struct virtio_blk_outhdr *hdr;
	volatile uint8_t *status;
	uint8_t *data;
	uint64_t blocks;
};

static struct disk disks[MAX_DISKS];
static bool want_irq;

static bool find(const char *t, unsigned int n)
{
	struct vio_dev devs[MAX_DISKS];
	unsigned int i;

	if (!strcmp(t, "pci") || !strcmp(t, "legacy"))
		return n == 1 && vio_pci_find(&disks[0].dev,
					      !strcmp(t, "legacy"));
	if (strcmp(t, "mmio") || vio_find(devs, MAX_DISKS) < n)
		return false;
	for (i = 0; i < n; i++)
		disks[i].dev = devs[i];
	return true;
}

static inline uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* One fixed 3-descriptor chain per slot, head 3k: only hdr changes. */
static bool disk_setup(struct disk *d, unsigned int qd, uint64_t features)
{
	unsigned int k;

	if (!kit_check(d->dev.device_id == VIRTIO_ID_BLOCK, "device %u is not blk",
		       d->dev.device_id) ||
	    !kit_check(!vio_negotiate(&d->dev, features), "feature negotiation") ||
	    !kit_check(!vio_queue_setup(&d->vq, &d->dev, 0, 256), "queue setup") ||
	    !kit_check(d->vq.size >= 3 * qd, "queue of %u for qd %u",
		       d->vq.size, qd))
		return false;
	d->blocks = vio_config_read64(&d->dev, 0) / (BLOCK / VIO_BLK_SECTOR);
	d->hdr = kit_zalloc(qd * sizeof(*d->hdr));
	d->status = kit_zalloc(qd);
	d->data = kit_malloc((qd + 1) * BLOCK);
	if (!kit_check(d->blocks && d->hdr && d->status && d->data,
		       "capacity or heap"))
		return false;
	d->data = (uint8_t *)(((uintptr_t)d->data + BLOCK - 1) &
			      ~(uintptr_t)(BLOCK - 1));
	for (k = 0; k < qd; k++) {
		vio_raw_desc(&d->vq, 3 * k, (uintptr_t)&d->hdr[k],
			     sizeof(*d->hdr), VRING_DESC_F_NEXT, 3 * k + 1);
		vio_raw_desc(&d->vq, 3 * k + 1, (uintptr_t)d->data + k * BLOCK,
			     BLOCK, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE,
			     3 * k + 2);
		vio_raw_desc(&d->vq, 3 * k + 2, (uintptr_t)&d->status[k], 1,
			     VRING_DESC_F_WRITE, 0);
		d->hdr[k].type = VIRTIO_BLK_T_IN;
	}
	vio_want_interrupt(&d->vq, want_irq);
	vio_driver_ok(&d->dev);
	return true;
}

static void disk_submit(struct disk *d, unsigned int k, uint64_t *rnd)
{
	d->hdr[k].sector = next_rand(rnd) % d->blocks * (BLOCK / VIO_BLK_SECTOR);
	vio_raw_publish(&d->vq, 3 * k, 1);
}

/* Slot k's request ended: did it succeed, with the right block? */
static bool disk_ok(struct disk *d, unsigned int k, bool verify)
{
	if (d->status[k] != VIRTIO_BLK_S_OK)
		return false;
	return !verify || *(volatile uint64_t *)(d->data + k * BLOCK) ==
			  d->hdr[k].sector / (BLOCK / VIO_BLK_SECTOR);
}

/* Reap what came back on d, refilling while requests are left. */
static uint32_t disk_reap(struct disk *d, uint32_t *submitted, uint32_t total,
			  uint32_t *errors, bool verify, uint64_t *rnd)
{
	uint16_t used_idx = *(volatile uint16_t *)&d->vq.used->idx;
	uint16_t mask = d->vq.size - 1;
	uint32_t done = 0;

	if (used_idx == d->vq.last_used)
		return 0;
	/* x86 keeps loads in order: the elements after the index */
	barrier();
	do {
		uint32_t head = d->vq.used->ring[d->vq.last_used++ & mask].id;
		unsigned int k = head / 3;

		*errors += !disk_ok(d, k, verify);
		done++;
		if (*submitted < total) {
			disk_submit(d, k, rnd);
			++*submitted;
		}
	} while (d->vq.last_used != used_idx);
	vio_kick(&d->vq);
	if (want_irq)
		vio_want_interrupt(&d->vq, true);
	return done;
}

KIT_TEST(reqbench)
{
	unsigned int qd = kit_cmdline_u64("qd", 1), n = kit_cmdline_u64("disks", 1);
	uint32_t total = kit_cmdline_u64("requests", 20000);
	uint32_t submitted = 0, done = 0, errors = 0, clock_mark = 0;
	uint64_t features = kit_cmdline_u64("event_idx", 0) ?
			    1ULL << VIRTIO_RING_F_EVENT_IDX : 0;
	bool verify = kit_cmdline_u64("verify", 0);
	uint64_t rnd = 0x9e3779b97f4a7c15ULL, t0, t1;
	unsigned int i, k;
	char t[16] = "mmio";

	kit_cmdline_get("transport", t, sizeof(t));
	want_irq = kit_cmdline_u64("irq", 0);
	if (!kit_check(qd >= 1 && qd <= MAX_QD, "qd=%u: 1 to %u", qd, MAX_QD) ||
	    !kit_check(n >= 1 && n <= MAX_DISKS, "disks=%u: 1 to %u", n,
		       MAX_DISKS) ||
	    !kit_check(find(t, n), "no %u virtio-blk on transport %s", n, t))
		kit_finish();
	for (i = 0; i < n; i++)
		if (!disk_setup(&disks[i], qd, features))
			kit_finish();

	t0 = kit_now_us();
	for (i = 0; i < n; i++) {
		for (k = 0; k < qd && submitted < total; k++, submitted++)
			disk_submit(&disks[i], k, &rnd);
		vio_kick(&disks[i].vq);
	}
	while (done < total) {
		uint32_t got = 0;

		for (i = 0; i < n; i++)
			got += disk_reap(&disks[i], &submitted, total, &errors,
					 verify, &rnd);
		if (!got) {
			cpu_relax();
			continue;
		}
		done += got;
		/*
		 * The PM timer wraps every 4.7 s and kit_now_us() only sees
		 * wraps between its calls: look at it now and then.
		 */
		if (done - clock_mark >= 256) {
			kit_now_us();
			clock_mark = done;
		}
	}
	t1 = kit_now_us();

	kit_check(!errors, "%u requests failed", errors);
	kit_printf("reqbench: %u requests qd %u in %lu us, %lu kicks, %u errors\n",
		   done, qd, t1 - t0, vio_kicks, errors);
	if (kit_cmdline_u64("idle_ms", 0)) {
		kit_printf("reqbench: idle for %lu ms\n",
			   kit_cmdline_u64("idle_ms", 0));
		kit_udelay(kit_cmdline_u64("idle_ms", 0) * 1000);
	}
	kit_finish();
}
