// SPDX-License-Identifier: GPL-2.0
/*
 * The rules of the queue registers every modern transport has (virtio
 * 4.1.4.3 and 4.2.2): the size and the three ring addresses are the
 * driver's to write only while the queue is not ready, the size only as
 * a power of two up to the device's maximum, each 64-bit address as two
 * 32-bit halves. A transport names where the registers sit in its own
 * register file (struct virtio_queue_regs); the rules are kept here once.
 */
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"

struct virtio_queue *virtio_queue_at(struct virtio_device *vdev,
				     unsigned int index)
{
	return index < vdev->nr_queues ? &vdev->queues[index] : NULL;
}

/* The ring address off names a half of (the high one: *high), or NULL. */
static uint64_t *ring_addr(const struct virtio_queue_regs *regs,
			   struct virtio_queue *q, unsigned int off, bool *high)
{
	const unsigned int low[] = { regs->desc, regs->driver, regs->device };
	uint64_t *const gpa[] = { &q->desc_gpa, &q->avail_gpa, &q->used_gpa };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(low); i++) {
		if (off == low[i] || off == low[i] + 4) {
			*high = off != low[i];
			return gpa[i];
		}
	}
	return NULL;
}

uint32_t virtio_queue_reg_read(const struct virtio_queue_regs *regs,
			       struct virtio_queue *q, unsigned int off)
{
	uint64_t *gpa;
	bool high;

	if (!q)
		return 0;
	if (off == regs->size)
		return q->size;
	gpa = ring_addr(regs, q, off, &high);
	if (!gpa)
		return 0;
	return high ? *gpa >> 32 : (uint32_t)*gpa;
}

void virtio_queue_reg_write(const struct virtio_queue_regs *regs,
			    struct virtio_queue *q, unsigned int off,
			    uint32_t val)
{
	uint64_t *gpa;
	bool high;

	if (!q || q->enabled)
		return;
	if (off == regs->size) {
		if (val && val <= q->max_size && !(val & (val - 1)))
			q->size = val;
		return;
	}
	gpa = ring_addr(regs, q, off, &high);
	if (gpa && high)
		*gpa = (*gpa & 0xffffffffULL) | (uint64_t)val << 32;
	else if (gpa)
		*gpa = (*gpa & ~0xffffffffULL) | val;
}
