// SPDX-License-Identifier: GPL-2.0
/*
 * The legacy virtio-pci register file (virtio 0.9.5, the "transitional"
 * interface of virtio 1.x 4.1.4.8): 32 bits of features, one page number
 * per queue whose rings sit in the fixed legacy layout, the ISR, and the
 * device's config space after the registers, in the I/O BAR (BAR 0).
 * Only INTx interrupts: the vector registers are kept (a driver may write
 * them) but the function has no MSI-X capability, so its config space
 * starts at VIRTIO_PCI_CONFIG_OFF(0). Every access comes from a vCPU
 * thread.
 */
#include <linux/virtio_pci.h>
#include <string.h>

#include "lkvm/virtio/device.h"
#include "virtio_pci.h"

static unsigned int legacy_config_offset(const struct virtio_pci *vp)
{
	return VIRTIO_PCI_CONFIG_OFF(pci_msix_enabled(&vp->msix));
}

/* Caller holds vdev->lock. */
static uint32_t legacy_read_reg(struct virtio_pci *vp, uint64_t off)
{
	struct virtio_queue *q = virtio_pci_queue(vp);

	switch (off) {
	case VIRTIO_PCI_HOST_FEATURES:
		return virtio_get_host_features(vp->vdev, 0);
	case VIRTIO_PCI_GUEST_FEATURES:
		return (uint32_t)vp->vdev->guest_features;
	case VIRTIO_PCI_QUEUE_PFN:
		return q && q->enabled ? q->desc_gpa >> VIRTIO_PCI_QUEUE_ADDR_SHIFT : 0;
	case VIRTIO_PCI_QUEUE_NUM:	return q ? q->max_size : 0;
	case VIRTIO_PCI_QUEUE_SEL:	return vp->queue_sel;
	case VIRTIO_PCI_STATUS:		return virtio_get_status(vp->vdev);
	case VIRTIO_MSI_CONFIG_VECTOR:	return vp->config_vector;
	case VIRTIO_MSI_QUEUE_VECTOR:
		return q ? q->msix_vector : PCI_MSIX_NO_VECTOR;
	default:			return 0;
	}
}

/*
 * The legacy ring layout: the queue at its maximum size, avail after desc,
 * used on the next 4 KiB; a page number of 0 stops the queue.
 */
static void legacy_set_pfn(struct virtio_pci *vp, struct virtio_queue *q,
			   uint32_t pfn)
{
	uint64_t base = (uint64_t)pfn << VIRTIO_PCI_QUEUE_ADDR_SHIFT;

	if (!pfn) {
		virtio_queue_set_enabled(vp->vdev, q, false);
		return;
	}
	q->size = q->max_size;
	q->desc_gpa = base;
	q->avail_gpa = base + 16ULL * q->size;
	q->used_gpa = ALIGN_UP(q->avail_gpa + 6 + 2ULL * q->size,
			       (uint64_t)VIRTIO_PCI_VRING_ALIGN);
	virtio_queue_set_enabled(vp->vdev, q, true);
}

/* Caller holds vdev->lock. */
static void legacy_write_reg(struct virtio_pci *vp, uint64_t off, uint32_t val)
{
	struct virtio_queue *q = virtio_pci_queue(vp);

	switch (off) {
	case VIRTIO_PCI_QUEUE_PFN:
		if (q)
			legacy_set_pfn(vp, q, val);
		break;
	case VIRTIO_PCI_QUEUE_SEL:
		vp->queue_sel = val;
		break;
	case VIRTIO_MSI_CONFIG_VECTOR:
		vp->config_vector = pci_msix_vector(&vp->msix, val);
		break;
	case VIRTIO_MSI_QUEUE_VECTOR:
		if (q)
			q->msix_vector = pci_msix_vector(&vp->msix, val);
		break;
	}
}

static void legacy_read(struct bus_dev *dev, uint64_t off, void *data,
			unsigned int len)
{
	struct virtio_pci *vp = dev->priv;
	unsigned int cfg = legacy_config_offset(vp);
	uint32_t v;

	memset(data, 0, len);
	if (off >= cfg) {
		virtio_config_read(vp->vdev, off - cfg, data, len);
		return;
	}
	if (off == VIRTIO_PCI_ISR) {
		*(uint8_t *)data = virtio_pci_isr_read(vp);
		return;
	}
	pthread_mutex_lock(&vp->vdev->lock);
	v = legacy_read_reg(vp, off);
	pthread_mutex_unlock(&vp->vdev->lock);
	memcpy(data, &v, MIN(len, 4u));
}

static void legacy_write(struct bus_dev *dev, uint64_t off, const void *data,
			 unsigned int len)
{
	struct virtio_pci *vp = dev->priv;
	unsigned int cfg = legacy_config_offset(vp);
	uint32_t v = virtio_pci_value(data, len);

	if (off >= cfg) {
		virtio_config_write(vp->vdev, off - cfg, data, len);
	} else if (off == VIRTIO_PCI_QUEUE_NOTIFY) {
		virtio_queue_notify(vp->vdev, v);
	} else if (off == VIRTIO_PCI_STATUS) {
		virtio_pci_set_status(vp, v);
	} else if (off == VIRTIO_PCI_GUEST_FEATURES) {
		virtio_set_guest_features(vp->vdev, 0, v);
	} else {
		pthread_mutex_lock(&vp->vdev->lock);
		legacy_write_reg(vp, off, v);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
}

const struct bus_ops virtio_pci_legacy_ops = {
	.read = legacy_read,
	.write = legacy_write,
};
