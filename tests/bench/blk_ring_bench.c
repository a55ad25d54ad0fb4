// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-blk throughput without guest cost: a host thread plays the driver
 * (ring_driver.c) on one queue of lkvm's own virtio-blk, served by its I/O
 * thread.
 *
 *   blk_ring_bench IMAGE[,OPTIONS] MODE QD SECONDS [POLL [DRIVER]]
 *   IMAGE[,OPTIONS]: as -d takes it (direct, aio=io_uring|sync, ...)
 *   MODE: randread | randwrite | seqread1m | seqwrite64k, each with an
 *   optional +flush (every 16th request a FLUSH); seqwrite64k covers the
 *   disk at most once, so that on a new qcow2 every write allocates
 *   POLL: off | auto | on (the device's --poll; default auto)
 *   DRIVER: irq (waits for interrupts; default) | spin (polls the used
 *   ring, interrupts off, as a polling guest driver does)
 *
 * Prints: mode qd requests/s device-CPU-us/request total-CPU-us/request
 * errors kicks/request interrupts/request poll-hits/request
 */
#include <linux/virtio_blk.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/virtio/blk.h"
#include "ring_driver.h"

#define MEM_SIZE	(96ULL << 20)
#define QSIZE		RING_QSIZE
#define HDR_OFF		RING_AREA	/* after queue 0's rings */
#define STATUS_OFF	0x20000
#define DATA_OFF	0x100000

struct bench {
	struct ring_driver rd;
	unsigned int qd, bs;
	uint64_t sectors, next_sector;
	uint32_t type;
	bool random;
	bool once;			/* stop at the end of the disk */
	unsigned int flush_every;	/* 0: no FLUSH requests */
	uint64_t posted;		/* requests, FLUSHes too */
	uint64_t seed;
};

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
	struct virtio_blk_outhdr *hdr = (void *)(b->rd.mem + HDR_OFF + i * 16);
	uint64_t blocks = b->sectors / (b->bs / 512);
	uint16_t head = i * 3;

	hdr->type = b->type;
	hdr->ioprio = 0;
	b->posted++;
	if (b->flush_every && b->posted % b->flush_every == 0) {
		hdr->type = VIRTIO_BLK_T_FLUSH;
		hdr->sector = 0;
		b->rd.desc[head] = (struct vring_desc) {
			.addr = ring_gpa(HDR_OFF + i * 16), .len = 16,
			.flags = VRING_DESC_F_NEXT, .next = head + 2,
		};
		b->rd.desc[head + 2] = (struct vring_desc) {
			.addr = ring_gpa(STATUS_OFF + i), .len = 1,
			.flags = VRING_DESC_F_WRITE,
		};
		ring_driver_add(&b->rd, head);
		return;
	}
	if (b->random) {
		hdr->sector = (rnd(b) % blocks) * (b->bs / 512);
	} else {
		hdr->sector = b->next_sector;
		b->next_sector = (b->next_sector + b->bs / 512) % (blocks * (b->bs / 512));
	}
	b->rd.desc[head] = (struct vring_desc) {
		.addr = ring_gpa(HDR_OFF + i * 16), .len = 16,
		.flags = VRING_DESC_F_NEXT, .next = head + 1,
	};
	b->rd.desc[head + 1] = (struct vring_desc) {
		.addr = ring_gpa(DATA_OFF + (size_t)i * b->bs), .len = b->bs,
		.flags = VRING_DESC_F_NEXT |
			 (b->type == VIRTIO_BLK_T_IN ? VRING_DESC_F_WRITE : 0),
		.next = head + 2,
	};
	b->rd.desc[head + 2] = (struct vring_desc) {
		.addr = ring_gpa(STATUS_OFF + i), .len = 1,
		.flags = VRING_DESC_F_WRITE,
	};
	ring_driver_add(&b->rd, head);
}

/* Reap completions; returns how many, checking every status byte. */
static unsigned int bench_reap(struct bench *b, unsigned int *free_slots,
			       unsigned int *nr_free, uint64_t *errors)
{
	struct ring_driver *rd = &b->rd;
	uint16_t used = __atomic_load_n(&rd->used->idx, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	while (rd->last_used != used) {
		unsigned int id = rd->used->ring[rd->last_used % QSIZE].id;
		unsigned int slot = id / 3;

		if (rd->mem[STATUS_OFF + slot] != VIRTIO_BLK_S_OK)
			(*errors)++;
		free_slots[(*nr_free)++] = slot;
		rd->last_used++;
		n++;
	}
	return n;
}

/*
 * Not done yet? The clock is read once per 256 requests (which complete in
 * batches of any size: done need never land on a multiple of 256).
 */
static bool bench_more(uint64_t done, uint64_t *checked, double t0,
		       double seconds)
{
	if (done - *checked < 256)
		return true;
	*checked = done;
	return now_s(CLOCK_MONOTONIC) - t0 < seconds;
}

/* A once-over mode past the disk's last block: post nothing more. */
static bool bench_at_end(const struct bench *b)
{
	return b->once && b->next_sector == 0 && b->posted;
}

static int bench_run(struct bench *b, double seconds, const char *mode)
{
	unsigned int free_slots[QSIZE], nr_free = 0, i;
	uint64_t done = 0, errors = 0, checked = 0;
	double t0, cpu0, drv0, t, cpu, drv;

	for (i = 0; i < b->qd; i++)
		free_slots[nr_free++] = i;
	t0 = now_s(CLOCK_MONOTONIC);
	cpu0 = process_cpu_s();
	drv0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		uint16_t old = b->rd.avail_idx;

		while (nr_free && !bench_at_end(b))
			bench_post(b, free_slots[--nr_free]);
		if (bench_at_end(b) && nr_free == b->qd)
			break;
		if (b->rd.avail_idx != old)
			ring_driver_publish(&b->rd, old);
		ring_driver_wait(&b->rd);
		done += bench_reap(b, free_slots, &nr_free, &errors);
	} while (bench_more(done, &checked, t0, seconds));
	t = now_s(CLOCK_MONOTONIC) - t0;
	cpu = process_cpu_s() - cpu0;
	drv = now_s(CLOCK_THREAD_CPUTIME_ID) - drv0;
	printf("%s %u %.0f %.2f %.2f %llu %.4f %.4f %.4f\n", mode, b->qd,
	       done / t, (cpu - drv) / done * 1e6, cpu / done * 1e6,
	       (unsigned long long)errors, (double)b->rd.kicks / done,
	       (double)b->rd.q->interrupts / done,
	       (double)b->rd.q->poll.hits / done);
	return errors ? 1 : 0;
}

static int bench_setup_mode(struct bench *b, const char *arg)
{
	char mode[32];
	const char *plus = strchr(arg, '+');

	snprintf(mode, sizeof(mode), "%.*s",
		 plus ? (int)(plus - arg) : (int)strlen(arg), arg);
	if (plus && strcmp(plus, "+flush"))
		return -1;
	b->flush_every = plus ? 16 : 0;
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
	} else if (!strcmp(mode, "seqwrite64k")) {
		b->type = VIRTIO_BLK_T_OUT;
		b->bs = 64 << 10;
		b->once = true;
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
	};
	char disk_buf[PATH_MAX];
	struct disk_params disk_cfg;
	struct virtio_blk *blk;
	struct disk disk;
	struct vm_config cfg = { .nr_cpus = 1 };
	struct vm vm;
	int ret;

	virtio_poll_config_default(&opts.poll);
	if ((argc < 5 || argc > 7) ||
	    (argc > 5 && virtio_poll_parse(argv[5], &opts.poll)) ||
	    (argc > 6 && strcmp(argv[6], "irq") && strcmp(argv[6], "spin"))) {
		fprintf(stderr, "usage: %s IMAGE randread|randwrite|seqread1m|seqwrite64k[+flush] QD SECONDS [off|auto|on [irq|spin]]\n",
			argv[0]);
		return 2;
	}
	b.rd.spin = argc > 6 && !strcmp(argv[6], "spin");
	b.qd = atoi(argv[3]);
	if (!b.qd || b.qd * 3 > QSIZE || bench_setup_mode(&b, argv[2])) {
		fprintf(stderr, "bad mode or queue depth (1-%d)\n", QSIZE / 3);
		return 2;
	}
	if (vm_init(&vm, &cfg) || ring_driver_init(&b.rd, &vm, MEM_SIZE, -1))
		return 1;
	if (disk_parse_option(argv[1], &disk_cfg, disk_buf, sizeof(disk_buf),
			      NULL) ||
	    disk_open(&disk, &disk_cfg))
		return 1;
	opts.disk = &disk;
	blk = virtio_blk_create(&vm, &opts);
	if (!blk)
		return 1;
	ring_driver_attach(&b.rd, virtio_blk_device(blk));
	b.sectors = ((struct virtio_blk_config *)b.rd.vdev->config)->capacity;
	if (b.sectors < (uint64_t)b.qd * b.bs / 512) {
		fprintf(stderr, "image too small\n");
		return 1;
	}
	ring_driver_use(&b.rd, 0);
	if (ring_driver_start(&b.rd, 1u << VIRTIO_RING_F_EVENT_IDX, 1))
		return 1;
	ret = bench_run(&b, atof(argv[4]), argv[2]);
	virtio_blk_destroy(blk);
	vm_destroy(&vm);
	return ret;
}
