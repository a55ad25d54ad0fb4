// SPDX-License-Identifier: GPL-2.0
/*
 * PCI host bridge, reached one of two ways: configuration mechanism #1
 * (the PC), or ECAM (the arm64 board's pci-host-ecam-generic). With
 * mechanism #1 the address register at 0xcf8 reads back what was written
 * (Linux's type-1 probe relies on it) and the data window at 0xcfc-0xcff
 * reaches the configuration space of the addressed function; with ECAM
 * every function's space has its own 4 KiB in a memory window, at
 * bus << 20 | device << 15 | function << 12. Absent functions read as
 * all-ones, so bus scans end quickly. Slot 0 is the host bridge itself,
 * which also satisfies the kernel's sanity check of mechanism #1.
 */
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/pci.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define PCI_CONFIG_ENABLE	0x80000000u
#define PCI_VENDOR_ID		0x00
#define PCI_DEVICE_ID		0x02
#define PCI_COMMAND		0x04
#define PCI_CLASS_REVISION	0x08
#define PCI_HEADER_TYPE		0x0e
#define PCI_SUBSYSTEM_VENDOR_ID	0x2c
#define PCI_SUBSYSTEM_ID	0x2e

/* Red Hat's vendor ID with the device ID of a generic host bridge. */
#define HOST_BRIDGE_VENDOR	0x1b36
#define HOST_BRIDGE_DEVICE	0x0008
#define PCI_CLASS_BRIDGE_HOST	0x060000

/*
 * Registered before the vCPUs start (devices[] then only grows under
 * lock); config accesses come from vCPU threads under `lock`.
 */
struct pci_host {
	struct bus_dev dev;		/* mechanism #1 ports, or the ECAM */
	pthread_mutex_t lock;
	uint32_t address;
	struct pci_device *devices[PCI_MAX_DEVICES];
	struct pci_device bridge;
};


/* Only bus 0 and function 0 exist. */
static struct pci_device *pci_function(struct pci_host *h, unsigned int bus,
				       unsigned int slot, unsigned int fn)
{
	return bus || fn ? NULL : h->devices[slot & 0x1f];
}

static struct pci_device *pci_addressed(struct pci_host *h,
					unsigned int *reg)
{
	uint32_t a = h->address;

	if (!(a & PCI_CONFIG_ENABLE))
		return NULL;
	*reg = a & 0xfc;
	return pci_function(h, (a >> 16) & 0xff, (a >> 11) & 0x1f,
			    (a >> 8) & 0x7);
}

/* Caller holds h->lock; reg and len come from the guest. */
static void pci_cfg_read(struct pci_device *pdev, uint64_t reg, void *data,
			 unsigned int len)
{
	if (!pdev || reg >= PCI_CFG_SIZE || len > PCI_CFG_SIZE - reg) {
		memset(data, 0xff, len);
		return;
	}
	memcpy(data, pdev->cfg + reg, len);
}

static void pci_cfg_write(struct pci_device *pdev, uint64_t reg,
			  const void *data, unsigned int len)
{
	const uint8_t *src = data;
	unsigned int i;

	if (!pdev || reg >= PCI_CFG_SIZE || len > PCI_CFG_SIZE - reg)
		return;
	for (i = 0; i < len; i++) {
		uint8_t m = pdev->wmask[reg + i];

		/*
		 * A read-only byte is not even stored back: the device may
		 * change it meanwhile from another thread (the Status
		 * register's interrupt bit, atomically, from an I/O thread),
		 * and a write of what was read would undo that.
		 */
		if (m)
			pdev->cfg[reg + i] = (pdev->cfg[reg + i] & ~m) |
					     (src[i] & m);
	}
	if (pdev->ops && pdev->ops->cfg_write)
		pdev->ops->cfg_write(pdev, reg, data, len);
}

static void pci_data_read(struct pci_host *h, unsigned int byte, void *data,
			  unsigned int len)
{
	unsigned int reg = 0;
	struct pci_device *pdev = pci_addressed(h, &reg);

	pci_cfg_read(pdev, reg + byte, data, len);
}

static void pci_data_write(struct pci_host *h, unsigned int byte,
			   const void *data, unsigned int len)
{
	unsigned int reg = 0;
	struct pci_device *pdev = pci_addressed(h, &reg);

	pci_cfg_write(pdev, reg + byte, data, len);
}

static void pci_host_read(struct bus_dev *dev, uint64_t offset, void *data,
			  unsigned int len)
{
	struct pci_host *h = dev->priv;

	pthread_mutex_lock(&h->lock);
	if (offset < 4) {
		if (offset == 0 && len == 4)
			memcpy(data, &h->address, 4);
		else
			memset(data, 0xff, len);
	} else {
		pci_data_read(h, offset - 4, data, len);
	}
	pthread_mutex_unlock(&h->lock);
}

static void pci_host_write(struct bus_dev *dev, uint64_t offset,
			   const void *data, unsigned int len)
{
	struct pci_host *h = dev->priv;

	pthread_mutex_lock(&h->lock);
	if (offset < 4) {
		/* Only full-width writes select a register (mechanism #1). */
		if (offset == 0 && len == 4)
			memcpy(&h->address, data, 4);
	} else {
		pci_data_write(h, offset - 4, data, len);
	}
	pthread_mutex_unlock(&h->lock);
}

static const struct bus_ops pci_host_ops = {
	.read = pci_host_read,
	.write = pci_host_write,
};

static struct pci_device *pci_ecam_function(struct pci_host *h,
					    uint64_t offset)
{
	return pci_function(h, offset >> 20, (offset >> 15) & 0x1f,
			    (offset >> 12) & 0x7);
}

static void pci_ecam_read(struct bus_dev *dev, uint64_t offset, void *data,
			  unsigned int len)
{
	struct pci_host *h = dev->priv;

	pthread_mutex_lock(&h->lock);
	pci_cfg_read(pci_ecam_function(h, offset), offset & 0xfff, data, len);
	pthread_mutex_unlock(&h->lock);
}

static void pci_ecam_write(struct bus_dev *dev, uint64_t offset,
			   const void *data, unsigned int len)
{
	struct pci_host *h = dev->priv;

	pthread_mutex_lock(&h->lock);
	pci_cfg_write(pci_ecam_function(h, offset), offset & 0xfff, data, len);
	pthread_mutex_unlock(&h->lock);
}

static const struct bus_ops pci_ecam_ops = {
	.read = pci_ecam_read,
	.write = pci_ecam_write,
};

static void pci_host_bridge_init(struct pci_device *b)
{
	pci_put16(b->cfg + PCI_VENDOR_ID, HOST_BRIDGE_VENDOR);
	pci_put16(b->cfg + PCI_DEVICE_ID, HOST_BRIDGE_DEVICE);
	pci_put32(b->cfg + PCI_CLASS_REVISION, PCI_CLASS_BRIDGE_HOST << 8);
	pci_put16(b->cfg + PCI_SUBSYSTEM_VENDOR_ID, HOST_BRIDGE_VENDOR);
	pci_put16(b->cfg + PCI_SUBSYSTEM_ID, 0x1100);
	b->wmask[PCI_COMMAND] = 0x07;	/* I/O, memory, bus master */
}

static struct pci_host *pci_host_on(struct bus *bus, const struct bus_ops *ops)
{
	struct pci_host *h = NULL;
	unsigned int i;

	pthread_rwlock_rdlock(&bus->lock);
	for (i = 0; i < bus->nr_ranges && !h; i++)
		if (bus->ranges[i].dev->ops == ops)
			h = bus->ranges[i].dev->priv;
	pthread_rwlock_unlock(&bus->lock);
	return h;
}

/* The VM has one PCI host; devices find it on the bus it answers on. */
static struct pci_host *pci_host_of(struct vm *vm)
{
	struct pci_host *h = pci_host_on(&vm->pio, &pci_host_ops);

	return h ? h : pci_host_on(&vm->mmio, &pci_ecam_ops);
}

int pci_register_device(struct vm *vm, struct pci_device *pdev)
{
	struct pci_host *h = pci_host_of(vm);
	unsigned int slot;

	if (!h) {
		pr_err("no PCI host bridge for a PCI device");
		return -1;
	}
	pthread_mutex_lock(&h->lock);
	for (slot = 0; slot < PCI_MAX_DEVICES; slot++) {
		if (!h->devices[slot]) {
			h->devices[slot] = pdev;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (slot == PCI_MAX_DEVICES) {
		pr_err("PCI bus 0 is full (%d devices)", PCI_MAX_DEVICES);
		return -1;
	}
	return slot;
}

static struct pci_host *pci_host_new(struct vm *vm, const char *name,
				     const struct bus_ops *ops)
{
	struct pci_host *h = vm_zalloc(vm, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	pci_host_bridge_init(&h->bridge);
	h->devices[0] = &h->bridge;
	h->dev = (struct bus_dev) { .name = name, .ops = ops, .priv = h };
	return h;
}

int pci_ecam_init(struct vm *vm, uint64_t base, uint64_t size)
{
	struct pci_host *h = pci_host_new(vm, "pci-ecam", &pci_ecam_ops);

	return h ? bus_register(&vm->mmio, base, size, &h->dev) : -1;
}

int pci_host_init(struct vm *vm, uint16_t port)
{
	struct pci_host *h = pci_host_new(vm, "pci-host", &pci_host_ops);

	if (!h)
		return -1;
	/*
	 * Selecting a register never needs an answer: let KVM queue those
	 * writes, which halves the exits of a bus scan (Linux on AMD CPUs
	 * probes all 256 buses for an AGP bridge, 8192 config reads).
	 */
	vm_coalesce_pio(vm, port, 4);
	return bus_register(&vm->pio, port, 8, &h->dev);
}
