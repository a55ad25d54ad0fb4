// SPDX-License-Identifier: GPL-2.0
/* See blk_vm.h. */
#include <linux/virtio_config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lkvm/disk.h"
#include "lkvm/hw.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/x86/layout.h"
#include "blk_vm.h"

#define VERSION_1	(1ULL << 32)

uint8_t take8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

uint16_t take16(struct input *in)
{
	return take8(in) | take8(in) << 8;
}

uint32_t take32(struct input *in)
{
	return take16(in) | (uint32_t)take16(in) << 16;
}

uint64_t take64(struct input *in)
{
	return take32(in) | (uint64_t)take32(in) << 32;
}

static uint8_t *ram;
static int image_fd = -1;
static char image_path[64];
/* What the last check saw, for the rules that span two of them. */
static uint8_t prev_status;
static uint64_t prev_features;

/* A memfd: no file to clean up, emptied again for every input. */
static void setup_once(void)
{
	if (ram)
		return;
	log_threshold = LOG_SILENT;
	ram = malloc(BLK_VM_RAM_SIZE);
	image_fd = memfd_create("fuzz-blk", MFD_CLOEXEC);
	CHECK(ram && image_fd >= 0);
	snprintf(image_path, sizeof(image_path), "/proc/self/fd/%d", image_fd);
}

void blk_vm_start(struct blk_vm *v, enum virtio_transport_kind transport,
		  unsigned int nr_queues)
{
	struct disk_params dc = { .path = image_path, .aio = DISK_AIO_SYNC };
	/* every request done by the time its notify returns, FLUSH too */
	struct virtio_blk_options opts = {
		.nr_queues = nr_queues,
		.use_ioeventfd = true, .pool = &v->pool,
	};
	struct vm *vm = &v->fake.vm;
	struct disk disk;

	setup_once();
	memset(v, 0, sizeof(*v));
	v->ram = ram;
	memset(ram, 0, BLK_VM_RAM_SIZE);
	CHECK(!ftruncate(image_fd, 0) &&
	      !ftruncate(image_fd, BLK_VM_DISK_SIZE));
	CHECK(!fake_vm_init(&v->fake, 0, 1));
	CHECK(!guest_mem_add(&vm->mem, BLK_VM_RAM_GPA, BLK_VM_RAM_SIZE, ram));
	CHECK(!irq_init(vm));
	CHECK(!pci_host_init(vm, X86_PORT_PCI_CONFIG));
	/* A pool that is never started: nobody but us serves the queues. */
	CHECK(!iothread_pool_create(&v->pool, vm, 1));
	CHECK(!disk_open(&disk, &dc));
	opts.disk = &disk;
	v->blk = virtio_blk_create(vm, &opts);
	CHECK(v->blk);
	v->vdev = virtio_blk_device(v->blk);
	if (transport == VIRTIO_TRANSPORT_MMIO)
		CHECK(!virtio_mmio_create(vm, v->vdev));
	else
		CHECK(!virtio_pci_create(vm, v->vdev,
					 transport == VIRTIO_TRANSPORT_PCI_LEGACY));
	prev_status = 0;
	prev_features = 0;
}

void blk_vm_stop(struct blk_vm *v)
{
	unsigned int i;

	virtio_blk_destroy(v->blk);
	/* Every queue stopped: nothing may stay bound to its eventfd. */
	CHECK(v->fake.nr_ioeventfds == 0);
	CHECK(v->fake.unexpected == 0);
	iothread_pool_destroy(&v->pool);
	/*
	 * The transports keep their interrupt eventfds for the VM's life,
	 * which the process's end closes; here a VM lives for one input.
	 */
	for (i = 0; i < v->fake.nr_irqfds; i++)
		close(v->fake.irqfds[i].fd);
	irq_exit(&v->fake.vm);
	fake_vm_destroy(&v->fake);
}

void blk_vm_fill_ram(struct blk_vm *v, struct input *in, uint32_t off,
		     uint32_t len)
{
	while (len-- && in->n)
		v->ram[off++ % BLK_VM_RAM_SIZE] = take8(in);
}

static uint64_t ram_gpa(struct input *in, uint32_t len)
{
	return BLK_VM_RAM_GPA + take16(in) % (BLK_VM_RAM_SIZE - len + 1);
}

/* The header of a request, an IN/OUT/FLUSH/GET_ID/DISCARD... or not. */
static void put_blk_header(struct blk_vm *v, uint64_t gpa, uint32_t len,
			   struct input *in)
{
	uint32_t hdr[4] = { 0 };
	uint8_t *p = guest_mem_ptr(&v->fake.vm.mem, gpa, MIN(len, 16u));

	hdr[0] = take8(in) % 16;	/* type */
	hdr[2] = take8(in) % 80;	/* sector, a few past the end */
	if (p)
		memcpy(p, hdr, MIN(len, 16u));
}

void blk_vm_post_chain(struct blk_vm *v, unsigned int qi, struct input *in)
{
	const struct guest_mem *mem = &v->fake.vm.mem;
	struct virtio_queue *q;
	unsigned int i, n = 1 + take8(in) % 4;
	uint16_t size, idx, head;
	uint8_t *desc, *avail;

	if (qi >= v->vdev->nr_queues)
		return;
	q = &v->vdev->queues[qi];
	size = q->size;
	desc = guest_mem_ptr(mem, q->desc_gpa, 16ULL * size);
	avail = guest_mem_ptr(mem, q->avail_gpa, 6 + 2ULL * size);
	if (!desc || !avail || !size)
		return;
	memcpy(&idx, avail + 2, 2);
	head = (uint16_t)(idx * 4) % size;
	for (i = 0; i < n; i++) {
		uint8_t how = take8(in);
		uint32_t len = how & 0x80 ? take16(in) : 1 + take8(in) % 64;
		uint16_t flags = how & 1 ? 2 : 0;	/* VRING_DESC_F_WRITE */
		uint16_t at = (head + i) % size, next = (at + 1) % size;
		uint64_t gpa = ram_gpa(in, MIN(len, (uint32_t)BLK_VM_RAM_SIZE));

		if (i + 1 < n)
			flags |= 1;			/* VRING_DESC_F_NEXT */
		if (how == 0xff)
			flags = take16(in);		/* anything at all */
		if (!i && !(how & 2))
			put_blk_header(v, gpa, len, in);
		memcpy(desc + 16 * at, &gpa, 8);
		memcpy(desc + 16 * at + 8, &len, 4);
		memcpy(desc + 16 * at + 12, &flags, 2);
		memcpy(desc + 16 * at + 14, &next, 2);
	}
	memcpy(avail + 4 + 2 * (idx % size), &head, 2);
	idx++;
	memcpy(avail + 2, &idx, 2);
}

void blk_vm_serve_kicks(struct blk_vm *v)
{
	unsigned int i;

	for (i = 0; i < v->vdev->nr_queues; i++) {
		struct virtio_queue *q = &v->vdev->queues[i];

		if (q->kick_watched)
			q->kick.handler(&q->kick, EPOLLIN);
	}
}

void blk_vm_run(struct blk_vm *v, struct input *in,
		void (*const *ops)(struct input *), unsigned int nr_ops,
		void (*check)(void))
{
	unsigned int steps = 0;

	while (in->n && steps++ < 256) {
		uint8_t op = take8(in);

		if (op >= 0xe0) {
			blk_vm_fill_ram(v, in, take16(in), take8(in));
			continue;
		}
		if (op >= 0xc0) {
			blk_vm_post_chain(v, (op - 0xc0) % 5, in);
			continue;
		}
		ops[op % nr_ops](in);
		check();
	}
}

/* A live queue's ring: served to the end, every popped chain pushed. */
static void check_queue(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtq *r = &q->ring;

	if (!q->live)
		return;
	CHECK(r->size == q->size && r->size && !(r->size & (r->size - 1)));
	CHECK(r->used_idx == r->last_avail);
	CHECK(r->published_used == r->used_idx);
	if (r->error != VIRTQ_OK)
		CHECK(virtio_get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET);
	CHECK((uint8_t *)r->desc >= ram &&
	      (uint8_t *)r->desc + 16 * r->size <= ram + BLK_VM_RAM_SIZE);
}

void blk_vm_check_device(struct blk_vm *v)
{
	struct virtio_device *vdev = v->vdev;
	uint8_t status = virtio_get_status(vdev);
	uint64_t features = vdev->guest_features;
	unsigned int i;

	CHECK(v->fake.unexpected == 0);
	if (status & VIRTIO_CONFIG_S_FEATURES_OK)
		CHECK(!(features & ~vdev->host_features) &&
		      (features & VERSION_1));
	if ((status & VIRTIO_CONFIG_S_DRIVER_OK) && (features & VERSION_1))
		CHECK(status & VIRTIO_CONFIG_S_FEATURES_OK);
	/* Bits go only with a reset, and so does a frozen feature set. */
	if (status) {
		CHECK(!(prev_status & ~status));
		if (prev_status & (VIRTIO_CONFIG_S_FEATURES_OK |
				   VIRTIO_CONFIG_S_DRIVER_OK))
			CHECK(features == prev_features);
	} else if (prev_status) {
		CHECK(!features);	/* just reset */
	}
	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		CHECK(!q->live || q->enabled);
		CHECK(!q->live || (status & VIRTIO_CONFIG_S_DRIVER_OK));
		check_queue(vdev, q);
	}
	prev_status = status;
	prev_features = features;
}

void blk_vm_check_ioeventfds(struct blk_vm *v, bool mapped, bool pio,
			     uint32_t len,
			     uint64_t (*notify)(void *ctx, unsigned int q),
			     void *ctx)
{
	struct virtio_device *vdev = v->vdev;
	unsigned int i, live = 0;

	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];
		unsigned int j, found = 0;

		if (!q->live || !mapped)
			continue;
		live++;
		for (j = 0; j < v->fake.nr_ioeventfds; j++) {
			const struct fake_ioeventfd *e = &v->fake.ioeventfds[j];

			if (e->datamatch != i)
				continue;
			CHECK(e->addr == notify(ctx, i) && e->pio == pio &&
			      e->len == len && e->fd == q->kick_fd);
			found++;
		}
		CHECK(found == 1);
	}
	CHECK(v->fake.nr_ioeventfds == live);
}
