// SPDX-License-Identifier: GPL-2.0
/*
 * The host-thread virtio driver of the ring benches: see ring_driver.h.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "ring_driver.h"

static void efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		perror("eventfd");
}

/* Waits (up to timeout_ms, when >= 0) for fd to become readable; drains it. */
static void efd_wait(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	if (timeout_ms >= 0 && poll(&p, 1, timeout_ms) <= 0)
		return;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		perror("read eventfd");
}

/* ---- the transport: kicks are written by the driver thread itself ---- */

static int rd_kick_attach(struct virtio_transport *t, struct virtio_queue *q)
{
	return 0;	/* the driver thread writes q->kick_fd itself */
}

static void rd_kick_detach(struct virtio_transport *t, struct virtio_queue *q)
{
}

static void rd_signal_queue(struct virtio_transport *t, struct virtio_queue *q)
{
	struct ring_driver *rd = container_of(t, struct ring_driver, transport);

	if (q == rd->q)
		efd_signal(rd->irq_fd);
}

static void rd_signal_config(struct virtio_transport *t)
{
}

static const struct virtio_transport_ops ring_driver_ops = {
	.kick_attach = rd_kick_attach,
	.kick_detach = rd_kick_detach,
	.signal_queue = rd_signal_queue,
	.signal_config = rd_signal_config,
};

void ring_driver_attach(struct ring_driver *rd, struct virtio_device *vdev)
{
	rd->vdev = vdev;
	rd->transport.ops = &ring_driver_ops;
	virtio_device_attach(vdev, &rd->transport);
}

/* ---- the driver ---- */

int ring_driver_init(struct ring_driver *rd, struct vm *vm, size_t size,
		     int wait_ms)
{
	rd->wait_ms = wait_ms;
	rd->mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	rd->irq_fd = eventfd(0, EFD_CLOEXEC | (wait_ms < 0 ? 0 : EFD_NONBLOCK));
	if (rd->mem == MAP_FAILED || rd->irq_fd < 0 ||
	    guest_mem_add(&vm->mem, RING_GPA_BASE, size, rd->mem))
		return -1;
	return 0;
}

static void ring_layout(unsigned int qi, size_t *desc, size_t *avail,
			size_t *used)
{
	*desc = (size_t)qi * RING_AREA;
	*avail = *desc + 16 * RING_QSIZE;
	*used = ALIGN_UP(*avail + 6 + 2 * RING_QSIZE, 4096);
}

int ring_driver_start(struct ring_driver *rd, uint32_t features0,
		      unsigned int nr_queues)
{
	struct virtio_device *vdev = rd->vdev;
	uint8_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;
	unsigned int i;

	virtio_set_status(vdev, s);
	rd->event_idx = features0 & (1u << VIRTIO_RING_F_EVENT_IDX);
	virtio_set_guest_features(vdev, 0, features0);
	virtio_set_guest_features(vdev, 1, 1u);		/* VERSION_1 */
	virtio_set_status(vdev, s | VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(virtio_get_status(vdev) & VIRTIO_CONFIG_S_FEATURES_OK)) {
		fprintf(stderr, "FEATURES_OK refused\n");
		return -1;
	}
	pthread_mutex_lock(&vdev->lock);
	for (i = 0; i < nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];
		size_t desc, avail, used;

		ring_layout(i, &desc, &avail, &used);
		q->size = RING_QSIZE;
		q->desc_gpa = ring_gpa(desc);
		q->avail_gpa = ring_gpa(avail);
		q->used_gpa = ring_gpa(used);
		virtio_queue_set_enabled(vdev, q, true);
	}
	pthread_mutex_unlock(&vdev->lock);
	virtio_set_status(vdev, s | VIRTIO_CONFIG_S_FEATURES_OK |
			  VIRTIO_CONFIG_S_DRIVER_OK);
	return 0;
}

void ring_driver_use(struct ring_driver *rd, unsigned int qi)
{
	size_t desc, avail, used;

	ring_layout(qi, &desc, &avail, &used);
	rd->q = &rd->vdev->queues[qi];
	rd->desc = (void *)(rd->mem + desc);
	rd->avail = (void *)(rd->mem + avail);
	rd->used = (void *)(rd->mem + used);
}

/* Has the device asked for a kick for what went from old to avail_idx? */
static bool ring_driver_need_kick(struct ring_driver *rd, uint16_t old)
{
	uint16_t *avail_event = (uint16_t *)&rd->used->ring[RING_QSIZE];

	if (!rd->event_idx)
		return !(__atomic_load_n(&rd->used->flags, __ATOMIC_ACQUIRE) &
			 VRING_USED_F_NO_NOTIFY);
	return vring_need_event(__atomic_load_n(avail_event, __ATOMIC_ACQUIRE),
				rd->avail_idx, old);
}

/* Ask for an interrupt at the next used entry, or for none. */
static void ring_driver_want_irq(struct ring_driver *rd, bool want)
{
	uint16_t *used_event = &rd->avail->ring[RING_QSIZE];

	if (rd->event_idx)
		__atomic_store_n(used_event,
				 (uint16_t)(want ? rd->last_used
						 : rd->last_used - 1),
				 __ATOMIC_RELEASE);
	else
		__atomic_store_n(&rd->avail->flags,
				 want ? 0 : VRING_AVAIL_F_NO_INTERRUPT,
				 __ATOMIC_RELEASE);
}

void ring_driver_publish(struct ring_driver *rd, uint16_t old)
{
	__atomic_store_n(&rd->avail->idx, rd->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ring_driver_need_kick(rd, old)) {
		rd->kicks++;
		efd_signal(rd->q->kick_fd);
	}
}

/* Polls the used ring for up to 100 ms; true when an entry came. */
static bool ring_driver_spin(struct ring_driver *rd)
{
	double deadline = now_s(CLOCK_MONOTONIC) + 0.1;
	unsigned int n = 0;

	ring_driver_want_irq(rd, false);
	while (__atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE) ==
	       rd->last_used) {
		cpu_relax();
		if (!(++n & 1023) && now_s(CLOCK_MONOTONIC) > deadline)
			return false;
	}
	return true;
}

void ring_driver_wait(struct ring_driver *rd)
{
	if (rd->spin && ring_driver_spin(rd))
		return;
	ring_driver_want_irq(rd, true);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE) != rd->last_used)
		return;
	efd_wait(rd->irq_fd, rd->wait_ms);
}

/* ---- timing ---- */

double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double process_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
