// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-pci's ISR and the INTx line it drives (virtio 1.x, 4.1.4.5): the
 * line is up while the ISR has a bit set, Interrupt Disable is clear and
 * MSI-X is off, and goes down the moment the driver reads the ISR, which
 * an irqfd's level cannot follow (KVM lowers that only at EOI): so the
 * line is raised and lowered here (irq_line_hold(): shared with other
 * slots). Also what a reset of the device does to this interrupt state.
 */
#include "lkvm/irq.h"
#include "lkvm/pci.h"
#include "lkvm/virtio/device.h"
#include "virtio_pci.h"

/* PCI Status bit 3 mirrors the line's source: a pending ISR bit. */
#define PCI_STATUS_INTERRUPT	0x08

static void update_status(struct virtio_pci *vp)
{
	uint8_t *status = vp->pdev.cfg + PCI_CFG_STATUS;

	if (__atomic_load_n(&vp->isr, __ATOMIC_SEQ_CST))
		__atomic_fetch_or(status, PCI_STATUS_INTERRUPT, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(status, (uint8_t)~PCI_STATUS_INTERRUPT,
				   __ATOMIC_SEQ_CST);
}

static bool intx_disabled(const struct virtio_pci *vp)
{
	return pci_get16(vp->pdev.cfg + PCI_CFG_COMMAND) &
	       PCI_COMMAND_INTX_DISABLE;
}

/* Caller holds intx_lock. */
static void sync_line(struct virtio_pci *vp)
{
	bool up = __atomic_load_n(&vp->isr, __ATOMIC_SEQ_CST) &&
		  !intx_disabled(vp) && !pci_msix_enabled(&vp->msix);

	update_status(vp);
	irq_line_hold(vp->vm, vp->intx_gsi, &vp->intx_held, up);
}

void virtio_pci_intx_sync(struct virtio_pci *vp)
{
	pthread_mutex_lock(&vp->intx_lock);
	sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
}

void virtio_pci_intx_raise(struct virtio_pci *vp, uint32_t why)
{
	pthread_mutex_lock(&vp->intx_lock);
	__atomic_fetch_or(&vp->isr, why, __ATOMIC_SEQ_CST);
	sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
}

uint8_t virtio_pci_isr_read(struct virtio_pci *vp)
{
	uint8_t isr;

	pthread_mutex_lock(&vp->intx_lock);
	isr = __atomic_exchange_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
	sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
	return isr;
}

/* A device reset forgets the function's interrupt state as well. */
static void interrupts_reset(struct virtio_pci *vp)
{
	vp->config_vector = PCI_MSIX_NO_VECTOR;
	pci_msix_reset(&vp->msix);
	pthread_mutex_lock(&vp->intx_lock);
	__atomic_store_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
	sync_line(vp);
	pthread_mutex_unlock(&vp->intx_lock);
}

void virtio_pci_set_status(struct virtio_pci *vp, uint8_t status)
{
	virtio_set_status(vp->vdev, status);
	if (!status)
		interrupts_reset(vp);
}
