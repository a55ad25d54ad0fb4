// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-balloon (virtio 1.x, 5.5) without the optional queues: inflateq
 * (0) carries arrays of 32-bit page frame numbers the guest gives up,
 * deflateq (1) those it takes back. The host sets num_pages, the target,
 * and the driver reports in `actual` what it holds.
 *
 * A page given up is dropped from lkvm's memory at once (MADV_DONTNEED on
 * the guest RAM mapping, in runs of adjacent pages), so the host gets the
 * memory back; the guest finds it zeroed if it touches it again. Every
 * frame number goes through the guest-memory API: one outside RAM is
 * counted (bad_pfns) and skipped, never acted on. Taking a page back needs
 * nothing: it faults in zeroed. DEFLATE_ON_OOM is not offered, so a Linux
 * guest's MemTotal shrinks by what it gave.
 */
#include <errno.h>
#include <linux/virtio_balloon.h>
#include <linux/virtio_ids.h>
#include <string.h>
#include <sys/mman.h>

#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/balloon.h"
#include "lkvm/vm.h"

#define BALLOON_QUEUE_SIZE	128
#define BALLOON_INFLATEQ	0
#define BALLOON_DEFLATEQ	1
#define BALLOON_PAGE		(1ULL << VIRTIO_BALLOON_PFN_SHIFT)

/*
 * Created by the main thread. Each queue is served under its lock, and
 * its counters are that queue's; target is written by whoever adjusts it
 * (the main thread) and read under config_lock, both atomically.
 */
struct virtio_balloon {
	struct virtio_device vdev;
	struct {
		uint32_t num_pages;
		uint32_t actual;
	} config;
	struct iothread *iothread;	/* NULL when on a pool's */
	bool stopped;
	uint32_t target;
	uint32_t ram_pages;
	uint64_t inflated, bad_pfns;	/* inflateq's */
	uint64_t deflated;		/* deflateq's */
};

/* A run of adjacent host pages, dropped in one madvise(). */
struct drop_run {
	uint8_t *start;
	size_t len;
};

static void drop_flush(struct drop_run *r)
{
	if (r->len && madvise(r->start, r->len, MADV_DONTNEED))
		pr_warn_ratelimited("virtio-balloon: madvise: %s",
				    strerror(errno));
	r->len = 0;
}

static void drop_page(struct drop_run *r, uint8_t *page)
{
	if (r->len && r->start + r->len == page) {
		r->len += BALLOON_PAGE;
		return;
	}
	drop_flush(r);
	r->start = page;
	r->len = BALLOON_PAGE;
}

/* Each frame number in a chain's readable part; unaligned is fine. */
static void for_each_pfn(struct virtio_balloon *b, const struct virtq_chain *c,
			 bool inflate)
{
	const struct guest_mem *mem = &b->vdev.vm->mem;
	struct drop_run run = { NULL, 0 };
	unsigned int i;

	for (i = 0; i < c->nr_out; i++) {
		const uint8_t *p = c->out[i].hva;
		uint32_t n;

		for (n = 0; n + 4 <= c->out[i].len; n += 4) {
			uint32_t pfn;
			uint8_t *page;

			memcpy(&pfn, p + n, 4);
			page = guest_mem_ptr(mem, (uint64_t)pfn <<
					     VIRTIO_BALLOON_PFN_SHIFT,
					     BALLOON_PAGE);
			if (!page) {
				b->bad_pfns += inflate;
				continue;
			}
			if (inflate) {
				drop_page(&run, page);
				b->inflated++;
			} else {
				b->deflated++;
			}
		}
	}
	drop_flush(&run);
}

static enum virtio_chain_result balloon_handle(struct virtio_queue *q,
					       const struct virtq_chain *c,
					       void *opaque, uint32_t *written)
{
	for_each_pfn(opaque, c, q->index == BALLOON_INFLATEQ);
	return VIRTIO_CHAIN_USED;
}

static void balloon_queue_kick(struct virtio_device *vdev,
			       struct virtio_queue *q)
{
	virtio_queue_serve(vdev, q, balloon_handle, vdev->priv);
}

/* Under config_lock: `actual` is the one field the driver may write. */
static void balloon_config_written(struct virtio_device *vdev,
				   unsigned int offset, unsigned int len)
{
	struct virtio_balloon *b = vdev->priv;

	b->config.num_pages = __atomic_load_n(&b->target, __ATOMIC_RELAXED);
}

static void balloon_write_stats(struct virtio_device *vdev, FILE *f)
{
	struct virtio_balloon *b = vdev->priv;

	fprintf(f, "\"target_pages\":%u,\"actual_pages\":%u,"
		"\"pages_inflated\":%llu,\"pages_deflated\":%llu,"
		"\"bad_pfns\":%llu", __atomic_load_n(&b->target, __ATOMIC_RELAXED),
		b->config.actual, (unsigned long long)b->inflated,
		(unsigned long long)b->deflated,
		(unsigned long long)b->bad_pfns);
}

static const struct virtio_device_ops balloon_ops = {
	.name = "balloon",
	.device_id = VIRTIO_ID_BALLOON,
	.queue_kick = balloon_queue_kick,
	.config_written = balloon_config_written,
	.write_stats = balloon_write_stats,
};

void virtio_balloon_adjust(struct virtio_balloon *b, int64_t delta_pages,
			   uint32_t *target, uint32_t *actual)
{
	int64_t want = (int64_t)__atomic_load_n(&b->target, __ATOMIC_RELAXED) +
		       delta_pages;
	uint32_t t = want < 0 ? 0 : MIN((uint64_t)want, (uint64_t)b->ram_pages);

	__atomic_store_n(&b->target, t, __ATOMIC_RELAXED);
	virtio_config_changed(&b->vdev, offsetof(typeof(b->config), num_pages),
			      &t, sizeof(t));
	*target = t;
	virtio_config_read(&b->vdev, offsetof(typeof(b->config), actual),
			   actual, sizeof(*actual));
}

struct virtio_balloon *virtio_balloon_create(struct vm *vm,
					     const struct virtio_device_options *opts)
{
	struct virtio_balloon *b = vm_zalloc(vm, sizeof(*b));

	if (!b)
		return NULL;
	b->ram_pages = MIN(guest_mem_total(&vm->mem) / BALLOON_PAGE,
			   (uint64_t)UINT32_MAX);
	if (virtio_device_setup(&b->vdev, vm, &balloon_ops, b, 2,
				BALLOON_QUEUE_SIZE, opts, "balloon-io",
				&b->iothread))
		goto fail;
	b->vdev.config = (uint8_t *)&b->config;
	b->vdev.config_size = sizeof(b->config);
	if (virtio_device_go(b->iothread))
		goto fail;
	return b;
fail:
	virtio_device_teardown(&b->vdev, &b->iothread, &b->stopped);
	return NULL;
}

void virtio_balloon_destroy(struct virtio_balloon *b)
{
	if (b)
		virtio_device_teardown(&b->vdev, &b->iothread, &b->stopped);
}

struct virtio_device *virtio_balloon_device(struct virtio_balloon *b)
{
	return &b->vdev;
}
