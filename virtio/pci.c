// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-pci. Two flavours of one PCI function:
 *  - modern (virtio 1.x, 4.1): vendor capabilities pointing into a 64-bit
 *    memory BAR that holds the common config, ISR, device config, one
 *    notify address per queue and the MSI-X table and PBA;
 *  - legacy (virtio 0.9.5 register layout in an I/O BAR), for old kernels.
 * Every notify address is bound to an ioeventfd (datamatch = queue index),
 * MSI-X interrupts leave through irqfds, one per vector (GSI routes that
 * follow the table). INTx is a level-triggered line shared with other
 * slots (irq_line_hold()): up while the ISR has a bit set, down the moment
 * the guest reads it (4.1.4.5), which an irqfd's level cannot follow (KVM
 * lowers that only at EOI).
 *
 * BARs are assigned here, as firmware would, inside the window the DSDT
 * gives the host bridge; a guest may move them, and the BAR regions and
 * ioeventfds follow.
 */
#include <errno.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/bus.h"
#include "lkvm/irq.h"
#include "lkvm/pci.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/vm.h"

#define PCI_VENDOR_REDHAT_QUMRANET	0x1af4
#define PCI_DEVICE_MODERN_BASE		0x1040
#define PCI_STATUS_CAP_LIST		0x10
#define PCI_COMMAND_IO			0x1
#define PCI_COMMAND_MEMORY		0x2
#define PCI_COMMAND_MASTER		0x4
#define PCI_COMMAND_INTX_DISABLE	0x400
#define PCI_CAP_ID_MSIX			0x11
#define PCI_CAP_ID_VNDR			0x09
#define MSIX_CTRL_ENABLE		0x8000
#define MSIX_CTRL_MASKALL		0x4000
#define MSIX_ENTRY_MASKED		0x1
#define VIRTIO_NO_VECTOR		0xffff
#define VIRTIO_PCI_ISR_QUEUE		0x1

/* Config space offsets of what we put there. */
#define CFG_BAR0		0x10
#define CFG_BAR4		0x20
#define CFG_BAR5		0x24
#define CFG_CAP_PTR		0x34
#define CFG_INT_LINE		0x3c
#define CFG_INT_PIN		0x3d
#define CAP_MSIX		0x40
#define CAP_COMMON		0x4c
#define CAP_NOTIFY		0x5c
#define CAP_ISR			0x70
#define CAP_DEVICE		0x80

/* The modern BAR (BAR 4): 32 KiB. */
#define BAR4_SIZE		0x8000
#define BAR4_COMMON		0x0000
#define BAR4_ISR		0x1000
#define BAR4_DEVICE		0x2000
#define BAR4_NOTIFY		0x3000
#define BAR4_MSIX_TABLE		0x4000
#define BAR4_MSIX_PBA		0x6000
#define NOTIFY_MULTIPLIER	4
/* The legacy BAR (BAR 0): registers, then device config. */
#define BAR0_SIZE		0x100

#define MSIX_MAX_VECTORS	(VIRTIO_MAX_QUEUES + 1)

struct msix_entry {
	uint32_t addr_lo;
	uint32_t addr_hi;
	uint32_t data;
	uint32_t ctrl;
};

/*
 * Everything below is guarded by vdev->lock, except isr and the pending
 * bits (atomics: set from the I/O thread, cleared by vCPUs).
 */
struct virtio_pci {
	struct virtio_transport transport;
	struct pci_device pdev;
	struct virtio_device *vdev;
	struct vm *vm;
	bool legacy;
	int slot;

	struct bus_dev bar_dev;		/* BAR 4 (modern) or BAR 0 (legacy) */
	uint64_t bar_addr;		/* where it is mapped; 0: not mapped */
	uint32_t bar_size;

	uint32_t host_features_sel;
	uint32_t guest_features_sel;
	uint16_t queue_sel;
	uint16_t config_vector;
	uint32_t isr;

	unsigned int nr_vectors;
	struct msix_entry msix[MSIX_MAX_VECTORS];
	uint64_t msix_pending;		/* PBA: one bit per vector (< 64) */
	int vector_gsi[MSIX_MAX_VECTORS];
	int vector_fd[MSIX_MAX_VECTORS];

	uint32_t intx_gsi;
	/*
	 * The line follows isr, the Interrupt Disable bit and MSI-X; intx_lock
	 * makes each change of those and the line's one step (I/O threads
	 * raise, vCPU threads read the ISR and write the command register).
	 */
	pthread_mutex_t intx_lock;
	bool intx_held;
};

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static bool msix_enabled(const struct virtio_pci *vp)
{
	return get16(vp->pdev.cfg + CAP_MSIX + 2) & MSIX_CTRL_ENABLE;
}

static bool msix_masked_all(const struct virtio_pci *vp)
{
	return get16(vp->pdev.cfg + CAP_MSIX + 2) & MSIX_CTRL_MASKALL;
}

/* ---- interrupts ---- */

static void eventfd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn_once("virtio-pci: irqfd: %s", strerror(errno));
}

static bool msix_vector_masked(const struct virtio_pci *vp, uint16_t vector)
{
	return msix_masked_all(vp) ||
	       (__atomic_load_n(&vp->msix[vector].ctrl, __ATOMIC_SEQ_CST) &
		MSIX_ENTRY_MASKED);
}

/* Deliver a pending vector if it is still pending: whoever clears wins. */
static void msix_claim_pending(struct virtio_pci *vp, uint16_t vector)
{
	uint64_t bit = 1ULL << vector;

	if (__atomic_fetch_and(&vp->msix_pending, ~bit, __ATOMIC_SEQ_CST) & bit)
		eventfd_signal(vp->vector_fd[vector]);
}

/*
 * Runs on the I/O thread under the queue's lock only, racing with a vCPU
 * that unmasks under vdev->lock: after marking the vector pending, look at
 * the mask again, so an unmask in between cannot strand the message.
 */
static void msix_fire(struct virtio_pci *vp, uint16_t vector)
{
	if (vector >= vp->nr_vectors)
		return;
	if (!msix_vector_masked(vp, vector)) {
		eventfd_signal(vp->vector_fd[vector]);
		return;
	}
	__atomic_fetch_or(&vp->msix_pending, 1ULL << vector, __ATOMIC_SEQ_CST);
	if (!msix_vector_masked(vp, vector))
		msix_claim_pending(vp, vector);
}

/* PCI Status bit 3 mirrors the INTx line's source: a pending ISR bit. */
#define PCI_STATUS_INTERRUPT		0x08

static void intx_update_status(struct virtio_pci *vp)
{
	uint8_t *status = vp->pdev.cfg + 0x06;

	if (__atomic_load_n(&vp->isr, __ATOMIC_SEQ_CST))
		__atomic_fetch_or(status, PCI_STATUS_INTERRUPT, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(status, (uint8_t)~PCI_STATUS_INTERRUPT,
				   __ATOMIC_SEQ_CST);
}

static bool intx_disabled(const struct virtio_pci *vp)
{
	return get16(vp->pdev.cfg + 0x04) & PCI_COMMAND_INTX_DISABLE;
}

/* Caller holds intx_lock. */
static void intx_sync_line(struct virtio_pci *vp)
{
	bool up = __atomic_load_n(&vp->isr, __ATOMIC_SEQ_CST) &&
		  !intx_disabled(vp) && !msix_enabled(vp);

	intx_update_status(vp);
	irq_line_hold(vp->vm, vp->intx_gsi, &vp->intx_held, up);
}

static void intx_raise(struct virtio_pci *vp, uint32_t why)
{
	pthread_mutex_lock(&vp->intx_lock);
	__atomic_fetch_or(&vp->isr, why, __ATOMIC_SEQ_CST);
	intx_sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
}

/* Reading the ISR acknowledges it, and the line goes down with it. */
static uint8_t isr_read_and_clear(struct virtio_pci *vp)
{
	uint8_t isr;

	pthread_mutex_lock(&vp->intx_lock);
	isr = __atomic_exchange_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
	intx_sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
	return isr;
}

static struct virtio_pci *to_pci(struct virtio_transport *t)
{
	return container_of(t, struct virtio_pci, transport);
}

static void pci_signal_queue(struct virtio_transport *t, struct virtio_queue *q)
{
	struct virtio_pci *vp = to_pci(t);

	if (msix_enabled(vp))
		msix_fire(vp, q->msix_vector);
	else
		intx_raise(vp, VIRTIO_PCI_ISR_QUEUE);
}

static void pci_signal_config(struct virtio_transport *t)
{
	struct virtio_pci *vp = to_pci(t);

	if (msix_enabled(vp)) {
		__atomic_fetch_or(&vp->isr, VIRTIO_PCI_ISR_CONFIG,
				  __ATOMIC_SEQ_CST);
		msix_fire(vp, vp->config_vector);
	} else {
		intx_raise(vp, VIRTIO_PCI_ISR_CONFIG);
	}
}

/* Bus 0, function 0: the requester ID is the slot's devfn. */
static uint32_t pci_requester_id(const struct virtio_pci *vp)
{
	return (uint32_t)vp->slot << 3;
}

/* A table entry changed: route its GSI to the new address and data. */
static void msix_update_route(struct virtio_pci *vp, unsigned int v)
{
	const struct msix_entry *e = &vp->msix[v];

	irq_msi_route_update(vp->vm, vp->vector_gsi[v], pci_requester_id(vp),
			     ((uint64_t)e->addr_hi << 32) | e->addr_lo, e->data);
}

static void msix_deliver_pending(struct virtio_pci *vp)
{
	unsigned int v;

	if (!msix_enabled(vp))
		return;
	for (v = 0; v < vp->nr_vectors; v++)
		if (!msix_vector_masked(vp, v))
			msix_claim_pending(vp, v);
}

static void msix_table_write(struct virtio_pci *vp, uint64_t off,
			     const void *data, unsigned int len)
{
	unsigned int v = off / sizeof(struct msix_entry);
	unsigned int field = off % sizeof(struct msix_entry);

	if (v >= vp->nr_vectors || (len != 4 && len != 8) || field % 4 ||
	    field + len > sizeof(struct msix_entry))
		return;
	if (field == 12 && len == 4)
		__atomic_store_n(&vp->msix[v].ctrl, *(const uint32_t *)data,
				 __ATOMIC_SEQ_CST);
	else
		memcpy((uint8_t *)&vp->msix[v] + field, data, len);
	if (field < 12)
		msix_update_route(vp, v);
	msix_deliver_pending(vp);
}

static void msix_table_read(struct virtio_pci *vp, uint64_t off, void *data,
			    unsigned int len)
{
	unsigned int v = off / sizeof(struct msix_entry);
	unsigned int field = off % sizeof(struct msix_entry);

	memset(data, 0, len);
	if (v < vp->nr_vectors && field + len <= sizeof(struct msix_entry))
		memcpy(data, (uint8_t *)&vp->msix[v] + field, len);
}

/* A device reset forgets the transport's interrupt state as well. */
static void virtio_pci_reset(struct virtio_pci *vp)
{
	vp->config_vector = VIRTIO_NO_VECTOR;
	__atomic_store_n(&vp->msix_pending, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&vp->intx_lock);
	__atomic_store_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
	intx_sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
}

/*
 * The status register is one byte: a wider write's upper bytes are not
 * part of it, and a 0 in it resets the device and the transport alike.
 */
static void pci_set_status(struct virtio_pci *vp, uint8_t status)
{
	virtio_set_status(vp->vdev, status);
	if (!status)
		virtio_pci_reset(vp);
}

/* ---- notify addresses and ioeventfds ---- */

static uint64_t notify_addr(const struct virtio_pci *vp, unsigned int index)
{
	if (vp->legacy)
		return vp->bar_addr + VIRTIO_PCI_QUEUE_NOTIFY;
	return vp->bar_addr + BAR4_NOTIFY + index * NOTIFY_MULTIPLIER;
}

static int pci_ioeventfd(struct virtio_pci *vp, struct virtio_queue *q,
			 bool assign)
{
	if (!vp->bar_addr)
		return 0;	/* not mapped: kicks cannot happen */
	return vm_ioeventfd(vp->vm, notify_addr(vp, q->index), 2, vp->legacy,
			    q->index, q->kick_fd, assign);
}

static int pci_kick_attach(struct virtio_transport *t, struct virtio_queue *q)
{
	return pci_ioeventfd(to_pci(t), q, true);
}

static void pci_kick_detach(struct virtio_transport *t, struct virtio_queue *q)
{
	pci_ioeventfd(to_pci(t), q, false);
}

static const struct virtio_transport_ops pci_transport_ops = {
	.kick_attach = pci_kick_attach,
	.kick_detach = pci_kick_detach,
	.signal_queue = pci_signal_queue,
	.signal_config = pci_signal_config,
};

/* ---- the modern BAR ---- */

static const struct virtio_queue_regs common_queue_regs = {
	.size = VIRTIO_PCI_COMMON_Q_SIZE,
	.desc = VIRTIO_PCI_COMMON_Q_DESCLO,
	.driver = VIRTIO_PCI_COMMON_Q_AVAILLO,
	.device = VIRTIO_PCI_COMMON_Q_USEDLO,
};

static struct virtio_queue *selected_queue(struct virtio_pci *vp)
{
	return virtio_queue_at(vp->vdev, vp->queue_sel);
}

/* Caller holds vdev->lock. */
static uint32_t common_read(struct virtio_pci *vp, unsigned int off)
{
	struct virtio_device *vdev = vp->vdev;
	struct virtio_queue *q = selected_queue(vp);

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
		return q ? q->msix_vector : VIRTIO_NO_VECTOR;
	case VIRTIO_PCI_COMMON_Q_ENABLE:	return q ? q->enabled : 0;
	case VIRTIO_PCI_COMMON_Q_NOFF:		return q ? q->index : 0;
	default:
		return virtio_queue_reg_read(&common_queue_regs, q, off);
	}
}

static uint16_t valid_vector(const struct virtio_pci *vp, uint32_t v)
{
	return v < vp->nr_vectors ? v : VIRTIO_NO_VECTOR;
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
		q->msix_vector = valid_vector(vp, val);
		return;
	}
	virtio_queue_reg_write(&common_queue_regs, q, off, val);
}

static void common_write(struct virtio_pci *vp, unsigned int off, uint32_t val)
{
	struct virtio_device *vdev = vp->vdev;

	/* These take vdev->lock themselves. */
	if (off == VIRTIO_PCI_COMMON_STATUS) {
		pci_set_status(vp, val);
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
	case VIRTIO_PCI_COMMON_MSIX:	vp->config_vector = valid_vector(vp, val); break;
	case VIRTIO_PCI_COMMON_Q_SELECT:	vp->queue_sel = val; break;
	default:
		common_write_queue(vp, selected_queue(vp), off, val);
	}
	pthread_mutex_unlock(&vdev->lock);
}

static uint32_t read_value(const void *data, unsigned int len)
{
	uint32_t v = 0;

	memcpy(&v, data, MIN(len, 4u));
	return v;
}

static void modern_read(struct virtio_pci *vp, uint64_t off, void *data,
			unsigned int len)
{
	uint32_t v;

	memset(data, 0, len);
	if (off < BAR4_ISR) {
		pthread_mutex_lock(&vp->vdev->lock);
		v = common_read(vp, off);
		pthread_mutex_unlock(&vp->vdev->lock);
		memcpy(data, &v, MIN(len, 4u));
	} else if (off == BAR4_ISR) {
		*(uint8_t *)data = isr_read_and_clear(vp);
	} else if (off >= BAR4_DEVICE && off < BAR4_NOTIFY) {
		virtio_config_read(vp->vdev, off - BAR4_DEVICE, data, len);
	} else if (off >= BAR4_MSIX_TABLE && off < BAR4_MSIX_PBA) {
		pthread_mutex_lock(&vp->vdev->lock);
		msix_table_read(vp, off - BAR4_MSIX_TABLE, data, len);
		pthread_mutex_unlock(&vp->vdev->lock);
	} else if (off >= BAR4_MSIX_PBA && off < BAR4_MSIX_PBA + 8) {
		uint64_t pba = __atomic_load_n(&vp->msix_pending, __ATOMIC_SEQ_CST);
		unsigned int byte = off - BAR4_MSIX_PBA;

		memcpy(data, (uint8_t *)&pba + byte, MIN(len, 8 - byte));
	}
}

static void modern_write(struct virtio_pci *vp, uint64_t off,
			 const void *data, unsigned int len)
{
	if (off < BAR4_ISR) {
		common_write(vp, off, read_value(data, len));
	} else if (off >= BAR4_DEVICE && off < BAR4_NOTIFY) {
		virtio_config_write(vp->vdev, off - BAR4_DEVICE, data, len);
	} else if (off >= BAR4_NOTIFY && off < BAR4_MSIX_TABLE) {
		virtio_queue_notify(vp->vdev, (off - BAR4_NOTIFY) / NOTIFY_MULTIPLIER);
	} else if (off >= BAR4_MSIX_TABLE && off < BAR4_MSIX_PBA) {
		pthread_mutex_lock(&vp->vdev->lock);
		msix_table_write(vp, off - BAR4_MSIX_TABLE, data, len);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
}

/* ---- the legacy I/O BAR ---- */

static unsigned int legacy_config_offset(const struct virtio_pci *vp)
{
	return VIRTIO_PCI_CONFIG_OFF(msix_enabled(vp));
}

static uint32_t legacy_read_reg(struct virtio_pci *vp, uint64_t off)
{
	struct virtio_queue *q = selected_queue(vp);

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
	case VIRTIO_MSI_QUEUE_VECTOR:	return q ? q->msix_vector : VIRTIO_NO_VECTOR;
	default:			return 0;
	}
}

/* The legacy ring layout: avail after desc, used on the next 4 KiB. */
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

static void legacy_write_reg(struct virtio_pci *vp, uint64_t off, uint32_t val)
{
	struct virtio_queue *q = selected_queue(vp);

	switch (off) {
	case VIRTIO_PCI_QUEUE_PFN:
		if (q)
			legacy_set_pfn(vp, q, val);
		break;
	case VIRTIO_PCI_QUEUE_SEL:
		vp->queue_sel = val;
		break;
	case VIRTIO_MSI_CONFIG_VECTOR:
		vp->config_vector = valid_vector(vp, val);
		break;
	case VIRTIO_MSI_QUEUE_VECTOR:
		if (q)
			q->msix_vector = valid_vector(vp, val);
		break;
	}
}

static void legacy_read(struct virtio_pci *vp, uint64_t off, void *data,
			unsigned int len)
{
	unsigned int cfg = legacy_config_offset(vp);
	uint32_t v;

	memset(data, 0, len);
	if (off >= cfg) {
		virtio_config_read(vp->vdev, off - cfg, data, len);
		return;
	}
	if (off == VIRTIO_PCI_ISR) {
		*(uint8_t *)data = isr_read_and_clear(vp);
		return;
	}
	pthread_mutex_lock(&vp->vdev->lock);
	v = legacy_read_reg(vp, off);
	pthread_mutex_unlock(&vp->vdev->lock);
	memcpy(data, &v, MIN(len, 4u));
}

static void legacy_write(struct virtio_pci *vp, uint64_t off, const void *data,
			 unsigned int len)
{
	unsigned int cfg = legacy_config_offset(vp);
	uint32_t v = read_value(data, len);

	if (off >= cfg) {
		virtio_config_write(vp->vdev, off - cfg, data, len);
	} else if (off == VIRTIO_PCI_QUEUE_NOTIFY) {
		virtio_queue_notify(vp->vdev, v);
	} else if (off == VIRTIO_PCI_STATUS) {
		pci_set_status(vp, v);
	} else if (off == VIRTIO_PCI_GUEST_FEATURES) {
		virtio_set_guest_features(vp->vdev, 0, v);
	} else {
		pthread_mutex_lock(&vp->vdev->lock);
		legacy_write_reg(vp, off, v);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
}

static void bar_read(struct bus_dev *dev, uint64_t off, void *data,
		     unsigned int len)
{
	struct virtio_pci *vp = dev->priv;

	if (vp->legacy)
		legacy_read(vp, off, data, len);
	else
		modern_read(vp, off, data, len);
}

static void bar_write(struct bus_dev *dev, uint64_t off, const void *data,
		      unsigned int len)
{
	struct virtio_pci *vp = dev->priv;

	if (vp->legacy)
		legacy_write(vp, off, data, len);
	else
		modern_write(vp, off, data, len);
}

static const struct bus_ops bar_ops = {
	.read = bar_read,
	.write = bar_write,
};

/* ---- configuration space ---- */

static uint64_t bar_address(const struct virtio_pci *vp)
{
	const uint8_t *cfg = vp->pdev.cfg;
	uint16_t cmd = get16(cfg + 0x04);

	if (vp->legacy)
		return (cmd & PCI_COMMAND_IO) ?
		       (get32(cfg + CFG_BAR0) & 0xfffc) : 0;
	if (!(cmd & PCI_COMMAND_MEMORY))
		return 0;
	return (get32(cfg + CFG_BAR4) & ~0xfULL) |
	       ((uint64_t)get32(cfg + CFG_BAR5) << 32);
}

/* Caller holds vdev->lock. */
static void bind_live_queues(struct virtio_pci *vp, bool assign)
{
	struct virtio_device *vdev = vp->vdev;
	unsigned int i;

	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		pthread_mutex_lock(&q->lock);
		if (q->live && vdev->use_ioeventfd)
			pci_ioeventfd(vp, q, assign);
		pthread_mutex_unlock(&q->lock);
	}
}

/* Move every live queue's ioeventfd along with its BAR. */
static void move_ioeventfds(struct virtio_pci *vp, uint64_t addr)
{
	pthread_mutex_lock(&vp->vdev->lock);
	bind_live_queues(vp, false);
	vp->bar_addr = addr;
	bind_live_queues(vp, true);
	pthread_mutex_unlock(&vp->vdev->lock);
}

/* Called under the PCI host's lock after the guest wrote config space. */
static void virtio_pci_cfg_write(struct pci_device *pdev, unsigned int offset,
				 const void *data, unsigned int len)
{
	struct virtio_pci *vp = pdev->priv;
	struct bus *bus = vp->legacy ? &vp->vm->pio : &vp->vm->mmio;
	uint64_t addr = bar_address(vp);

	if (offset <= CAP_MSIX + 3 && offset + len > CAP_MSIX + 2) {
		pthread_mutex_lock(&vp->vdev->lock);
		msix_deliver_pending(vp);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
	/* Interrupt Disable or MSI-X Enable written: the line follows. */
	if ((offset <= 0x05 && offset + len > 0x04) ||
	    (offset <= CAP_MSIX + 3 && offset + len > CAP_MSIX + 2)) {
		pthread_mutex_lock(&vp->intx_lock);
		intx_sync_line(vp);
		pthread_mutex_unlock(&vp->intx_lock);
	}
	if (addr == vp->bar_addr)
		return;
	if (vp->bar_addr)
		bus_unregister(bus, vp->bar_addr);
	/* on another device, or wrapping past 2^64: not decoded at all */
	if (addr && bus_claim(bus, addr, vp->bar_size, &vp->bar_dev)) {
		pr_debug("virtio-pci: 00:%02x.0: BAR at %#llx not decoded: it clashes",
			 vp->slot, (unsigned long long)addr);
		addr = 0;
	}
	move_ioeventfds(vp, addr);
}

static const struct pci_device_ops virtio_pci_dev_ops = {
	.cfg_write = virtio_pci_cfg_write,
};

static void cfg_wmask32(struct pci_device *pdev, unsigned int off, uint32_t m)
{
	put32(pdev->wmask + off, m);
}

static void add_vendor_cap(uint8_t *cfg, unsigned int at, unsigned int next,
			   uint8_t type, uint32_t offset, uint32_t length,
			   unsigned int cap_len)
{
	cfg[at + 0] = PCI_CAP_ID_VNDR;
	cfg[at + 1] = next;
	cfg[at + 2] = cap_len;
	cfg[at + 3] = type;
	cfg[at + 4] = 4;	/* BAR 4 */
	put32(cfg + at + 8, offset);
	put32(cfg + at + 12, length);
}

static void setup_msix_cap(struct virtio_pci *vp, unsigned int next)
{
	uint8_t *cfg = vp->pdev.cfg;
	uint8_t bir = 4;

	cfg[CAP_MSIX] = PCI_CAP_ID_MSIX;
	cfg[CAP_MSIX + 1] = next;
	put16(cfg + CAP_MSIX + 2, vp->nr_vectors - 1);
	put32(cfg + CAP_MSIX + 4, BAR4_MSIX_TABLE | bir);
	put32(cfg + CAP_MSIX + 8, BAR4_MSIX_PBA | bir);
	vp->pdev.wmask[CAP_MSIX + 3] = 0xc0;	/* enable, function mask */
}

static void setup_modern_caps(struct virtio_pci *vp)
{
	uint8_t *cfg = vp->pdev.cfg;

	setup_msix_cap(vp, CAP_COMMON);
	add_vendor_cap(cfg, CAP_COMMON, CAP_NOTIFY, VIRTIO_PCI_CAP_COMMON_CFG,
		       BAR4_COMMON, 0x1000, 16);
	add_vendor_cap(cfg, CAP_NOTIFY, CAP_ISR, VIRTIO_PCI_CAP_NOTIFY_CFG,
		       BAR4_NOTIFY, 0x1000, 20);
	put32(cfg + CAP_NOTIFY + 16, NOTIFY_MULTIPLIER);
	add_vendor_cap(cfg, CAP_ISR, CAP_DEVICE, VIRTIO_PCI_CAP_ISR_CFG,
		       BAR4_ISR, 0x1000, 16);
	add_vendor_cap(cfg, CAP_DEVICE, 0, VIRTIO_PCI_CAP_DEVICE_CFG,
		       BAR4_DEVICE, 0x1000, 16);
}

/*
 * What the function says it is, by the device's type: its transitional
 * device ID (virtio 1.x, 4.1.2.1: not a formula) and its class code.
 */
static const struct virtio_pci_id {
	uint32_t device_id;
	uint16_t legacy_id;
	uint32_t class_code;
} virtio_pci_ids[] = {
	{ VIRTIO_ID_NET,	0x1000, 0x020000 },	/* network */
	{ VIRTIO_ID_BLOCK,	0x1001, 0x010000 },	/* mass storage */
	{ VIRTIO_ID_BALLOON,	0x1002, 0xff0000 },
	{ VIRTIO_ID_CONSOLE,	0x1003, 0x078000 },	/* communication */
	{ VIRTIO_ID_SCSI,	0x1004, 0x010000 },
	{ VIRTIO_ID_RNG,	0x1005, 0xff0000 },
	{ VIRTIO_ID_9P,		0x1009, 0xff0000 },
};

static struct virtio_pci_id pci_id_of(uint32_t device_id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(virtio_pci_ids); i++)
		if (virtio_pci_ids[i].device_id == device_id)
			return virtio_pci_ids[i];
	/* the last of the transitional range; "unclassified" */
	return (struct virtio_pci_id) { device_id, 0x103f, 0xff0000 };
}

static void setup_config_space(struct virtio_pci *vp)
{
	struct pci_device *pdev = &vp->pdev;
	uint8_t *cfg = pdev->cfg;
	uint32_t id = vp->vdev->ops->device_id;
	struct virtio_pci_id ids = pci_id_of(id);

	put16(cfg + 0x00, PCI_VENDOR_REDHAT_QUMRANET);
	put16(cfg + 0x02, vp->legacy ? ids.legacy_id
				     : PCI_DEVICE_MODERN_BASE + id);
	put32(cfg + 0x08, (ids.class_code << 8) | (vp->legacy ? 0 : 1));
	put16(cfg + 0x2c, PCI_VENDOR_REDHAT_QUMRANET);
	put16(cfg + 0x2e, vp->legacy ? id : 0x1100);
	cfg[CFG_INT_LINE] = vp->intx_gsi;
	cfg[CFG_INT_PIN] = 1;	/* INTA */
	put16(pdev->wmask + 0x04, PCI_COMMAND_IO | PCI_COMMAND_MEMORY |
				  PCI_COMMAND_MASTER | PCI_COMMAND_INTX_DISABLE);
	pdev->wmask[CFG_INT_LINE] = 0xff;
	if (vp->legacy) {
		/* INTx only: the legacy BAR has no room for an MSI-X table. */
		put32(cfg + CFG_BAR0, 0x1);	/* I/O */
		cfg_wmask32(pdev, CFG_BAR0, ~(BAR0_SIZE - 1) & 0xfffffffc);
	} else {
		put16(cfg + 0x06, PCI_STATUS_CAP_LIST);
		cfg[CFG_CAP_PTR] = CAP_MSIX;
		put32(cfg + CFG_BAR4, 0x4);	/* 64-bit memory */
		cfg_wmask32(pdev, CFG_BAR4, ~(BAR4_SIZE - 1) & 0xfffffff0);
		cfg_wmask32(pdev, CFG_BAR5, 0xffffffff);
		setup_modern_caps(vp);
	}
}

/* Assign the BAR as firmware would and turn decoding on. */
static void assign_bar(struct virtio_pci *vp)
{
	uint64_t mmio_base, io_base;
	uint8_t *cfg = vp->pdev.cfg;

	arch_pci_bar_window(&mmio_base, &io_base);
	if (vp->legacy) {
		put32(cfg + CFG_BAR0, (io_base + vp->slot * BAR0_SIZE) | 0x1);
		put16(cfg + 0x04, PCI_COMMAND_IO | PCI_COMMAND_MASTER);
	} else {
		uint64_t addr = mmio_base + (uint64_t)vp->slot * BAR4_SIZE;

		put32(cfg + CFG_BAR4, (uint32_t)addr | 0x4);
		put32(cfg + CFG_BAR5, addr >> 32);
		put16(cfg + 0x04, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	}
	virtio_pci_cfg_write(&vp->pdev, 0x04, cfg + 0x04, 2);
}

static int setup_vectors(struct virtio_pci *vp)
{
	unsigned int v;

	vp->nr_vectors = MIN(vp->vdev->nr_queues + 1u, 64u);
	for (v = 0; v < vp->nr_vectors; v++) {
		vp->msix[v].ctrl = MSIX_ENTRY_MASKED;
		vp->vector_fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		vp->vector_gsi[v] = irq_msi_route_add(vp->vm,
						      pci_requester_id(vp), 0, 0);
		if (vp->vector_fd[v] < 0 || vp->vector_gsi[v] < 0 ||
		    irqfd_attach(vp->vm, vp->vector_fd[v], vp->vector_gsi[v], -1))
			return -1;
	}
	return 0;
}

static int setup_intx(struct virtio_pci *vp)
{
	vp->intx_gsi = arch_pci_intx_gsi(vp->slot, 0);
	pthread_mutex_init(&vp->intx_lock, NULL);
	return 0;
}

int virtio_pci_create(struct vm *vm, struct virtio_device *vdev, bool legacy)
{
	struct virtio_pci *vp = vm_zalloc(vm, sizeof(*vp));

	if (!vp)
		return -1;
	vp->vm = vm;
	vp->vdev = vdev;
	vp->legacy = legacy;
	vp->bar_size = legacy ? BAR0_SIZE : BAR4_SIZE;
	vp->config_vector = VIRTIO_NO_VECTOR;
	vp->pdev.ops = &virtio_pci_dev_ops;
	vp->pdev.priv = vp;
	vp->bar_dev = (struct bus_dev) {
		.name = legacy ? "virtio-pci-legacy" : "virtio-pci",
		.ops = &bar_ops, .priv = vp,
	};
	vp->transport.ops = &pci_transport_ops;
	virtio_device_attach(vdev, &vp->transport);
	vp->slot = pci_register_device(vm, &vp->pdev);
	if (vp->slot < 0 || setup_vectors(vp) || setup_intx(vp)) {
		pr_err("virtio-pci: cannot set up the device's interrupts");
		return -1;
	}
	setup_config_space(vp);
	assign_bar(vp);
	return 0;
}
