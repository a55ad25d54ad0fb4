// SPDX-License-Identifier: GPL-2.0
/*
 * The virtio transports' register files, driven as a guest driver would:
 * virtio-mmio registers through the MMIO bus, virtio-pci configuration
 * space through ports 0xcf8/0xcfc and its BAR through the MMIO bus. The
 * VM is a fake one (fake_vm.c): no KVM is needed, and the ioeventfds the
 * transports bind are checked where KVM would have them.
 */
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_pci.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/arch.h"
#include "lkvm/hw.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/vm.h"
#include "lkvm/x86/layout.h"
#include "fake_vm.h"

struct fixture {
	struct fake_vm fake;
	struct virtio_device vdev;
	struct iothread *iothread;
	uint8_t config[64];
	unsigned int kicks;	/* atomic: the test's and the I/O thread's */
};

/* The modern virtio-pci BAR's notify region (virtio/pci.c's layout). */
#define PCI_NOTIFY_OFF	0x3000
#define PCI_NOTIFY_MUL	4

static void test_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	__atomic_add_fetch(&((struct fixture *)vdev->priv)->kicks, 1,
			   __ATOMIC_SEQ_CST);
}

static unsigned int kicks(struct fixture *f)
{
	return __atomic_load_n(&f->kicks, __ATOMIC_SEQ_CST);
}

/* The I/O thread serves an eventfd kick: wait for it, at most 2 s. */
static bool wait_kicks(struct fixture *f, unsigned int n)
{
	int i;

	for (i = 0; i < 2000 && kicks(f) < n; i++)
		usleep(1000);
	return kicks(f) >= n;
}

static const struct virtio_device_ops test_ops = {
	.name = "test",
	.device_id = 2,
	.queue_kick = test_queue_kick,
};

static int setup(void **state, enum virtio_transport_kind transport)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct vm *vm = &f->fake.vm;
	unsigned int i;

	assert_non_null(f);
	assert_int_equal(fake_vm_init(&f->fake, 16, 1), 0);
	assert_int_equal(irq_init(vm), 0);
	assert_int_equal(pci_host_init(vm, X86_PORT_PCI_CONFIG), 0);
	f->iothread = iothread_create(vm, "test-io");
	assert_non_null(f->iothread);
	assert_int_equal(virtio_device_init(&f->vdev, vm, &test_ops, f, 2,
					    64, f->iothread, true), 0);
	for (i = 0; i < sizeof(f->config); i++)
		f->config[i] = i;
	f->vdev.config = f->config;
	f->vdev.config_size = sizeof(f->config);
	if (transport == VIRTIO_TRANSPORT_MMIO)
		assert_int_equal(virtio_mmio_create(vm, &f->vdev), 0);
	else
		assert_int_equal(virtio_pci_create(vm, &f->vdev,
			transport == VIRTIO_TRANSPORT_PCI_LEGACY), 0);
	assert_int_equal(iothread_start(f->iothread), 0);
	*state = f;
	return 0;
}

static int setup_mmio(void **state)
{
	return setup(state, VIRTIO_TRANSPORT_MMIO);
}

static int setup_pci(void **state)
{
	return setup(state, VIRTIO_TRANSPORT_PCI);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	iothread_stop(f->iothread);
	virtio_device_stop(&f->vdev);
	iothread_destroy(f->iothread);
	/* Every queue stopped: nothing may stay bound to a closed eventfd. */
	assert_int_equal(f->fake.nr_ioeventfds, 0);
	assert_int_equal(f->fake.unexpected, 0);
	irq_exit(&f->fake.vm);
	fake_vm_destroy(&f->fake);
	free(f);
	return 0;
}

static uint32_t mmio_rd(struct fixture *f, uint64_t reg)
{
	uint32_t v;

	bus_access(&f->fake.vm.mmio, f->fake.vm.mmio_devs[0].base + reg, &v, 4, false);
	return v;
}

static void mmio_wr(struct fixture *f, uint64_t reg, uint32_t v)
{
	bus_access(&f->fake.vm.mmio, f->fake.vm.mmio_devs[0].base + reg, &v, 4, true);
}

static void test_mmio_identity(void **state)
{
	struct fixture *f = *state;
	uint8_t byte;

	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_VERSION), 2);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_DEVICE_ID), 2);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_SHM_LEN_LOW), 0xffffffff);
	/* Registers are 32-bit: a byte read of one gives nothing. */
	bus_access(&f->fake.vm.mmio, f->fake.vm.mmio_devs[0].base, &byte, 1, false);
	assert_int_equal(byte, 0);
	/* The slot is announced for the firmware tables. */
	assert_int_equal(f->fake.vm.nr_mmio_devs, 1);
	assert_int_equal(f->fake.vm.mmio_devs[0].base, X86_VIRTIO_MMIO_START);
}

static void test_mmio_features(void **state)
{
	struct fixture *f = *state;

	mmio_wr(f, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	assert_true(mmio_rd(f, VIRTIO_MMIO_DEVICE_FEATURES) & 1); /* VERSION_1 */
	mmio_wr(f, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 7);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_DEVICE_FEATURES), 0);
	/* FEATURES_OK is refused without VERSION_1 ... */
	mmio_wr(f, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK);
	assert_false(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	/* ... and for a bit the device never offered. */
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1 | (1u << 18));
	mmio_wr(f, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK);
	assert_false(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	mmio_wr(f, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
		VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK);
	assert_true(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_FEATURES_OK);
	/* Reset clears everything. */
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(f->vdev.guest_features, 0);
}

/*
 * Status bits only come (until a reset): DRIVER_OK needs FEATURES_OK from
 * a modern driver, FEATURES_OK cannot be taken back, and the features are
 * frozen once the driver is running.
 */
static void test_mmio_status_rules(void **state)
{
	struct fixture *f = *state;
	const uint32_t ack = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;

	log_threshold = LOG_SILENT;
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1);	/* VERSION_1 */
	mmio_wr(f, VIRTIO_MMIO_STATUS, ack | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_false(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_DRIVER_OK);
	assert_true(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET);
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	mmio_wr(f, VIRTIO_MMIO_STATUS, ack | VIRTIO_CONFIG_S_FEATURES_OK);
	mmio_wr(f, VIRTIO_MMIO_STATUS, ack | VIRTIO_CONFIG_S_FEATURES_OK |
		VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_STATUS), 0xf);
	/* taking FEATURES_OK back does not */
	mmio_wr(f, VIRTIO_MMIO_STATUS, ack | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_STATUS), 0xf);
	/* nor do features written now */
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1u << VIRTIO_RING_F_EVENT_IDX);
	assert_int_equal(f->vdev.guest_features, 1ULL << 32);
	log_threshold = LOG_WARN;
}

/*
 * The status is the register's low byte: a write whose low byte is 0
 * resets the device, and the interrupt status must go with it (found by
 * fuzz_mmio: a write of 0x100 reset the device but kept the ISR).
 */
static void test_mmio_wide_status_write_resets_all(void **state)
{
	struct fixture *f = *state;

	log_threshold = LOG_SILENT;
	mmio_wr(f, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	virtio_device_broken(&f->vdev, NULL, "test");
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_INTERRUPT_STATUS),
			 VIRTIO_MMIO_INT_CONFIG);
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0x100);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	log_threshold = LOG_WARN;
}

static void test_mmio_queue_registers(void **state)
{
	struct fixture *f = *state;
	struct virtio_queue *q = &f->vdev.queues[1];

	mmio_wr(f, VIRTIO_MMIO_QUEUE_SEL, 1);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_QUEUE_NUM_MAX), 64);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_NUM, 48);		/* not a power of 2 */
	assert_int_equal(q->size, 64);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_NUM, 128);		/* above the maximum */
	assert_int_equal(q->size, 64);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_NUM, 16);
	assert_int_equal(q->size, 16);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x10000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_AVAIL_LOW, 0x11000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_USED_LOW, 0x12000);
	assert_int_equal(q->desc_gpa, 0x10000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_QUEUE_READY), 1);
	/* A ready queue's addresses are frozen. */
	mmio_wr(f, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x20000);
	assert_int_equal(q->desc_gpa, 0x10000);
	/* A queue past the last one reads as absent. */
	mmio_wr(f, VIRTIO_MMIO_QUEUE_SEL, 5);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_QUEUE_NUM_MAX), 0);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_READY, 1);	/* ignored, no crash */
}

static uint64_t queue_kicks_eventfd(struct virtio_queue *q)
{
	uint64_t n;

	pthread_mutex_lock(&q->lock);
	n = q->kicks_eventfd;
	pthread_mutex_unlock(&q->lock);
	return n;
}

static void test_mmio_live_queue_and_notify(void **state)
{
	struct fixture *f = *state;
	uint64_t notify = f->fake.vm.mmio_devs[0].base +
			  VIRTIO_MMIO_QUEUE_NOTIFY;

	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_wr(f, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0xb);	/* ACK|DRIVER|FEATURES_OK */
	mmio_wr(f, VIRTIO_MMIO_QUEUE_SEL, 0);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x10000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_AVAIL_LOW, 0x11000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_USED_LOW, 0x12000);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_READY, 1);
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0xf);	/* DRIVER_OK */
	assert_true(f->vdev.queues[0].live);
	/* Starting a queue serves what the driver may have posted already. */
	assert_int_equal(kicks(f), 1);
	/* The notify register is KVM's: queue 0's value signals its eventfd, */
	assert_true(fake_vm_ioeventfd(&f->fake, notify, false, 0) >= 0);
	assert_true(fake_vm_notify(&f->fake, notify, false, 0, 4));
	/* which the I/O thread serves. */
	assert_true(wait_kicks(f, 2));
	assert_int_equal(queue_kicks_eventfd(&f->vdev.queues[0]), 1);
	/* Queue 1 is not live: its value would exit to the VMM. */
	assert_false(fake_vm_notify(&f->fake, notify, false, 1, 4));
	/* A notify that reaches the VMM is served on the spot. */
	mmio_wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	assert_int_equal(kicks(f), 3);
	assert_int_equal(f->vdev.queues[0].kicks_exit, 1);
	mmio_wr(f, VIRTIO_MMIO_QUEUE_NOTIFY, 9);	/* no such queue */
	assert_int_equal(kicks(f), 3);
	/* Interrupt status: the config bit, acknowledged by the driver. */
	virtio_device_broken(&f->vdev, &f->vdev.queues[0], "test");
	assert_true(mmio_rd(f, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_INTERRUPT_STATUS),
			 VIRTIO_MMIO_INT_CONFIG);
	mmio_wr(f, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	mmio_wr(f, VIRTIO_MMIO_STATUS, 0);
	assert_false(f->vdev.queues[0].live);
	assert_int_equal(mmio_rd(f, VIRTIO_MMIO_STATUS), 0);
	/* A reset gives the notify register back to the VMM. */
	assert_int_equal(fake_vm_ioeventfd(&f->fake, notify, false, 0), -1);
}

static void test_mmio_config_space(void **state)
{
	struct fixture *f = *state;
	uint64_t base = f->fake.vm.mmio_devs[0].base + VIRTIO_MMIO_CONFIG;
	uint32_t v = 0xdeadbeef;
	uint8_t b;

	bus_access(&f->fake.vm.mmio, base + 5, &b, 1, false);
	assert_int_equal(b, 5);
	bus_access(&f->fake.vm.mmio, base + 62, &v, 4, false);	/* crosses the end */
	assert_int_equal(v, 0);
	v = 0x12345678;
	bus_access(&f->fake.vm.mmio, base + 4, &v, 4, true);	/* read-only config */
	assert_int_equal(f->config[4], 4);
}

static uint32_t cfg_rd(struct fixture *f, unsigned int slot, unsigned int reg)
{
	uint32_t addr = 0x80000000u | slot << 11 | (reg & 0xfc), v;

	bus_access(&f->fake.vm.pio, X86_PORT_PCI_CONFIG, &addr, 4, true);
	bus_access(&f->fake.vm.pio, X86_PORT_PCI_CONFIG + 4, &v, 4, false);
	return v;
}

static void cfg_wr(struct fixture *f, unsigned int slot, unsigned int reg,
		   uint32_t v)
{
	uint32_t addr = 0x80000000u | slot << 11 | (reg & 0xfc);

	bus_access(&f->fake.vm.pio, X86_PORT_PCI_CONFIG, &addr, 4, true);
	bus_access(&f->fake.vm.pio, X86_PORT_PCI_CONFIG + 4, &v, 4, true);
}

static void test_pci_config_space(void **state)
{
	struct fixture *f = *state;
	unsigned int cap, found = 0;

	assert_int_equal(cfg_rd(f, 1, 0), 0x10421af4);	/* modern, id 2 */
	assert_int_equal(cfg_rd(f, 2, 0), 0xffffffff);	/* empty slot */
	assert_true(cfg_rd(f, 1, 0x04) >> 16 & 0x10);	/* capability list */
	for (cap = cfg_rd(f, 1, 0x34) & 0xff; cap && found < 16;
	     cap = cfg_rd(f, 1, cap) >> 8 & 0xff)
		found++;
	assert_int_equal(found, 5);	/* MSI-X + 4 virtio capabilities */
	/* BAR sizing: all-ones reads back the size mask. */
	cfg_wr(f, 1, 0x20, 0xffffffff);
	assert_int_equal(cfg_rd(f, 1, 0x20), 0xffff8004);
	cfg_wr(f, 1, 0x10, 0xffffffff);		/* BAR0 absent */
	assert_int_equal(cfg_rd(f, 1, 0x10), 0);
}

/*
 * What a guest driver binds by: the PCI IDs and the class code follow the
 * device's type, on modern and legacy functions alike (virtio 4.1.2.1),
 * whoever builds the device.
 */
static void test_pci_ids_follow_the_device_type(void **state)
{
	static const struct {
		uint32_t type;
		uint16_t legacy_id;
		uint32_t class_code;
	} want[] = {
		{ 1, 0x1000, 0x020000 },	/* net: network controller */
		{ 2, 0x1001, 0x010000 },	/* blk: mass storage */
		{ 3, 0x1003, 0x078000 },	/* console: communication */
		{ 4, 0x1005, 0xff0000 },	/* rng */
		{ 5, 0x1002, 0xff0000 },	/* balloon */
		{ 9, 0x1009, 0xff0000 },	/* 9p */
		{ 26, 0x103f, 0xff0000 },	/* none of ours: the last ID */
	};
	static struct virtio_device_ops ops[ARRAY_SIZE(want)];
	static struct virtio_device vdevs[ARRAY_SIZE(want)][2];
	struct fixture *f = *state;
	unsigned int i, legacy, slot = 2;	/* 1: the fixture's */

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		ops[i] = test_ops;
		ops[i].device_id = want[i].type;
		for (legacy = 0; legacy < 2; legacy++, slot++) {
			struct virtio_device *vdev = &vdevs[i][legacy];
			uint32_t subsys = legacy ? want[i].type : 0x1100;
			uint32_t dev = legacy ? want[i].legacy_id
					      : 0x1040 + want[i].type;

			assert_int_equal(virtio_device_init(vdev, &f->fake.vm,
					&ops[i], f, 1, 64, f->iothread, true), 0);
			assert_int_equal(virtio_pci_create(&f->fake.vm, vdev,
							   legacy), 0);
			assert_int_equal(cfg_rd(f, slot, 0x00),
					 dev << 16 | 0x1af4);
			assert_int_equal(cfg_rd(f, slot, 0x08),
					 want[i].class_code << 8 | !legacy);
			assert_int_equal(cfg_rd(f, slot, 0x2c),
					 subsys << 16 | 0x1af4);
		}
	}
}

static void test_pci_bar_moves_with_the_guest(void **state)
{
	struct fixture *f = *state;
	uint64_t old = cfg_rd(f, 1, 0x20) & ~0xfULL, moved = 0xd0000000;
	uint16_t numq = 0;

	bus_access(&f->fake.vm.mmio, old + VIRTIO_PCI_COMMON_NUMQ, &numq, 2, false);
	assert_int_equal(numq, 2);
	cfg_wr(f, 1, 0x20, moved | 4);
	numq = 0;
	bus_access(&f->fake.vm.mmio, moved + VIRTIO_PCI_COMMON_NUMQ, &numq, 2, false);
	assert_int_equal(numq, 2);
	assert_false(bus_access(&f->fake.vm.mmio, old + VIRTIO_PCI_COMMON_NUMQ,
				&numq, 2, false));
	/* Memory decoding off: the BAR disappears. */
	cfg_wr(f, 1, 0x04, 0);
	assert_false(bus_access(&f->fake.vm.mmio, moved, &numq, 2, false));
}

static void common_wr(struct fixture *f, uint64_t bar, unsigned int off,
		      uint32_t v, unsigned int len)
{
	bus_access(&f->fake.vm.mmio, bar + off, &v, len, true);
}

static void test_pci_notify_follows_the_bar(void **state)
{
	struct fixture *f = *state;
	uint64_t bar = cfg_rd(f, 1, 0x20) & ~0xfULL, moved = 0xd0000000;
	uint64_t notify1 = PCI_NOTIFY_OFF + 1 * PCI_NOTIFY_MUL;

	common_wr(f, bar, VIRTIO_PCI_COMMON_STATUS, 3, 1);	/* ACK|DRIVER */
	common_wr(f, bar, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_GF, 1, 4);		/* VERSION_1 */
	common_wr(f, bar, VIRTIO_PCI_COMMON_STATUS, 0xb, 1);	/* FEATURES_OK */
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SELECT, 1, 2);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_DESCLO, 0x10000, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_AVAILLO, 0x11000, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_USEDLO, 0x12000, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	common_wr(f, bar, VIRTIO_PCI_COMMON_STATUS, 0xf, 1);	/* DRIVER_OK */
	assert_true(f->vdev.queues[1].live);
	/* Queue 1's notify address, 2 bytes of its index, is KVM's. */
	assert_int_equal(f->fake.nr_ioeventfds, 1);
	assert_true(fake_vm_notify(&f->fake, bar + notify1, false, 1, 2));
	assert_true(wait_kicks(f, 2));
	/* The guest moves the BAR: the ioeventfd moves with it. */
	cfg_wr(f, 1, 0x20, moved | 4);
	assert_int_equal(fake_vm_ioeventfd(&f->fake, bar + notify1, false, 1), -1);
	assert_true(fake_vm_notify(&f->fake, moved + notify1, false, 1, 2));
	assert_true(wait_kicks(f, 3));
	/* Memory decoding off: no BAR, no ioeventfd. */
	cfg_wr(f, 1, 0x04, 0);
	assert_int_equal(f->fake.nr_ioeventfds, 0);
}

static uint32_t common_rd(struct fixture *f, uint64_t bar, unsigned int off,
			  unsigned int len)
{
	uint32_t v = 0;

	bus_access(&f->fake.vm.mmio, bar + off, &v, len, false);
	return v;
}

/* The same rules as virtio-mmio's, and the addresses read back. */
static void test_pci_queue_registers(void **state)
{
	struct fixture *f = *state;
	uint64_t bar = cfg_rd(f, 1, 0x20) & ~0xfULL;
	struct virtio_queue *q = &f->vdev.queues[1];

	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SELECT, 1, 2);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 2), 64);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 48, 2);	/* not a power of 2 */
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 128, 2);	/* above the maximum */
	assert_int_equal(q->size, 64);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 16, 2);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 2), 16);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_DESCLO, 0x10000, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_DESCHI, 0x7, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_AVAILHI, 0x8, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_AVAILLO, 0x11000, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_USEDLO, 0x12000, 4);
	assert_int_equal(q->desc_gpa, 0x700010000ULL);
	assert_int_equal(q->avail_gpa, 0x800011000ULL);
	assert_int_equal(q->used_gpa, 0x12000);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_DESCHI, 4), 7);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_AVAILLO, 4),
			 0x11000);
	/* Enabled: size and addresses are frozen, the vector is not. */
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_ENABLE, 2), 1);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 32, 2);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_USEDHI, 1, 4);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_MSIX, 2, 2);
	assert_int_equal(q->size, 16);
	assert_int_equal(q->used_gpa, 0x12000);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_MSIX, 2), 2);
	/* 0 does not disable a queue on virtio-pci. */
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_ENABLE, 0, 2);
	assert_true(q->enabled);
	/* A queue past the last one reads as absent. */
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_SELECT, 5, 2);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_SIZE, 2), 0);
	assert_int_equal(common_rd(f, bar, VIRTIO_PCI_COMMON_Q_MSIX, 2),
			 VIRTIO_MSI_NO_VECTOR);
	common_wr(f, bar, VIRTIO_PCI_COMMON_Q_DESCLO, 0x1000, 4); /* no crash */
}

static void test_pci_intx_follows_the_isr(void **state)
{
	struct fixture *f = *state;
	uint64_t bar = cfg_rd(f, 1, 0x20) & ~0xfULL;
	unsigned int gsi = cfg_rd(f, 1, 0x3c) & 0xff;
	uint32_t cmd = cfg_rd(f, 1, 0x04) & 0xffff;
	uint8_t isr = 0;

	assert_true(gsi < FAKE_VM_MAX_GSIS);
	f->vdev.transport->ops->signal_queue(f->vdev.transport,
					    &f->vdev.queues[0]);
	assert_int_equal(f->fake.irq_level[gsi], 1);
	assert_true(cfg_rd(f, 1, 0x04) >> 16 & 0x08);	/* Interrupt Status */
	/* Interrupt Disable lowers the line; clearing it raises it again. */
	cfg_wr(f, 1, 0x04, cmd | 0x400);
	assert_int_equal(f->fake.irq_level[gsi], 0);
	cfg_wr(f, 1, 0x04, cmd);
	assert_int_equal(f->fake.irq_level[gsi], 1);
	/* Reading the ISR lowers it at once, before any EOI (4.1.4.5). */
	bus_access(&f->fake.vm.mmio, bar + 0x1000, &isr, 1, false);
	assert_int_equal(isr, 1);
	assert_int_equal(f->fake.irq_level[gsi], 0);
	assert_false(cfg_rd(f, 1, 0x04) >> 16 & 0x08);
}

/*
 * A 4-byte write at the 1-byte device status whose low byte is 0 resets
 * the device; the transport's interrupt state (ISR, INTx line, config
 * vector) must be reset with it (found by fuzz_virtio_pci).
 */
static void test_pci_wide_status_write_resets_all(void **state)
{
	struct fixture *f = *state;
	uint64_t bar = cfg_rd(f, 1, 0x20) & ~0xfULL;
	unsigned int gsi = cfg_rd(f, 1, 0x3c) & 0xff;
	uint16_t vector = 0;

	common_wr(f, bar, VIRTIO_PCI_COMMON_STATUS, 1, 1);
	common_wr(f, bar, VIRTIO_PCI_COMMON_MSIX, 0, 2);
	f->vdev.transport->ops->signal_queue(f->vdev.transport,
					    &f->vdev.queues[0]);
	assert_int_equal(f->fake.irq_level[gsi], 1);
	common_wr(f, bar, VIRTIO_PCI_COMMON_STATUS, 0x3000, 4);
	assert_int_equal(f->vdev.status, 0);
	assert_int_equal(f->fake.irq_level[gsi], 0);
	assert_false(cfg_rd(f, 1, 0x04) >> 16 & 0x08);
	bus_access(&f->fake.vm.mmio, bar + VIRTIO_PCI_COMMON_MSIX, &vector, 2,
		   false);
	assert_int_equal(vector, VIRTIO_MSI_NO_VECTOR);
}

/* Two slots share a line: one lowering its share leaves the other's. */
static void test_shared_intx_line(void **state)
{
	struct fixture *f = *state;
	bool a = false, b = false;

	irq_line_hold(&f->fake.vm, 18, &a, true);
	irq_line_hold(&f->fake.vm, 18, &b, true);
	irq_line_hold(&f->fake.vm, 18, &a, true);	/* held already */
	assert_int_equal(f->fake.irq_level[18], 1);
	irq_line_hold(&f->fake.vm, 18, &a, false);
	assert_int_equal(f->fake.irq_level[18], 1);
	irq_line_hold(&f->fake.vm, 18, &a, false);	/* not held */
	assert_int_equal(f->fake.irq_level[18], 1);
	irq_line_hold(&f->fake.vm, 18, &b, false);
	assert_int_equal(f->fake.irq_level[18], 0);
}

static void test_pci_msix_table(void **state)
{
	struct fixture *f = *state;
	uint64_t bar = cfg_rd(f, 1, 0x20) & ~0xfULL;
	uint32_t v = 0xfee00000, data = 0x41, ctrl = 0;
	uint64_t pba = 0;

	bus_access(&f->fake.vm.mmio, bar + 0x4000, &v, 4, true);
	bus_access(&f->fake.vm.mmio, bar + 0x4008, &data, 4, true);
	v = 0;
	bus_access(&f->fake.vm.mmio, bar + 0x4000, &v, 4, false);
	assert_int_equal(v, 0xfee00000);
	bus_access(&f->fake.vm.mmio, bar + 0x400c, &ctrl, 4, false);
	assert_int_equal(ctrl, 1);		/* entries start masked */
	/* A vector past the table is ignored. */
	bus_access(&f->fake.vm.mmio, bar + 0x4000 + 16 * 40, &data, 4, true);
	bus_access(&f->fake.vm.mmio, bar + 0x6000, &pba, 8, false);
	assert_int_equal(pba, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mmio_identity, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_features, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_status_rules, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_wide_status_write_resets_all, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_queue_registers, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_live_queue_and_notify, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_mmio_config_space, setup_mmio, teardown),
		cmocka_unit_test_setup_teardown(test_pci_config_space, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_ids_follow_the_device_type, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_bar_moves_with_the_guest, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_notify_follows_the_bar, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_queue_registers, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_intx_follows_the_isr, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_wide_status_write_resets_all, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_shared_intx_line, setup_pci, teardown),
		cmocka_unit_test_setup_teardown(test_pci_msix_table, setup_pci, teardown),
	};

	log_threshold = LOG_ERROR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
