/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host-thread virtio driver that blk_ring_bench and net_ring_bench
 * share. The host's KVM emulates every guest instruction, so a guest driver
 * caps any VMM far below the device's own limit. Here a host thread plays
 * the driver on split rings in fake guest memory, as Linux's tools/virtio
 * ring tests do: it kicks the device through the queue's eventfd (what KVM
 * does on a guest notify) and waits on an eventfd the device signals
 * through the ring driver's own transport (what an irqfd would carry). The device is
 * one of lkvm's own, served by its I/O thread.
 *
 * The fake guest memory starts at RING_GPA_BASE; queue i's rings sit at
 * i * RING_AREA in it, so a bench's buffers go after nr_queues * RING_AREA.
 * EVENT_IDX is the driver's to negotiate: ring_driver_publish() and
 * ring_driver_wait() then use avail_event and used_event, else the
 * rings' flags.
 */
#ifndef TESTS_BENCH_RING_DRIVER_H
#define TESTS_BENCH_RING_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lkvm/virtio/device.h"
#include "lkvm/vm.h"

#define RING_GPA_BASE	0x100000ULL
#define RING_QSIZE	256
#define RING_AREA	0x10000		/* one queue's rings */

struct ring_driver {
	struct virtio_transport transport;	/* the device's, once attached */
	uint8_t *mem;			/* the fake guest memory */
	struct virtio_device *vdev;
	struct virtio_queue *q;		/* the queue driven */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	int irq_fd;
	int wait_ms;			/* < 0: irq waits unbounded */
	bool spin;			/* wait by polling the used ring */
	bool event_idx;			/* negotiated at ring_driver_start() */
	uint16_t avail_idx, last_used;
	uint64_t kicks;			/* notifies the driver sent */
};

/*
 * Drive vdev (made, not yet on a transport): the ring driver becomes its
 * transport, and its interrupts come to rd->irq_fd.
 */
void ring_driver_attach(struct ring_driver *rd, struct virtio_device *vdev);

/*
 * Maps size bytes of fake guest memory into vm's memory map at
 * RING_GPA_BASE and makes the irq eventfd. wait_ms bounds every wait for an
 * interrupt (the eventfd is then non-blocking); < 0 waits as long as it
 * takes.
 */
int ring_driver_init(struct ring_driver *rd, struct vm *vm, size_t size,
		     int wait_ms);

static inline uint64_t ring_gpa(size_t off)
{
	return RING_GPA_BASE + off;
}

/*
 * Brings rd->vdev up the way a transport would on the driver's register
 * writes: features0 and VERSION_1, FEATURES_OK (-1 if refused), queues
 * 0 to nr_queues - 1 at their RING_AREA, DRIVER_OK.
 */
int ring_driver_start(struct ring_driver *rd, uint32_t features0,
		      unsigned int nr_queues);

/* Points rd (desc, avail, used, q) at queue qi's rings. */
void ring_driver_use(struct ring_driver *rd, unsigned int qi);

/* Puts head at the next avail slot; ring_driver_publish() publishes it. */
static inline void ring_driver_add(struct ring_driver *rd, uint16_t head)
{
	rd->avail->ring[rd->avail_idx % RING_QSIZE] = head;
	rd->avail_idx++;
}

/* Publishes avail->idx, kicking if the device asked for it since old. */
void ring_driver_publish(struct ring_driver *rd, uint16_t old);

/*
 * Waits for the next used entry: asks for an interrupt and waits for it,
 * or with rd->spin, as a polling driver does, asks for none and watches
 * the used ring (for at most 100 ms, then as without spin).
 */
void ring_driver_wait(struct ring_driver *rd);

double now_s(clockid_t clk);
/* The whole process's CPU time, user and system. */
double process_cpu_s(void);

#endif
