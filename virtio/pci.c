// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-pci: a virtio device as a function on PCI bus 0, in one of two
 * flavours:
 *  - modern (virtio 1.x, 4.1): vendor capabilities pointing into a 64-bit
 *    memory BAR that holds the common config, ISR, device config, one
 *    notify address per queue and the MSI-X table and PBA (pci_modern.c,
 *    pci_msix.c);
 *  - legacy (virtio 0.9.5 register layout in an I/O BAR), for old kernels
 *    (pci_legacy.c).
 * This file makes the function: its configuration space (IDs, class,
 * capabilities), its BAR, placed as firmware would inside the window the
 * DSDT or device tree gives the host bridge and followed when the guest
 * moves it, the notify ioeventfds (datamatch = queue index) that follow
 * the BAR, and the transport's ops for the device core. Interrupts leave
 * through MSI-X (pci_msix.c: an irqfd per vector) or, without it, the
 * INTx line (pci_intx.c).
 */
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>

#include "lkvm/arch.h"
#include "lkvm/bus.h"
#include "lkvm/pci.h"
#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/virtio/transport.h"
#include "lkvm/vm.h"
#include "virtio_pci.h"

#define PCI_VENDOR_REDHAT_QUMRANET	0x1af4
#define PCI_DEVICE_MODERN_BASE		0x1040
#define PCI_COMMAND_IO			0x1
#define PCI_COMMAND_MEMORY		0x2
#define PCI_COMMAND_MASTER		0x4
#define PCI_STATUS_CAP_LIST		0x10
#define PCI_CAP_ID_VNDR			0x09

/* Config space offsets of what we put there. */
#define CFG_BAR0		0x10
#define CFG_BAR4		0x20
#define CFG_BAR5		0x24
#define CFG_CAP_PTR		0x34
#define CFG_INT_LINE		0x3c
#define CFG_INT_PIN		0x3d
#define CAP_COMMON		0x4c	/* after PCI_CFG_MSIX's 12 bytes */
#define CAP_NOTIFY		0x5c
#define CAP_ISR			0x70
#define CAP_DEVICE		0x80

/* ---- the transport's ops: interrupts and notify ioeventfds ---- */

static struct virtio_pci *to_pci(struct virtio_transport *t)
{
	return container_of(t, struct virtio_pci, transport);
}

static void pci_signal_queue(struct virtio_transport *t, struct virtio_queue *q)
{
	struct virtio_pci *vp = to_pci(t);

	if (pci_msix_enabled(&vp->msix))
		pci_msix_fire(&vp->msix, q->msix_vector);
	else
		virtio_pci_intx_raise(vp, VIRTIO_PCI_ISR_QUEUE);
}

static void pci_signal_config(struct virtio_transport *t)
{
	struct virtio_pci *vp = to_pci(t);

	if (pci_msix_enabled(&vp->msix)) {
		__atomic_fetch_or(&vp->isr, VIRTIO_PCI_ISR_CONFIG,
				  __ATOMIC_SEQ_CST);
		pci_msix_fire(&vp->msix, vp->config_vector);
	} else {
		virtio_pci_intx_raise(vp, VIRTIO_PCI_ISR_CONFIG);
	}
}

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

/* ---- the BAR, where the guest puts it ---- */

static uint64_t bar_address(const struct virtio_pci *vp)
{
	const uint8_t *cfg = vp->pdev.cfg;
	uint16_t cmd = pci_get16(cfg + PCI_CFG_COMMAND);

	if (vp->legacy)
		return (cmd & PCI_COMMAND_IO) ?
		       (pci_get32(cfg + CFG_BAR0) & 0xfffc) : 0;
	if (!(cmd & PCI_COMMAND_MEMORY))
		return 0;
	return (pci_get32(cfg + CFG_BAR4) & ~0xfULL) |
	       ((uint64_t)pci_get32(cfg + CFG_BAR5) << 32);
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

static void move_bar(struct virtio_pci *vp, uint64_t addr)
{
	struct bus *bus = vp->legacy ? &vp->vm->pio : &vp->vm->mmio;

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

/* Called under the PCI host's lock after the guest wrote config space. */
static void virtio_pci_cfg_write(struct pci_device *pdev, unsigned int offset,
				 const void *data, unsigned int len)
{
	struct virtio_pci *vp = pdev->priv;
	bool msix_control = pci_msix_control_written(&vp->msix, offset, len);
	uint64_t addr = bar_address(vp);

	if (msix_control) {
		pthread_mutex_lock(&vp->vdev->lock);
		pci_msix_deliver_pending(&vp->msix);
		pthread_mutex_unlock(&vp->vdev->lock);
	}
	/* Interrupt Disable or MSI-X Enable written: the line follows. */
	if ((offset <= PCI_CFG_COMMAND + 1 && offset + len > PCI_CFG_COMMAND) ||
	    msix_control)
		virtio_pci_intx_sync(vp);
	if (addr != vp->bar_addr)
		move_bar(vp, addr);
}

static const struct pci_device_ops virtio_pci_dev_ops = {
	.cfg_write = virtio_pci_cfg_write,
};

/* ---- configuration space ---- */

static void add_vendor_cap(uint8_t *cfg, unsigned int at, unsigned int next,
			   uint8_t type, uint32_t offset, uint32_t length,
			   unsigned int cap_len)
{
	cfg[at + 0] = PCI_CAP_ID_VNDR;
	cfg[at + 1] = next;
	cfg[at + 2] = cap_len;
	cfg[at + 3] = type;
	cfg[at + 4] = 4;	/* BAR 4 */
	pci_put32(cfg + at + 8, offset);
	pci_put32(cfg + at + 12, length);
}

static void setup_modern_caps(struct virtio_pci *vp)
{
	uint8_t *cfg = vp->pdev.cfg;

	pci_msix_add_cap(&vp->msix, &vp->pdev, CAP_COMMON, 4, BAR4_MSIX_TABLE,
			 BAR4_MSIX_PBA);
	add_vendor_cap(cfg, CAP_COMMON, CAP_NOTIFY, VIRTIO_PCI_CAP_COMMON_CFG,
		       BAR4_COMMON, 0x1000, 16);
	add_vendor_cap(cfg, CAP_NOTIFY, CAP_ISR, VIRTIO_PCI_CAP_NOTIFY_CFG,
		       BAR4_NOTIFY, 0x1000, 20);
	pci_put32(cfg + CAP_NOTIFY + 16, NOTIFY_MULTIPLIER);
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

	pci_put16(cfg + 0x00, PCI_VENDOR_REDHAT_QUMRANET);
	pci_put16(cfg + 0x02, vp->legacy ? ids.legacy_id
					 : PCI_DEVICE_MODERN_BASE + id);
	pci_put32(cfg + 0x08, (ids.class_code << 8) | (vp->legacy ? 0 : 1));
	pci_put16(cfg + 0x2c, PCI_VENDOR_REDHAT_QUMRANET);
	pci_put16(cfg + 0x2e, vp->legacy ? id : 0x1100);
	cfg[CFG_INT_LINE] = vp->intx_gsi;
	cfg[CFG_INT_PIN] = 1;	/* INTA */
	pci_put16(pdev->wmask + PCI_CFG_COMMAND,
		  PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
		  PCI_COMMAND_INTX_DISABLE);
	pdev->wmask[CFG_INT_LINE] = 0xff;
	if (vp->legacy) {
		/* INTx only: the legacy BAR has no room for an MSI-X table. */
		pci_put32(cfg + CFG_BAR0, 0x1);	/* I/O */
		pci_put32(pdev->wmask + CFG_BAR0, ~(BAR0_SIZE - 1) & 0xfffffffc);
	} else {
		pci_put16(cfg + PCI_CFG_STATUS, PCI_STATUS_CAP_LIST);
		cfg[CFG_CAP_PTR] = PCI_CFG_MSIX;
		pci_put32(cfg + CFG_BAR4, 0x4);	/* 64-bit memory */
		pci_put32(pdev->wmask + CFG_BAR4, ~(BAR4_SIZE - 1) & 0xfffffff0);
		pci_put32(pdev->wmask + CFG_BAR5, 0xffffffff);
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
		pci_put32(cfg + CFG_BAR0, (io_base + vp->slot * BAR0_SIZE) | 0x1);
		pci_put16(cfg + PCI_CFG_COMMAND, PCI_COMMAND_IO | PCI_COMMAND_MASTER);
	} else {
		uint64_t addr = mmio_base + (uint64_t)vp->slot * BAR4_SIZE;

		pci_put32(cfg + CFG_BAR4, (uint32_t)addr | 0x4);
		pci_put32(cfg + CFG_BAR5, addr >> 32);
		pci_put16(cfg + PCI_CFG_COMMAND,
			  PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	}
	virtio_pci_cfg_write(&vp->pdev, PCI_CFG_COMMAND, cfg + PCI_CFG_COMMAND, 2);
}

/*
 * Interrupts: a vector per queue and one for config changes (bus 0,
 * function 0: the requester ID is the slot's devfn), and the slot's line.
 */
static int setup_interrupts(struct virtio_pci *vp)
{
	vp->intx_gsi = arch_pci_intx_gsi(vp->slot, 0);
	pthread_mutex_init(&vp->intx_lock, NULL);
	return pci_msix_init(&vp->msix, vp->vm, &vp->pdev, PCI_CFG_MSIX,
			     (uint32_t)vp->slot << 3, vp->vdev->nr_queues + 1);
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
	vp->config_vector = PCI_MSIX_NO_VECTOR;
	vp->pdev.ops = &virtio_pci_dev_ops;
	vp->pdev.priv = vp;
	vp->bar_dev = (struct bus_dev) {
		.name = legacy ? "virtio-pci-legacy" : "virtio-pci",
		.ops = legacy ? &virtio_pci_legacy_ops : &virtio_pci_modern_ops,
		.priv = vp,
	};
	vp->transport.ops = &pci_transport_ops;
	virtio_device_attach(vdev, &vp->transport);
	vp->slot = pci_register_device(vm, &vp->pdev);
	if (vp->slot < 0 || setup_interrupts(vp)) {
		pr_err("virtio-pci: cannot set up the device's interrupts");
		return -1;
	}
	setup_config_space(vp);
	assign_bar(vp);
	return 0;
}
