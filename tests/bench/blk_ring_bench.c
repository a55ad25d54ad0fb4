// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk throughput without guest cost. The host's KVM emulates every
 * guest instruction, so a guest driver caps any VMM far below the device's
 * own limit. Here a host thread plays the driver on a shared ring in fake
 * guest memory, as Linux's tools/virtio ring tests do: it kicks the device
 * through the queue's eventfd (what KVM does on a guest notify) and waits
 * on the eventfd the device signals (what an irqfd would carry). The device
 * side is lkvm's own virtio-blk, served by its I/O thread.
 *
 *   blk_ring_bench IMAGE MODE QD SECONDS
 *   MODE: randread | randwrite | seqread1m
 *
 * Prints: mode qd requests/s device-CPU-us/request total-CPU-us/request
 */
#include <errno.h>
#include <linux/virtio_blk.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "lkvm/virtio/blk.h"
#include "lkvm/virtio/device.h"
#include "lkvm/vm.h"

#define GPA_BASE	0x100000ULL
#define MEM_SIZE	(96ULL << 20)
#define QSIZE		256
#define RING_OFF	0x0
#define HDR_OFF		0x10000
#define STATUS_OFF	0x20000
#define DATA_OFF	0x100000

struct bench {
	uint8_t *mem;
	struct virtio_device *vdev;
	struct virtio_queue *q;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	int irq_fd;
	uint16_t avail_idx, last_used;
	unsigned int qd, bs;
	uint64_t sectors, next_sector;
	uint32_t type;
	bool random;
	uint64_t seed;
};

static void bench_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		perror("eventfd");
}

static int bench_kick_attach(struct virtio_device *vdev, struct virtio_queue *q)
{
	return 0;	/* the driver thread writes q->kick_fd itself */
}

static void bench_kick_detach(struct virtio_device *vdev, struct virtio_queue *q)
{
}

static void bench_signal_queue(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct bench *b = vdev->transport_priv;

	bench_signal(b->irq_fd);
}

static void bench_signal_config(struct virtio_device *vdev)
{
}

static const struct virtio_transport_ops bench_transport = {
	.kick_attach = bench_kick_attach,
	.kick_detach = bench_kick_detach,
	.signal_queue = bench_signal_queue,
	.signal_config = bench_signal_config,
};

static uint64_t gpa(size_t off)
{
	return GPA_BASE + off;
}

/* Start queue 0 the way a transport would on the driver's register writes. */
static void bench_start_queue(struct bench *b)
{
	struct virtio_device *vdev = b->vdev;
	struct virtio_queue *q = &vdev->queues[0];
	size_t avail_off = RING_OFF + 16 * QSIZE;
	size_t used_off = ALIGN_UP(avail_off + 6 + 2 * QSIZE, 4096);

	b->desc = (void *)(b->mem + RING_OFF);
	b->avail = (void *)(b->mem + avail_off);
	b->used = (void *)(b->mem + used_off);
	virtio_set_status(vdev, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	virtio_set_guest_features(vdev, 0, 1u << VIRTIO_RING_F_EVENT_IDX);
	virtio_set_guest_features(vdev, 1, 1u);		/* VERSION_1 */
	virtio_set_status(vdev, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			  VIRTIO_CONFIG_S_FEATURES_OK);
	pthread_mutex_lock(&vdev->lock);
	q->size = QSIZE;
	q->desc_gpa = gpa(RING_OFF);
	q->avail_gpa = gpa(avail_off);
	q->used_gpa = gpa(used_off);
	virtio_queue_set_enabled(vdev, q, true);
	pthread_mutex_unlock(&vdev->lock);
	virtio_set_status(vdev, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			  VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK);
	b->q = q;
}

static uint64_t rnd(struct bench *b)
{
	b->seed ^= b->seed << 13;
	b->seed ^= b->seed >> 7;
	b->seed ^= b->seed << 17;
	return b->seed;
}

/* Post request slot i: header, data, status as one 3-descriptor chain. */
static void bench_post(struct bench *b, unsigned int i)
{
	struct virtio_blk_outhdr *hdr = (void *)(b->mem + HDR_OFF + i * 16);
	uint64_t blocks = b->sectors / (b->bs / 512);
	uint16_t head = i * 3;

	hdr->type = b->type;
	hdr->ioprio = 0;
	if (b->random) {
		hdr->sector = (rnd(b) % blocks) * (b->bs / 512);
	} else {
		hdr->sector = b->next_sector;
		b->next_sector = (b->next_sector + b->bs / 512) % (blocks * (b->bs / 512));
	}
	b->desc[head] = (struct vring_desc) {
		.addr = gpa(HDR_OFF + i * 16), .len = 16,
		.flags = VRING_DESC_F_NEXT, .next = head + 1,
	};
	b->desc[head + 1] = (struct vring_desc) {
		.addr = gpa(DATA_OFF + (size_t)i * b->bs), .len = b->bs,
		.flags = VRING_DESC_F_NEXT |
			 (b->type == VIRTIO_BLK_T_IN ? VRING_DESC_F_WRITE : 0),
		.next = head + 2,
	};
	b->desc[head + 2] = (struct vring_desc) {
		.addr = gpa(STATUS_OFF + i), .len = 1, .flags = VRING_DESC_F_WRITE,
	};
	b->avail->ring[b->avail_idx % QSIZE] = head;
	b->avail_idx++;
}

static void bench_publish(struct bench *b, uint16_t old)
{
	uint16_t *avail_event = (uint16_t *)&b->used->ring[QSIZE];

	__atomic_store_n(&b->avail->idx, b->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (vring_need_event(__atomic_load_n(avail_event, __ATOMIC_ACQUIRE),
			     b->avail_idx, old))
		bench_signal(b->q->kick_fd);
}

/* Reap completions; returns how many, checking every status byte. */
static unsigned int bench_reap(struct bench *b, unsigned int *free_slots,
			       unsigned int *nr_free, uint64_t *errors)
{
	uint16_t used = __atomic_load_n(&b->used->idx, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	while (b->last_used != used) {
		unsigned int id = b->used->ring[b->last_used % QSIZE].id;
		unsigned int slot = id / 3;

		if (b->mem[STATUS_OFF + slot] != VIRTIO_BLK_S_OK)
			(*errors)++;
		free_slots[(*nr_free)++] = slot;
		b->last_used++;
		n++;
	}
	return n;
}

static void bench_wait(struct bench *b)
{
	uint16_t *used_event = &b->avail->ring[QSIZE];
	uint64_t v;

	__atomic_store_n(used_event, b->last_used, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&b->used->idx, __ATOMIC_ACQUIRE) != b->last_used)
		return;
	if (read(b->irq_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		perror("read irq");
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double process_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int bench_run(struct bench *b, double seconds, const char *mode)
{
	unsigned int free_slots[QSIZE], nr_free = 0, i;
	uint64_t done = 0, errors = 0;
	double t0, cpu0, drv0, t, cpu, drv;

	for (i = 0; i < b->qd; i++)
		free_slots[nr_free++] = i;
	t0 = now_s(CLOCK_MONOTONIC);
	cpu0 = process_cpu_s();
	drv0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		uint16_t old = b->avail_idx;

		while (nr_free)
			bench_post(b, free_slots[--nr_free]);
		if (b->avail_idx != old)
			bench_publish(b, old);
		bench_wait(b);
		done += bench_reap(b, free_slots, &nr_free, &errors);
	} while ((done & 255) || now_s(CLOCK_MONOTONIC) - t0 < seconds);
	t = now_s(CLOCK_MONOTONIC) - t0;
	cpu = process_cpu_s() - cpu0;
	drv = now_s(CLOCK_THREAD_CPUTIME_ID) - drv0;
	printf("%s %u %.0f %.2f %.2f %llu\n", mode, b->qd, done / t,
	       (cpu - drv) / done * 1e6, cpu / done * 1e6,
	       (unsigned long long)errors);
	return errors ? 1 : 0;
}

static int bench_setup_mode(struct bench *b, const char *mode)
{
	if (!strcmp(mode, "randread")) {
		b->type = VIRTIO_BLK_T_IN;
		b->bs = 4096;
		b->random = true;
	} else if (!strcmp(mode, "randwrite")) {
		b->type = VIRTIO_BLK_T_OUT;
		b->bs = 4096;
		b->random = true;
	} else if (!strcmp(mode, "seqread1m")) {
		b->type = VIRTIO_BLK_T_IN;
		b->bs = 1 << 20;
	} else {
		return -1;
	}
	return (size_t)b->qd * b->bs <= MEM_SIZE - DATA_OFF ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct bench b = { .seed = 0x9e3779b97f4a7c15ULL };
	struct virtio_blk_options opts = {
		.use_ioeventfd = true,
		.nr_queues = 1,
		.custom_transport = &bench_transport,
		.custom_transport_priv = &b,
	};
	struct virtio_blk *blk;
	struct vm vm = { 0 };
	int ret;

	if (argc != 5) {
		fprintf(stderr, "usage: %s IMAGE randread|randwrite|seqread1m QD SECONDS\n",
			argv[0]);
		return 2;
	}
	b.qd = atoi(argv[3]);
	if (!b.qd || b.qd * 3 > QSIZE || bench_setup_mode(&b, argv[2])) {
		fprintf(stderr, "bad mode or queue depth (1-%d)\n", QSIZE / 3);
		return 2;
	}
	pthread_mutex_init(&vm.alloc_lock, NULL);
	pthread_mutex_init(&vm.exit_lock, NULL);
	b.mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	b.irq_fd = eventfd(0, EFD_CLOEXEC);
	if (b.mem == MAP_FAILED || b.irq_fd < 0 ||
	    guest_mem_add(&vm.mem, GPA_BASE, MEM_SIZE, b.mem))
		return 1;
	opts.disk.path = argv[1];
	blk = virtio_blk_create(&vm, &opts);
	if (!blk)
		return 1;
	b.vdev = virtio_blk_device(blk);
	b.sectors = ((struct virtio_blk_config *)b.vdev->config)->capacity;
	if (b.sectors < (uint64_t)b.qd * b.bs / 512) {
		fprintf(stderr, "image too small\n");
		return 1;
	}
	bench_start_queue(&b);
	ret = bench_run(&b, atof(argv[4]), argv[2]);
	virtio_blk_destroy(blk);
	vm_destroy(&vm);
	return ret;
}
