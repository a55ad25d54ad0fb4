// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for virtio-mmio (make fuzz-mmio): lkvm's virtio-blk
 * in a virtio-mmio slot (version 2, the only one lkvm offers) on a fake VM
 * (blk_vm.c), driven by a sequence of guest accesses decoded from the
 * input: the register window at any width and alignment, the device
 * config, addresses around the slot, plus driver-like steps (negotiate,
 * set a queue up at input-chosen ring addresses and sizes, post requests
 * into guest memory whose contents also come from the input, notify) so
 * that the device walks what the guest set up.
 *
 * A guest write is dispatched as KVM would: one that matches an ioeventfd
 * the fake KVM holds signals it, and the queue's kick handler runs here as
 * the I/O thread would run it; anything else reaches the VMM's bus. After
 * each step: every read returned what the register file defines (a model
 * of the selectors plus the device's own state), the status rules hold,
 * the ioeventfds are exactly the live queues' on QueueNotify, and an
 * interrupt status bit never appears without the irqfd being signalled.
 */
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "blk_vm.h"

#define MMIO_MAGIC	0x74726976		/* "virt" */
#define MMIO_VENDOR	0x4d564b4c		/* "LKVM" */

struct model {
	uint64_t base;
	uint32_t size;
	uint32_t dfsel, gfsel, qsel;
	uint32_t isr;			/* as last seen */
	int irq_fd;
};

static struct blk_vm vm;
static struct model m;

static struct virtio_queue *model_queue(void)
{
	return m.qsel < vm.vdev->nr_queues ? &vm.vdev->queues[m.qsel] : NULL;
}

static uint32_t reg_expect(uint64_t reg)
{
	struct virtio_device *vdev = vm.vdev;
	struct virtio_queue *q = model_queue();

	switch (reg) {
	case VIRTIO_MMIO_MAGIC_VALUE:		return MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:		return 2;
	case VIRTIO_MMIO_DEVICE_ID:		return vdev->ops->device_id;
	case VIRTIO_MMIO_VENDOR_ID:		return MMIO_VENDOR;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		return m.dfsel < 2 ? vdev->host_features >> (32 * m.dfsel) : 0;
	case VIRTIO_MMIO_QUEUE_NUM_MAX:		return q ? q->max_size : 0;
	case VIRTIO_MMIO_QUEUE_READY:		return q ? q->enabled : 0;
	case VIRTIO_MMIO_STATUS:		return vdev->status;
	case VIRTIO_MMIO_CONFIG_GENERATION:	return vdev->config_generation;
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:		return 0xffffffff;
	default:				return 0;
	}
}

static uint32_t isr_peek(void)
{
	uint32_t v;

	CHECK(bus_access(&vm.fake.vm.mmio, m.base + VIRTIO_MMIO_INTERRUPT_STATUS,
			 &v, 4, false));
	return v;
}

static uint64_t notify_addr(void *ctx, unsigned int q)
{
	return m.base + VIRTIO_MMIO_QUEUE_NOTIFY;
}

/* What KVM would do with the irqfd: take what was signalled. */
static uint64_t irq_taken(void)
{
	uint64_t n = 0;

	if (read(m.irq_fd, &n, sizeof(n)) != sizeof(n))
		n = 0;
	return n;
}

static void check_all(void)
{
	uint32_t isr = isr_peek();
	uint64_t irqs = irq_taken();

	blk_vm_check_device(&vm);
	blk_vm_check_ioeventfds(&vm, true, false, 4, notify_addr, NULL);
	CHECK(vm.fake.nr_irqfds == 1 && vm.fake.irqfds[0].fd == m.irq_fd);
	CHECK(!(isr & ~3u));
	/* A new interrupt reason comes with an interrupt. */
	if (isr & ~m.isr)
		CHECK(irqs);
	m.isr = isr;
}

/* As KVM would: an ioeventfd's eventfd for a match, else an exit. */
static bool guest_access(uint64_t addr, void *data, unsigned int len,
			 bool write)
{
	uint64_t v = 0;

	memcpy(&v, data, len);
	if (write && fake_vm_notify(&vm.fake, addr, false, v, len)) {
		blk_vm_serve_kicks(&vm);
		return true;
	}
	return bus_access(&vm.fake.vm.mmio, addr, data, len, write);
}

static void write_model(uint64_t off, uint32_t v)
{
	switch (off) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:	m.dfsel = v; break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:	m.gfsel = v; break;
	case VIRTIO_MMIO_QUEUE_SEL:		m.qsel = v; break;
	}
}

/* An access inside the slot. */
static void slot_access(uint64_t off, unsigned int len, bool write,
			uint8_t *data)
{
	bool reg = off < VIRTIO_MMIO_CONFIG;
	bool whole = reg && len == 4 && !(off % 4);
	uint8_t exp[8] = { 0 };
	uint32_t v = 0;

	if (write) {
		guest_access(m.base + off, data, len, true);
		memcpy(&v, data, MIN(len, 4u));
		if (whole)
			write_model(off, v);
		/* A reset forgets the interrupt status too. */
		if (whole && off == VIRTIO_MMIO_STATUS && !data[0])
			CHECK(!isr_peek());
		return;
	}
	if (!reg && range_within(off - VIRTIO_MMIO_CONFIG, len, 0,
				 vm.vdev->config_size))
		memcpy(exp, vm.vdev->config + off - VIRTIO_MMIO_CONFIG, len);
	if (whole) {
		v = reg_expect(off);
		memcpy(exp, &v, 4);
	}
	CHECK(guest_access(m.base + off, data, len, false));
	if (whole && off == VIRTIO_MMIO_INTERRUPT_STATUS) {
		/* Reading it acknowledges nothing. */
		memcpy(&v, data, 4);
		CHECK(v == isr_peek());
		return;
	}
	CHECK(!memcmp(data, exp, len));
}

static void guest_op(uint64_t addr, unsigned int len, bool write,
		     uint64_t value)
{
	uint8_t data[8];
	unsigned int i;

	memcpy(data, &value, len);
	if (range_within(addr, len, m.base, m.size)) {
		slot_access(addr - m.base, len, write, data);
		return;
	}
	CHECK(!guest_access(addr, data, len, write));
	for (i = 0; !write && i < len; i++)
		CHECK(data[i] == 0xff);
}

static void reg_write(uint64_t off, uint32_t v)
{
	guest_op(m.base + off, 4, true, v);
}

/* ---- decoding the input ---- */

static void op_reg(struct input *in)
{
	static const uint16_t regs[] = {
		VIRTIO_MMIO_MAGIC_VALUE, VIRTIO_MMIO_VERSION,
		VIRTIO_MMIO_DEVICE_ID, VIRTIO_MMIO_VENDOR_ID,
		VIRTIO_MMIO_DEVICE_FEATURES, VIRTIO_MMIO_DEVICE_FEATURES_SEL,
		VIRTIO_MMIO_DRIVER_FEATURES, VIRTIO_MMIO_DRIVER_FEATURES_SEL,
		VIRTIO_MMIO_QUEUE_SEL, VIRTIO_MMIO_QUEUE_NUM_MAX,
		VIRTIO_MMIO_QUEUE_NUM, VIRTIO_MMIO_QUEUE_READY,
		VIRTIO_MMIO_QUEUE_NOTIFY, VIRTIO_MMIO_INTERRUPT_STATUS,
		VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_STATUS,
		VIRTIO_MMIO_QUEUE_DESC_LOW, VIRTIO_MMIO_QUEUE_DESC_HIGH,
		VIRTIO_MMIO_QUEUE_AVAIL_LOW, VIRTIO_MMIO_QUEUE_AVAIL_HIGH,
		VIRTIO_MMIO_QUEUE_USED_LOW, VIRTIO_MMIO_QUEUE_USED_HIGH,
		VIRTIO_MMIO_SHM_SEL, VIRTIO_MMIO_SHM_LEN_LOW,
		VIRTIO_MMIO_SHM_LEN_HIGH, VIRTIO_MMIO_CONFIG_GENERATION,
	};
	uint8_t how = take8(in);
	uint64_t off = regs[take8(in) % ARRAY_SIZE(regs)];
	unsigned int len = 4;

	if (how & 0x80) {			/* any width, any offset */
		len = 1u << (how & 3);
		off = take16(in) % (m.size + 16);
	}
	guest_op(m.base + off, len, how & 0x40, take32(in));
}

static void op_config(struct input *in)
{
	uint8_t how = take8(in);

	guest_op(m.base + VIRTIO_MMIO_CONFIG + take8(in), 1u << (how & 3),
		 how & 0x40, take64(in));
}

static void op_raw(struct input *in)
{
	uint8_t how = take8(in);
	uint64_t addr = how & 0x80 ? take64(in)
				   : m.base + (int16_t)take16(in);

	guest_op(addr, 1u << (how & 3), how & 0x40, take64(in));
}

static void op_negotiate(struct input *in)
{
	uint64_t want = vm.vdev->host_features & take64(in);

	if (take8(in) & 1)
		want |= 1ULL << 32;
	reg_write(VIRTIO_MMIO_STATUS, 3);
	reg_write(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	reg_write(VIRTIO_MMIO_DRIVER_FEATURES, want);
	reg_write(VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	reg_write(VIRTIO_MMIO_DRIVER_FEATURES, want >> 32);
	reg_write(VIRTIO_MMIO_STATUS, 0xb);
}

/* Ring addresses: in RAM mostly, anywhere now and then. */
static uint64_t pick_ring(struct input *in, uint64_t base)
{
	uint8_t how = take8(in);

	if (how == 0xff)
		return take64(in);
	return base + take16(in) % (how & 1 ? 0x1000 : 0x4000);
}

static void op_queue(struct input *in)
{
	uint32_t q = take8(in) % 5;
	uint64_t base = BLK_VM_RAM_GPA + (take16(in) & ~0xfULL);
	uint64_t avail, used;

	reg_write(VIRTIO_MMIO_QUEUE_SEL, q);
	reg_write(VIRTIO_MMIO_QUEUE_NUM, 1u << take8(in) % 10);
	avail = pick_ring(in, base);
	used = pick_ring(in, base);
	reg_write(VIRTIO_MMIO_QUEUE_DESC_LOW, base);
	reg_write(VIRTIO_MMIO_QUEUE_DESC_HIGH, base >> 32);
	reg_write(VIRTIO_MMIO_QUEUE_AVAIL_LOW, avail);
	reg_write(VIRTIO_MMIO_QUEUE_AVAIL_HIGH, avail >> 32);
	reg_write(VIRTIO_MMIO_QUEUE_USED_LOW, used);
	reg_write(VIRTIO_MMIO_QUEUE_USED_HIGH, used >> 32);
	reg_write(VIRTIO_MMIO_QUEUE_READY, 1);
}

static void op_driver_ok(struct input *in)
{
	reg_write(VIRTIO_MMIO_STATUS, take8(in) & 1 ? 0x7 : 0xf);
}

static void op_kick(struct input *in)
{
	reg_write(VIRTIO_MMIO_QUEUE_NOTIFY, take8(in) % 5);
}

static void op_ack(struct input *in)
{
	reg_write(VIRTIO_MMIO_INTERRUPT_ACK, take8(in) & 1 ? isr_peek()
							    : take32(in));
}

static void op_ready(struct input *in)
{
	reg_write(VIRTIO_MMIO_QUEUE_SEL, take8(in) % 5);
	reg_write(VIRTIO_MMIO_QUEUE_READY, take8(in) & 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const ops[])(struct input *) = {
		op_reg, op_reg, op_reg, op_config, op_raw, op_negotiate,
		op_queue, op_driver_ok, op_kick, op_ack, op_ready,
	};
	struct input in = { .p = data, .n = size };
	uint8_t head = take8(&in);

	blk_vm_start(&vm, VIRTIO_TRANSPORT_MMIO, 1 + head % 4);
	memset(&m, 0, sizeof(m));
	m.base = vm.fake.vm.mmio_devs[0].base;
	m.size = vm.fake.vm.mmio_devs[0].size;
	m.irq_fd = vm.fake.irqfds[0].fd;
	check_all();
	blk_vm_run(&vm, &in, ops, ARRAY_SIZE(ops), check_all);
	blk_vm_stop(&vm);
	return 0;
}
