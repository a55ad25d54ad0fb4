// SPDX-License-Identifier: GPL-2.0
/*
 * The kit's virtio-pci transport (see virtio_pci.h): modern through the
 * vendor capabilities, legacy through the 0.9.5 I/O registers, MSI-X and
 * INTx seen in the LAPIC IRR.
 */
#include <linux/virtio_pci.h>

#include "virtio_pci.h"

#define PCI_COMMAND		0x04
#define PCI_STATUS_CAP_LIST	(1u << (16 + 4))	/* in the 0x04 dword */
#define PCI_CMD_IO		0x1
#define PCI_CMD_MEMORY		0x2
#define PCI_CMD_MASTER		0x4
#define PCI_BAR0		0x10
#define PCI_SUBSYS_ID		0x2e
#define PCI_CAP_PTR		0x34
#define PCI_INT_LINE		0x3c
#define CAP_ID_VNDR		0x09
#define CAP_ID_MSIX		0x11
#define MSIX_CTRL_ENABLE	0x8000
#define MSIX_CTRL_MASKALL	0x4000
#define MSIX_ENTRY_MASKED	0x1

#define IOAPIC_REGSEL		0x00
#define IOAPIC_WINDOW		0x10
#define IOAPIC_REDIR(pin)	(0x10 + 2 * (pin))
#define IOAPIC_ACTIVE_LOW	(1u << 13)
#define IOAPIC_REMOTE_IRR	(1u << 14)
#define IOAPIC_LEVEL		(1u << 15)
#define IOAPIC_MASKED		(1u << 16)
#define LAPIC_SVR_ENABLE	(1u << 8)

static bool is_legacy(const struct vio_dev *d)
{
	return d->transport == VIO_PCI_LEGACY;
}

static uint16_t io_port(const struct vio_dev *d, unsigned int reg)
{
	return (uint16_t)(d->base + reg);
}

/* Register accesses are counted as in virtio.c: tests compare with --stats. */
static uint8_t common_read8(const struct vio_dev *d, unsigned int off)
{
	vio_reg_reads++;
	return mmio_read8(d->common + off);
}

static uint16_t common_read16(const struct vio_dev *d, unsigned int off)
{
	vio_reg_reads++;
	return mmio_read16(d->common + off);
}

static uint32_t common_read32(const struct vio_dev *d, unsigned int off)
{
	vio_reg_reads++;
	return mmio_read32(d->common + off);
}

static void common_write8(const struct vio_dev *d, unsigned int off, uint8_t v)
{
	vio_reg_writes++;
	mmio_write8(d->common + off, v);
}

static void common_write16(const struct vio_dev *d, unsigned int off,
			   uint16_t v)
{
	vio_reg_writes++;
	mmio_write16(d->common + off, v);
}

static void common_write32(const struct vio_dev *d, unsigned int off,
			   uint32_t v)
{
	vio_reg_writes++;
	mmio_write32(d->common + off, v);
}

/* ---- finding the function ---- */

static uint64_t bar_address(unsigned int slot, unsigned int bar)
{
	uint32_t lo = kit_pci_read32(0, slot, 0, PCI_BAR0 + 4 * bar);

	if (lo & 1)
		return lo & ~3u;
	if (((lo >> 1) & 3) == 2 && bar < 5)	/* 64-bit memory BAR */
		return (lo & ~0xfULL) |
		       (uint64_t)kit_pci_read32(0, slot, 0,
						PCI_BAR0 + 4 * (bar + 1)) << 32;
	return lo & ~0xfULL;
}

static int find_function(bool legacy, unsigned int first, uint32_t *type)
{
	unsigned int slot;

	for (slot = first; slot < 32; slot++) {
		uint32_t id = kit_pci_read32(0, slot, 0, 0);
		uint16_t dev = id >> 16;

		if ((id & 0xffff) != VIO_PCI_VENDOR)
			continue;
		if (!legacy && dev >= 0x1040 && dev <= 0x107f) {
			*type = dev - 0x1040;
			return slot;
		}
		/* 4.1.2.3: transitional IDs; the subsystem ID is the type */
		if (legacy && dev >= 0x1000 && dev <= 0x103f) {
			*type = kit_pci_read16(0, slot, 0, PCI_SUBSYS_ID);
			return slot;
		}
	}
	return -1;
}

/* Walks the capability list for the modern regions and MSI-X. */
static bool map_caps(struct vio_dev *d)
{
	unsigned int s = d->slot, at, guard = 0;

	if (!(kit_pci_read32(0, s, 0, PCI_COMMAND) & PCI_STATUS_CAP_LIST)) {
		kit_printf("virtio-pci: 00:%02x.0 has no capability list\n", s);
		return false;
	}
	at = kit_pci_read8(0, s, 0, PCI_CAP_PTR) & ~3u;
	while (at && guard++ < 48) {
		uint8_t id = kit_pci_read8(0, s, 0, at);

		if (id == CAP_ID_VNDR) {
			uint8_t type = kit_pci_read8(0, s, 0, at + 3);
			uint8_t bar = kit_pci_read8(0, s, 0, at + 4);
			uintptr_t a = bar_address(s, bar) +
				      kit_pci_read32(0, s, 0, at + 8);

			/* the first of each type is the one to use (4.1.4) */
			if (type == VIRTIO_PCI_CAP_COMMON_CFG && !d->common)
				d->common = a;
			else if (type == VIRTIO_PCI_CAP_ISR_CFG && !d->isr)
				d->isr = a;
			else if (type == VIRTIO_PCI_CAP_DEVICE_CFG && !d->devcfg)
				d->devcfg = a;
			else if (type == VIRTIO_PCI_CAP_NOTIFY_CFG && !d->notify) {
				d->notify = a;
				d->notify_mult = kit_pci_read32(0, s, 0, at + 16);
			}
		} else if (id == CAP_ID_MSIX) {
			uint32_t t = kit_pci_read32(0, s, 0, at + 4);
			uint32_t p = kit_pci_read32(0, s, 0, at + 8);

			d->msix_cap = at;
			d->nr_vectors = (kit_pci_read16(0, s, 0, at + 2) &
					 0x7ff) + 1;
			d->msix_table = bar_address(s, t & 7) + (t & ~7u);
			d->msix_pba = bar_address(s, p & 7) + (p & ~7u);
		}
		at = kit_pci_read8(0, s, 0, at + 1) & ~3u;
	}
	if (!d->common || !d->isr || !d->notify) {
		kit_printf("virtio-pci: 00:%02x.0: common %#lx isr %#lx notify %#lx: a capability is missing\n",
			   s, d->common, d->isr, d->notify);
		return false;
	}
	return true;
}

bool vio_pci_find(struct vio_dev *d, bool legacy)
{
	return vio_pci_find_from(d, legacy, 0);
}

bool vio_pci_find_from(struct vio_dev *d, bool legacy, unsigned int first)
{
	uint32_t type = 0, cmd;
	int slot = find_function(legacy, first, &type);

	memset(d, 0, sizeof(*d));
	if (slot < 0)
		return false;
	d->transport = legacy ? VIO_PCI_LEGACY : VIO_PCI;
	d->slot = slot;
	d->device_id = type;
	d->gsi = kit_pci_read8(0, slot, 0, PCI_INT_LINE);
	/* what pci_enable_device and pci_set_master would do */
	cmd = kit_pci_read32(0, slot, 0, PCI_COMMAND) & 0xffff;
	cmd |= (legacy ? PCI_CMD_IO : PCI_CMD_MEMORY) | PCI_CMD_MASTER;
	kit_pci_write32(0, slot, 0, PCI_COMMAND, cmd);
	if (legacy) {
		d->base = bar_address(slot, 0);
		return d->base != 0;
	}
	if (!map_caps(d))
		return false;
	d->base = d->common;
	return true;
}

/* ---- registers ---- */

uint32_t vio_pci_config_read(const struct vio_dev *d, unsigned int off,
			     unsigned int size)
{
	vio_reg_reads++;
	if (is_legacy(d)) {
		/* without MSI-X the device config follows at 20 */
		uint16_t p = io_port(d, VIRTIO_PCI_CONFIG_OFF(false) + off);

		return size == 1 ? inb(p) : size == 2 ? inw(p) : inl(p);
	}
	return size == 1 ? mmio_read8(d->devcfg + off) :
	       size == 2 ? mmio_read16(d->devcfg + off) :
			   mmio_read32(d->devcfg + off);
}

void vio_pci_config_write32(const struct vio_dev *d, unsigned int off,
			    uint32_t v)
{
	vio_reg_writes++;
	if (is_legacy(d))
		outl(io_port(d, VIRTIO_PCI_CONFIG_OFF(false) + off), v);
	else
		mmio_write32(d->devcfg + off, v);
}

uint8_t vio_pci_config_generation(const struct vio_dev *d)
{
	return is_legacy(d) ? 0 :
	       common_read8(d, VIRTIO_PCI_COMMON_CFGGENERATION);
}

uint8_t vio_pci_status(const struct vio_dev *d)
{
	if (is_legacy(d)) {
		vio_reg_reads++;
		return inb(io_port(d, VIRTIO_PCI_STATUS));
	}
	return common_read8(d, VIRTIO_PCI_COMMON_STATUS);
}

void vio_pci_set_status(const struct vio_dev *d, uint8_t status)
{
	if (is_legacy(d)) {
		vio_reg_writes++;
		outb(io_port(d, VIRTIO_PCI_STATUS), status);
		return;
	}
	common_write8(d, VIRTIO_PCI_COMMON_STATUS, status);
}

void vio_pci_features(struct vio_dev *d, uint64_t wanted)
{
	if (is_legacy(d)) {
		/* 32 feature bits, and no VERSION_1 to offer or take */
		vio_reg_reads++;
		d->offered = inl(io_port(d, VIRTIO_PCI_HOST_FEATURES));
		d->features = d->offered & wanted & 0xffffffffu;
		vio_reg_writes++;
		outl(io_port(d, VIRTIO_PCI_GUEST_FEATURES), d->features);
		return;
	}
	common_write32(d, VIRTIO_PCI_COMMON_DFSELECT, 0);
	d->offered = common_read32(d, VIRTIO_PCI_COMMON_DF);
	common_write32(d, VIRTIO_PCI_COMMON_DFSELECT, 1);
	d->offered |= (uint64_t)common_read32(d, VIRTIO_PCI_COMMON_DF) << 32;
	d->features = d->offered & (wanted | (1ULL << VIRTIO_F_VERSION_1));
	common_write32(d, VIRTIO_PCI_COMMON_GFSELECT, 0);
	common_write32(d, VIRTIO_PCI_COMMON_GF, (uint32_t)d->features);
	common_write32(d, VIRTIO_PCI_COMMON_GFSELECT, 1);
	common_write32(d, VIRTIO_PCI_COMMON_GF, (uint32_t)(d->features >> 32));
}

uint32_t vio_pci_isr(const struct vio_dev *d)
{
	vio_reg_reads++;
	if (is_legacy(d))
		return inb(io_port(d, VIRTIO_PCI_ISR));
	return mmio_read8(d->isr);
}

uint32_t vio_pci_queue_max(const struct vio_dev *d, unsigned int index)
{
	if (is_legacy(d)) {
		vio_reg_writes++;
		outw(io_port(d, VIRTIO_PCI_QUEUE_SEL), index);
		vio_reg_reads++;
		return inw(io_port(d, VIRTIO_PCI_QUEUE_NUM));
	}
	common_write16(d, VIRTIO_PCI_COMMON_Q_SELECT, index);
	return common_read16(d, VIRTIO_PCI_COMMON_Q_SIZE);
}

static void common_write64(const struct vio_dev *d, unsigned int off,
			   const void *p)
{
	uint64_t a = (uintptr_t)p;

	common_write32(d, off, (uint32_t)a);
	common_write32(d, off + 4, (uint32_t)(a >> 32));
}

static int legacy_queue_setup(struct vio_queue *q, struct vio_dev *d,
			      unsigned int index)
{
	/* 4.1.4.8: the size is the device's; the driver cannot choose */
	uint32_t num = vio_pci_queue_max(d, index);

	if (!num) {
		kit_printf("virtio-pci: legacy queue %u does not exist\n", index);
		return -1;
	}
	if (vio_queue_alloc_legacy(q, d, index, num))
		return -1;
	vio_reg_writes++;
	outl(io_port(d, VIRTIO_PCI_QUEUE_PFN),
	     (uintptr_t)q->desc >> VIRTIO_PCI_QUEUE_ADDR_SHIFT);
	return 0;
}

int vio_pci_queue_setup(struct vio_queue *q, struct vio_dev *d,
			unsigned int index, unsigned int want)
{
	uint32_t max;
	uint16_t vec;

	if (is_legacy(d))
		return legacy_queue_setup(q, d, index);
	max = vio_pci_queue_max(d, index);
	if (!max) {
		kit_printf("virtio-pci: no queue %u\n", index);
		return -1;
	}
	if (common_read16(d, VIRTIO_PCI_COMMON_Q_ENABLE)) {
		kit_printf("virtio-pci: queue %u is already enabled\n", index);
		return -1;
	}
	if (want > max)
		want = max;
	if (vio_queue_alloc(q, d, index, want))
		return -1;
	common_write16(d, VIRTIO_PCI_COMMON_Q_SIZE, want);
	common_write64(d, VIRTIO_PCI_COMMON_Q_DESCLO, q->desc);
	common_write64(d, VIRTIO_PCI_COMMON_Q_AVAILLO, q->avail);
	common_write64(d, VIRTIO_PCI_COMMON_Q_USEDLO, q->used);
	if (d->msix_on) {
		/* 4.1.5.1.2: read back: NO_VECTOR means it was refused */
		common_write16(d, VIRTIO_PCI_COMMON_Q_MSIX, index + 1);
		vec = common_read16(d, VIRTIO_PCI_COMMON_Q_MSIX);
		if (vec != index + 1) {
			kit_printf("virtio-pci: queue %u vector %u read back as %#x\n",
				   index, index + 1, vec);
			vio_queue_free(q);
			return -1;
		}
	}
	q->notify = d->notify +
		    common_read16(d, VIRTIO_PCI_COMMON_Q_NOFF) * d->notify_mult;
	common_write16(d, VIRTIO_PCI_COMMON_Q_ENABLE, 1);
	return 0;
}

bool vio_pci_queue_enabled(struct vio_queue *q)
{
	const struct vio_dev *d = q->dev;

	if (is_legacy(d)) {
		vio_reg_writes++;
		outw(io_port(d, VIRTIO_PCI_QUEUE_SEL), q->index);
		vio_reg_reads++;
		return inl(io_port(d, VIRTIO_PCI_QUEUE_PFN)) ==
		       (uintptr_t)q->desc >> VIRTIO_PCI_QUEUE_ADDR_SHIFT;
	}
	common_write16(d, VIRTIO_PCI_COMMON_Q_SELECT, q->index);
	return common_read16(d, VIRTIO_PCI_COMMON_Q_ENABLE) == 1;
}

void vio_pci_notify(struct vio_queue *q)
{
	vio_reg_writes++;
	if (is_legacy(q->dev))
		outw(io_port(q->dev, VIRTIO_PCI_QUEUE_NOTIFY), q->index);
	else
		mmio_write16(q->notify, q->index);
}

/* ---- MSI-X ---- */

static void lapic_on(void)
{
	/* the PICs masked: only the IOAPIC and MSIs reach the LAPIC */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
	lapic_write(LAPIC_SVR, LAPIC_SVR_ENABLE | 0xff);
}

static void msix_ctrl(const struct vio_dev *d, uint16_t set, uint16_t clear)
{
	uint32_t v = kit_pci_read32(0, d->slot, 0, d->msix_cap);
	uint16_t ctrl = ((v >> 16) | set) & ~clear;

	/* ID and next pointer are read-only: writing them back is harmless */
	kit_pci_write32(0, d->slot, 0, d->msix_cap,
			(v & 0xffff) | (uint32_t)ctrl << 16);
}

bool vio_msix_enable(struct vio_dev *d)
{
	unsigned int i;
	uint16_t vec;

	if (!d->msix_cap || is_legacy(d))
		return false;
	lapic_on();
	for (i = 0; i < d->nr_vectors; i++)
		vio_msix_mask(d, i, true);
	msix_ctrl(d, MSIX_CTRL_ENABLE, MSIX_CTRL_MASKALL);
	if (!(kit_pci_read16(0, d->slot, 0, d->msix_cap + 2) &
	      MSIX_CTRL_ENABLE))
		return false;
	common_write16(d, VIRTIO_PCI_COMMON_MSIX, 0);
	vec = common_read16(d, VIRTIO_PCI_COMMON_MSIX);
	if (vec != 0) {
		kit_printf("virtio-pci: msix_config read back as %#x\n", vec);
		return false;
	}
	d->msix_on = true;
	return true;
}

static uintptr_t msix_entry(const struct vio_dev *d, unsigned int entry)
{
	return d->msix_table + 16 * entry;
}

/* The table and PBA sit in the BAR too: counted like the registers. */
void vio_msix_mask(const struct vio_dev *d, unsigned int entry, bool masked)
{
	vio_reg_writes++;
	mmio_write32(msix_entry(d, entry) + 12, masked ? MSIX_ENTRY_MASKED : 0);
}

void vio_msix_set(const struct vio_dev *d, unsigned int entry,
		  unsigned int vector, bool masked)
{
	uintptr_t e = msix_entry(d, entry);

	/* never a half-written entry unmasked (PCI 3.0, 6.8.3.5) */
	vio_msix_mask(d, entry, true);
	vio_reg_writes += 3;
	mmio_write32(e + 0, VIO_MSI_ADDR);
	mmio_write32(e + 4, 0);
	mmio_write32(e + 8, vector);
	if (!masked)
		vio_msix_mask(d, entry, false);
}

void vio_msix_function_mask(const struct vio_dev *d, bool masked)
{
	msix_ctrl(d, masked ? MSIX_CTRL_MASKALL : 0,
		  masked ? 0 : MSIX_CTRL_MASKALL);
}

bool vio_msix_pending(const struct vio_dev *d, unsigned int entry)
{
	vio_reg_reads++;
	return mmio_read32(d->msix_pba + 4 * (entry / 32)) &
	       (1u << (entry % 32));
}

uint16_t vio_msix_queue_vector(const struct vio_dev *d, unsigned int index)
{
	common_write16(d, VIRTIO_PCI_COMMON_Q_SELECT, index);
	return common_read16(d, VIRTIO_PCI_COMMON_Q_MSIX);
}

/* ---- INTx through the IOAPIC ---- */

static void ioapic_write(unsigned int reg, uint32_t v)
{
	mmio_write32(KIT_IOAPIC_ADDR + IOAPIC_REGSEL, reg);
	mmio_write32(KIT_IOAPIC_ADDR + IOAPIC_WINDOW, v);
}

static uint32_t ioapic_read(unsigned int reg)
{
	mmio_write32(KIT_IOAPIC_ADDR + IOAPIC_REGSEL, reg);
	return mmio_read32(KIT_IOAPIC_ADDR + IOAPIC_WINDOW);
}

void vio_intx_route(const struct vio_dev *d, unsigned int vector)
{
	lapic_on();
	ioapic_write(IOAPIC_REDIR(d->gsi) + 1, 0);
	/* an edge-triggered write drops Remote IRR (what Linux relies on) */
	ioapic_write(IOAPIC_REDIR(d->gsi), IOAPIC_MASKED | vector);
	ioapic_write(IOAPIC_REDIR(d->gsi),
		     IOAPIC_LEVEL | IOAPIC_ACTIVE_LOW | vector);
}

void vio_intx_mask(const struct vio_dev *d)
{
	ioapic_write(IOAPIC_REDIR(d->gsi),
		     IOAPIC_MASKED | IOAPIC_LEVEL | IOAPIC_ACTIVE_LOW);
}

bool vio_intx_remote_irr(const struct vio_dev *d)
{
	return ioapic_read(IOAPIC_REDIR(d->gsi)) & IOAPIC_REMOTE_IRR;
}

/* ---- taking interrupts ---- */

struct idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off_mid;
	uint32_t off_hi;
	uint32_t zero;
} __packed;

static struct idt_gate idt[256] __attribute__((aligned(16)));
static bool idt_loaded;
volatile unsigned long vio_irqs_taken;

/* Counts the interrupt and EOIs it: the LAPIC tells the IOAPIC for INTx. */
void vio_irq_stub(void);
asm(".pushsection .text\n"
    ".globl vio_irq_stub\n"
    "vio_irq_stub:\n\t"
    "pushq %rax\n\t"
    "lock incq vio_irqs_taken(%rip)\n\t"
    "movl $0xfee000b0, %eax\n\t"
    "movl $0, (%rax)\n\t"
    "popq %rax\n\t"
    "iretq\n"
    ".popsection");

/* The kit's exception gates stay; vectors 32-255 go to the stub. */
static void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __packed desc;
	uint16_t cs;
	uint64_t a = (uintptr_t)vio_irq_stub;
	unsigned int i;
	size_t old;

	asm volatile("sidt %0" : "=m"(desc));
	old = (size_t)desc.limit + 1;
	memcpy(idt, (const void *)desc.base,
	       old < 32 * sizeof(idt[0]) ? old : 32 * sizeof(idt[0]));
	asm volatile("mov %%cs, %0" : "=r"(cs));
	for (i = 32; i < ARRAY_SIZE(idt); i++)
		idt[i] = (struct idt_gate){
			.off_lo = (uint16_t)a,
			.sel = cs,
			.type = 0x8e,	/* present, DPL 0, interrupt gate */
			.off_mid = (uint16_t)(a >> 16),
			.off_hi = (uint32_t)(a >> 32),
		};
	desc.limit = sizeof(idt) - 1;
	desc.base = (uintptr_t)idt;
	asm volatile("lidt %0" : : "m"(desc));
	idt_loaded = true;
}

static bool irr_any(void)
{
	unsigned int i;

	/* vectors 0-31 are exceptions, never in the IRR */
	for (i = 1; i < 8; i++)
		if (lapic_read(0x200 + 0x10 * i))
			return true;
	return false;
}

/*
 * sti; hlt cannot sleep past an interrupt that is already pending, and
 * the IRR says one is; sti's one-instruction shadow ends at hlt: one
 * interrupt, then cli.
 */
bool vio_irq_accept_one(void)
{
	unsigned long before = vio_irqs_taken;

	if (!idt_loaded)
		idt_load();
	if (!irr_any())
		return false;
	asm volatile("sti; hlt; cli" ::: "memory");
	return vio_irqs_taken != before;
}

unsigned int vio_irq_accept(void)
{
	unsigned long before = vio_irqs_taken;
	unsigned int i;

	for (i = 0; i < 256 && vio_irq_accept_one(); i++)
		;
	return vio_irqs_taken - before;
}
