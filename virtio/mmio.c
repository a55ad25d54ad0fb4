// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-mmio, version 2 (virtio 1.x, 4.2): a register file in a 4 KiB
 * slot, an edge-triggered interrupt line, and the QueueNotify register
 * bound to one ioeventfd per queue (datamatch = queue index), so a kick
 * never leaves the kernel. x86 guests find the slots in the DSDT
 * (LNRO0005), arm64 guests in the device tree.
 */
#include <errno.h>
#include <linux/virtio_mmio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/bus.h"
#include "lkvm/irq.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/vm.h"

#define VIRTIO_MMIO_MAGIC	0x74726976	/* "virt" */
#define VIRTIO_MMIO_VERSION_2	2
#define VIRTIO_MMIO_VENDOR	0x4d564b4c	/* "LKVM" */

/* Register state is guarded by vdev->lock, except isr (atomic). */
struct virtio_mmio {
	struct virtio_transport transport;
	struct bus_dev dev;
	struct virtio_device *vdev;
	struct vm *vm;
	uint64_t base;
	uint32_t gsi;
	int irq_fd;
	uint32_t isr;
	uint32_t host_features_sel;
	uint32_t guest_features_sel;
	uint32_t queue_sel;
};

static int mmio_ioeventfd(struct virtio_mmio *m, struct virtio_queue *q,
			  bool assign)
{
	return vm_ioeventfd(m->vm, m->base + VIRTIO_MMIO_QUEUE_NOTIFY, 4, false,
			    q->index, q->kick_fd, assign);
}

static struct virtio_mmio *to_mmio(struct virtio_transport *t)
{
	return container_of(t, struct virtio_mmio, transport);
}

static int mmio_kick_attach(struct virtio_transport *t, struct virtio_queue *q)
{
	return mmio_ioeventfd(to_mmio(t), q, true);
}

static void mmio_kick_detach(struct virtio_transport *t, struct virtio_queue *q)
{
	mmio_ioeventfd(to_mmio(t), q, false);
}

static void mmio_interrupt(struct virtio_mmio *m, uint32_t why)
{
	uint64_t one = 1;

	__atomic_fetch_or(&m->isr, why, __ATOMIC_SEQ_CST);
	if (write(m->irq_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn_once("virtio-mmio: irqfd: %s", strerror(errno));
}

static void mmio_signal_queue(struct virtio_transport *t, struct virtio_queue *q)
{
	mmio_interrupt(to_mmio(t), VIRTIO_MMIO_INT_VRING);
}

static void mmio_signal_config(struct virtio_transport *t)
{
	mmio_interrupt(to_mmio(t), VIRTIO_MMIO_INT_CONFIG);
}

static const struct virtio_transport_ops mmio_transport_ops = {
	.kick_attach = mmio_kick_attach,
	.kick_detach = mmio_kick_detach,
	.signal_queue = mmio_signal_queue,
	.signal_config = mmio_signal_config,
};

/* Write-only here: a driver reads none of them back (4.2.2). */
static const struct virtio_queue_regs mmio_queue_regs = {
	.size = VIRTIO_MMIO_QUEUE_NUM,
	.desc = VIRTIO_MMIO_QUEUE_DESC_LOW,
	.driver = VIRTIO_MMIO_QUEUE_AVAIL_LOW,
	.device = VIRTIO_MMIO_QUEUE_USED_LOW,
};

/* Caller holds vdev->lock. */
static uint32_t mmio_read_reg(struct virtio_mmio *m, uint64_t reg)
{
	struct virtio_device *vdev = m->vdev;
	struct virtio_queue *q = virtio_queue_at(vdev, m->queue_sel);

	switch (reg) {
	case VIRTIO_MMIO_MAGIC_VALUE:	return VIRTIO_MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:	return VIRTIO_MMIO_VERSION_2;
	case VIRTIO_MMIO_DEVICE_ID:	return vdev->ops->device_id;
	case VIRTIO_MMIO_VENDOR_ID:	return VIRTIO_MMIO_VENDOR;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		return virtio_get_host_features(vdev, m->host_features_sel);
	case VIRTIO_MMIO_QUEUE_NUM_MAX:	return q ? q->max_size : 0;
	case VIRTIO_MMIO_QUEUE_READY:	return q ? q->enabled : 0;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return __atomic_load_n(&m->isr, __ATOMIC_SEQ_CST);
	case VIRTIO_MMIO_STATUS:	return virtio_get_status(vdev);
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return virtio_config_generation(vdev);
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:
		return 0xffffffff;	/* no shared memory regions: length -1 */
	default:			return 0;
	}
}

/* Caller holds vdev->lock. */
static void mmio_write_reg(struct virtio_mmio *m, uint64_t reg, uint32_t val)
{
	struct virtio_device *vdev = m->vdev;
	struct virtio_queue *q = virtio_queue_at(vdev, m->queue_sel);

	switch (reg) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		m->host_features_sel = val;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		m->guest_features_sel = val;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		m->queue_sel = val;
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		if (q)
			virtio_queue_set_enabled(vdev, q, val & 1);
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		__atomic_fetch_and(&m->isr, ~val, __ATOMIC_SEQ_CST);
		break;
	default:
		virtio_queue_reg_write(&mmio_queue_regs, q, reg, val);
	}
}

static void mmio_read(struct bus_dev *dev, uint64_t offset, void *data,
		      unsigned int len)
{
	struct virtio_mmio *m = dev->priv;
	uint32_t val;

	if (offset >= VIRTIO_MMIO_CONFIG) {
		virtio_config_read(m->vdev, offset - VIRTIO_MMIO_CONFIG, data, len);
		return;
	}
	memset(data, 0, len);
	if (len != 4 || offset % 4)
		return;	/* the spec allows only aligned 32-bit accesses */
	pthread_mutex_lock(&m->vdev->lock);
	val = mmio_read_reg(m, offset);
	pthread_mutex_unlock(&m->vdev->lock);
	memcpy(data, &val, 4);
}

static void mmio_write(struct bus_dev *dev, uint64_t offset, const void *data,
		       unsigned int len)
{
	struct virtio_mmio *m = dev->priv;
	uint32_t val;

	if (offset >= VIRTIO_MMIO_CONFIG) {
		virtio_config_write(m->vdev, offset - VIRTIO_MMIO_CONFIG, data,
				    len);
		return;
	}
	if (len != 4 || offset % 4)
		return;
	memcpy(&val, data, 4);
	/* These take their own locks. */
	if (offset == VIRTIO_MMIO_QUEUE_NOTIFY) {
		virtio_queue_notify(m->vdev, val);
		return;
	}
	/*
	 * Only the low byte is the status (the rest is reserved): a 0 there
	 * resets the device, and the interrupt status with it.
	 */
	if (offset == VIRTIO_MMIO_STATUS) {
		uint8_t status = val;

		virtio_set_status(m->vdev, status);
		if (!status)
			__atomic_store_n(&m->isr, 0, __ATOMIC_SEQ_CST);
		return;
	}
	if (offset == VIRTIO_MMIO_DRIVER_FEATURES) {
		virtio_set_guest_features(m->vdev, m->guest_features_sel, val);
		return;
	}
	pthread_mutex_lock(&m->vdev->lock);
	mmio_write_reg(m, offset, val);
	pthread_mutex_unlock(&m->vdev->lock);
}

static const struct bus_ops mmio_bus_ops = {
	.read = mmio_read,
	.write = mmio_write,
};

int virtio_mmio_create(struct vm *vm, struct virtio_device *vdev)
{
	struct virtio_mmio *m = vm_zalloc(vm, sizeof(*m));
	struct vm_mmio_dev *slot;

	if (!m)
		return -1;
	slot = &vm->mmio_devs[vm->nr_mmio_devs];
	if (vm->nr_mmio_devs >= VM_MAX_MMIO_DEVS ||
	    arch_mmio_dev_slot(vm->nr_mmio_devs, &slot->base, &slot->size,
			       &slot->gsi)) {
		pr_err("no room for another virtio-mmio device (%u in use)",
		       vm->nr_mmio_devs);
		return -1;
	}
	m->vdev = vdev;
	m->vm = vm;
	m->base = slot->base;
	m->gsi = slot->gsi;
	m->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->irq_fd < 0 || irqfd_attach(vm, m->irq_fd, m->gsi, -1)) {
		pr_err("virtio-mmio: cannot set up the interrupt");
		return -1;
	}
	m->transport.ops = &mmio_transport_ops;
	virtio_device_attach(vdev, &m->transport);
	m->dev = (struct bus_dev) { .name = "virtio-mmio", .ops = &mmio_bus_ops,
				    .priv = m };
	if (bus_register(&vm->mmio, slot->base, slot->size, &m->dev))
		return -1;
	vm->nr_mmio_devs++;
	return 0;
}
