// SPDX-License-Identifier: GPL-2.0
/*
 * The modern virtio-pci register file (virtio 1.x, 4.1.4): the BAR 4
 * regions the vendor capabilities point at. The common configuration
 * (features, status, the queue selected and its registers, the vectors),
 * the ISR, the device's own config space, the notify addresses (one per
 * queue, each bound to its ioeventfd while the queue is live, so a write
 * that arrives here is a notify KVM did not take) and the MSI-X table and
 * PBA. Every access comes from a vCPU thread.
 */
#include <linux/virtio_pci.h>
#include <string.h>

#include "lkvm/virtio/device.h"
#include "virtio_pci.h"

static const struct virtio_queue_regs common_queue_regs = {
	.size = VIRTIO_PCI_COMMON_Q_SIZE,
	.desc = VIRTIO_PCI_COMMON_Q_DESCLO,
	.driver = VIRTIO_PCI_COMMON_Q_AVAILLO,
	.device = VIRTIO_PCI_COMMON_Q_USEDLO,
};

/* Caller holds vdev->lock. */
static uint32_t common_read(struct virtio_pci *vp, unsigned int off)
{
	struct virtio_device *vdev = vp->vdev;
	struct virtio_queue *q = virtio_pci_queue(vp);

	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:	return vp->host_features_sel;
	case VIRTIO_PCI_COMMON_DF:
		return virtio_get_host_features(vdev, vp->host_features_sel);
	case VIRTIO_PCI_COMMON_GFSELECT:	return vp->guest_features_sel;
	case VIRTIO_PCI_COMMON_GF:
		return vp->guest_features_sel < 2 ?
		       (uint32_t)(vdev->guest_features >>
				  (32 * vp->guest_features_sel)) : 0;
	case VIRTIO_PCI_COMMON_MSIX:		return vp->config_vector;
	case VIRTIO_PCI_COMMON_NUMQ:		return vdev->nr_queues;
	case VIRTIO_PCI_COMMON_STATUS:		return virtio_get_status(vdev);
	case VIRTIO_PCI_COMMON_CFGGENERATION:
		return virtio_config_generation(vdev);
	case VIRTIO_PCI_COMMON_Q_SELECT:	return vp->queue_sel;
	case VIRTIO_PCI_COMMON_Q_MSIX:
		return q ? q->msix_vector : PCI_MSIX_NO_VECTOR;
	case VIRTIO_PCI_COMMON_Q_ENABLE:	return q ? q->enabled : 0;
	case VIRTIO_PCI_COMMON_Q_NOFF:		return q ? q->index : 0;
	default:
		return virtio_queue_reg_read(&common_queue_regs, q, off);
	}
}

/*
 * Enable (1 only: a driver never writes 0, 4.1.4.3.2) and the vector may be
 * written any time; the rest by the core's rules. Holds vdev->lock.
 */
static void common_write_queue(struct virtio_pci *vp, struct virtio_queue *q,
			       unsigned int off, uint32_t val)
{
	if (!q)
		return;
	if (off == VIRTIO_PCI_COMMON_Q_ENABLE) {
		if (val == 1)
			virtio_queue_set_enabled(vp->vdev, q, true);
		return;
	}
	if (off == VIRTIO_PCI_COMMON_Q_MSIX) {
		q->msix_vector = pci_msix_vector(&vp->msix, val);
		return;
	}
	virtio_queue_reg_write(&common_queue_regs, q, off, val);
}

static void common_write(struct virtio_pci *vp, unsigned int off, uint32_t val)
{
	struct virtio_device *vdev = vp->vdev;

	/* These take vdev->lock themselves. */
	if (off == VIRTIO_PCI_COMMON_STATUS) {
		virtio_pci_set_status(vp, val);
		return;
	}
	if (off == VIRTIO_PCI_COMMON_GF) {
		virtio_set_guest_features(vdev, vp->guest_features_sel, val);
		return;
	}
	pthread_mutex_lock(&vdev->lock);
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:	vp->host_features_sel = val; break;
	case VIRTIO_PCI_COMMON_GFSELECT:	vp->guest_features_sel = val; break;
	case VIRTIO_PCI_COMMON_MSIX:
		vp->config_vector = pci_msix_vector(&vp->msix, val);
		break;
	case VIRTIO_PCI_COMMON_Q_SELECT:	vp->queue_sel = val; break;
	default:
		common_write_queue(vp, virtio_pci_queue(vp), off, val);
	}
	pthread_mutex_unlock(&vdev->lock);
}

static void modern_read(struct bus_dev *dev, uint64_t off, void *data,
			unsigned int len)
{
	struct virtio_pci *vp = dev->priv;
	uint32_t v;

	memset(data, 0, len);
	if (off < BAR4_ISR) {
		pthread_mutex_lock(&vp->vdev->lock);
		v = common_read(vp, off);
		pthread_mutex_unlock(&vp->vdev->lock);
		memcpy(data, &v, MIN(len, 4u));
	} else if (off == BAR4_ISR) {
		*(uint8_t *)data = virtio_pci_isr_read(vp);
	} else if (off >= BAR4_DEVICE && off < BAR4_NOTIFY) {
		virtio_config_read(vp->vdev, off - BAR4_DEVICE, data, len);
	} else if (off >= BAR4_MSIX_TABLE && off < BAR4_MSIX_PBA) {
		pthread_mutex_lock(&vp->vdev->lock);
		pci_msix_table_read(&vp->msix, off - BAR4_MSIX_TABLE, data, len);
		pthread_mutex_unlock(&vp->vdev->lock);
	} else if (off >= BAR4_MSIX_PBA) {
		pci_msix_pba_read(&vp->msix, off - BAR4_MSIX_PBA, data, len);
	}
}

static void modern_write(struct bus_dev *dev, uint64_t off, const void *data,
			 unsigned int len)
{
	struct virtio_pci *vp = dev->priv;

	if (off < BAR4_ISR) {
		common_write(vp, off, virtio_pci_value(data, len));
	} else if (off >= BAR4_DEVICE && off < BAR4_NOTIFY) {
		virtio_config_write(vp->vdev, off - BAR4_DEVICE, data, len);
	} else if (off >= BAR4_NOTIFY && off < BAR4_MSIX_TABLE) {
		virtio_queue_notify(vp->vdev,
				    (off - BAR4_NOTIFY) / NOTIFY_MULTIPLIER);
	} else if (off >= BAR4_MSIX_TABLE && off < BAR4_MSIX_PBA) {
		pthread_mutex_lock(&vp->vdev->lock);
		pci_msix_table_write(&vp->msix, off - BAR4_MSIX_TABLE, data,
				     len);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
}

const struct bus_ops virtio_pci_modern_ops = {
	.read = modern_read,
	.write = modern_write,
};
