// SPDX-License-Identifier: GPL-2.0
/*
 * reqbench.elf: what serving one virtio-blk request costs. A minimal
 * polling driver keeps qd 4 KiB reads (random 4 KiB blocks) in flight
 * until `requests` have completed, refilling each slot as its completion
 * shows up in the used ring. Interrupts are suppressed (NO_INTERRUPT)
 * unless irq=1, kicks go out only when the device asks for them, and no
 * per-request bookkeeping beyond the ring: on a software KVM every guest
 * instruction costs about a microsecond, so the loop is kept short.
 *
 *   transport=mmio|pci|legacy  (default mmio)
 *   qd=N                       requests in flight, 1-64 (default 1)
 *   requests=N                 total (default 20000)
 *   irq=1                      let the device interrupt (nobody listens)
 *
 * Prints "reqbench: N requests qd Q in T us, K kicks, E errors" and exits
 * with the failure count; tests/bench/request_bench.py reads it.
 */
#include "virtio_pci.h"

#define BLOCK		4096
#define MAX_QD		64

static struct vio_dev dev;
static struct vio_queue vq;

static bool find(const char *t)
{
	if (!strcmp(t, "pci") || !strcmp(t, "legacy"))
		return vio_pci_find(&dev, !strcmp(t, "legacy"));
	if (strcmp(t, "mmio"))
		return false;
	return vio_find(&dev, 1) == 1;
}

static inline uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

KIT_TEST(reqbench)
{
	unsigned int qd = kit_cmdline_u64("qd", 1), k;
	uint32_t total = kit_cmdline_u64("requests", 20000);
	uint32_t submitted = 0, done = 0, errors = 0, clock_mark = 0;
	struct virtio_blk_outhdr *hdr;
	volatile uint8_t *status;
	uint64_t blocks, rnd = 0x9e3779b97f4a7c15ULL, t0, t1;
	uint16_t used_idx, mask;
	uint8_t *data;
	char t[16] = "mmio";

	kit_cmdline_get("transport", t, sizeof(t));
	if (!kit_check(qd >= 1 && qd <= MAX_QD, "qd=%u: 1 to %u", qd, MAX_QD) ||
	    !kit_check(find(t), "no virtio-blk on transport %s", t) ||
	    !kit_check(dev.device_id == VIRTIO_ID_BLOCK, "device %u is not blk",
		       dev.device_id) ||
	    !kit_check(!vio_negotiate(&dev, 0), "feature negotiation") ||
	    !kit_check(!vio_queue_setup(&vq, &dev, 0, 256), "queue setup") ||
	    !kit_check(vq.size >= 3 * qd, "queue of %u for qd %u", vq.size, qd))
		kit_finish();
	blocks = vio_config_read64(&dev, 0) / (BLOCK / VIO_BLK_SECTOR);
	hdr = kit_zalloc(qd * sizeof(*hdr));
	status = kit_zalloc(qd);
	data = kit_malloc((qd + 1) * BLOCK);
	if (!kit_check(blocks && hdr && status && data, "capacity or heap"))
		kit_finish();
	data = (uint8_t *)(((uintptr_t)data + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1));

	/* one fixed 3-descriptor chain per slot, head 3k: only hdr changes */
	for (k = 0; k < qd; k++) {
		vio_raw_desc(&vq, 3 * k, (uintptr_t)&hdr[k], sizeof(*hdr),
			     VRING_DESC_F_NEXT, 3 * k + 1);
		vio_raw_desc(&vq, 3 * k + 1, (uintptr_t)data + k * BLOCK, BLOCK,
			     VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3 * k + 2);
		vio_raw_desc(&vq, 3 * k + 2, (uintptr_t)&status[k], 1,
			     VRING_DESC_F_WRITE, 0);
		hdr[k].type = VIRTIO_BLK_T_IN;
	}
	if (!kit_cmdline_u64("irq", 0))
		vq.avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	vio_driver_ok(&dev);
	mask = vq.size - 1;

	t0 = kit_now_us();
	for (k = 0; k < qd && submitted < total; k++, submitted++) {
		hdr[k].sector = next_rand(&rnd) % blocks * (BLOCK / VIO_BLK_SECTOR);
		vio_raw_publish(&vq, 3 * k, 1);
	}
	vio_kick(&vq);
	while (done < total) {
		used_idx = *(volatile uint16_t *)&vq.used->idx;
		if (used_idx == vq.last_used) {
			cpu_relax();
			continue;
		}
		/* x86 keeps loads in order: the elements after the index */
		barrier();
		do {
			uint32_t head = vq.used->ring[vq.last_used++ & mask].id;

			k = head / 3;
			errors += status[k] != VIRTIO_BLK_S_OK;
			done++;
			if (submitted < total) {
				hdr[k].sector = next_rand(&rnd) % blocks *
						(BLOCK / VIO_BLK_SECTOR);
				vio_raw_publish(&vq, head, 1);
				submitted++;
			}
		} while (vq.last_used != used_idx);
		vio_kick(&vq);
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
	kit_finish();
}
