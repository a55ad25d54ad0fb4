// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-rng: one queue of device-writable buffers, filled from the
 * host's getrandom(). A buffer gets at most RNG_MAX_PER_CHAIN bytes (the
 * spec lets the device fill less than offered), so a guest that posts a
 * 4 GiB chain costs the I/O thread no more than any other request; the
 * serve loop's per-pass budget bounds the rest.
 */
#include <errno.h>
#include <linux/virtio_ids.h>
#include <sys/random.h>

#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/rng.h"
#include "lkvm/vm.h"

#define RNG_QUEUE_SIZE		64
#define RNG_MAX_PER_CHAIN	(64 * 1024)

/*
 * Created by the main thread; the queue is served (under its lock) by
 * the device's I/O thread, a pool's, or a vCPU with --no-ioeventfd.
 */
struct virtio_rng {
	struct virtio_device vdev;
	struct iothread *iothread;	/* NULL when on a pool's */
	bool stopped;
};

/* Fill buf with entropy; false if the host has none to give now. */
static bool rng_fill(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, GRND_NONBLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

static enum virtio_chain_result rng_handle(struct virtio_queue *q,
					   const struct virtq_chain *c,
					   void *opaque, uint32_t *written)
{
	uint32_t left = RNG_MAX_PER_CHAIN;
	unsigned int i;

	/* readable buffers are the driver's mistake: nothing to read there */
	for (i = 0; i < c->nr_in && left; i++) {
		uint32_t n = MIN(c->in[i].len, left);

		if (!rng_fill(c->in[i].hva, n))
			break;	/* what was filled is given */
		*written += n;
		left -= n;
	}
	return VIRTIO_CHAIN_USED;
}

static void rng_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	virtio_queue_serve(vdev, q, rng_handle, NULL);
}

static const struct virtio_device_ops rng_ops = {
	.name = "rng",
	.device_id = VIRTIO_ID_RNG,
	.queue_kick = rng_queue_kick,
};

struct virtio_rng *virtio_rng_create(struct vm *vm,
				     const struct virtio_device_options *opts)
{
	struct virtio_rng *rng = vm_zalloc(vm, sizeof(*rng));

	if (!rng)
		return NULL;
	if (virtio_device_setup(&rng->vdev, vm, &rng_ops, rng, 1,
				RNG_QUEUE_SIZE, opts, "rng-io", &rng->iothread) ||
	    virtio_device_go(rng->iothread)) {
		virtio_device_teardown(&rng->vdev, &rng->iothread, &rng->stopped);
		return NULL;
	}
	return rng;
}

void virtio_rng_destroy(struct virtio_rng *rng)
{
	if (rng)
		virtio_device_teardown(&rng->vdev, &rng->iothread,
				       &rng->stopped);
}

struct virtio_device *virtio_rng_device(struct virtio_rng *rng)
{
	return &rng->vdev;
}
