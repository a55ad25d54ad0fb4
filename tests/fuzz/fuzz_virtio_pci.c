// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for virtio-pci (make fuzz-virtio_pci): lkvm's
 * virtio-blk on the modern or the transitional (legacy I/O BAR) function,
 * on a fake VM (blk_vm.c), driven by a sequence of guest accesses decoded
 * from the input: configuration space through 0xcf8/0xcfc (BAR sizing and
 * moves, command register, capabilities, MSI-X control), the BAR's common
 * config, ISR, device config, notify region, MSI-X table and PBA, or the
 * legacy register file, plus a few driver-like steps (negotiate, set up a
 * queue, post a request) so the device also walks rings in guest memory.
 *
 * A guest write is dispatched as KVM would: a write that matches one of
 * the ioeventfds the fake KVM holds signals its eventfd, and the queue's
 * kick handler then runs here, as the I/O thread would run it; any other
 * access reaches the VMM's bus. After each step the harness checks what
 * the guest could observe against a model of the register file (PCI
 * configuration space with its writable bits, the common config, the
 * MSI-X table), and what it cannot: the BAR is on the bus exactly where
 * the configuration space says, the ioeventfds are exactly those of the
 * live queues at the BAR's notify addresses, the INTx line follows the
 * ISR, the GSI routes follow the MSI-X table, the status rules hold.
 */
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <stdint.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/x86/layout.h"
#include "blk_vm.h"

#define CFG_PORT	X86_PORT_PCI_CONFIG
#define SLOT		1			/* the host bridge is slot 0 */
#define CFG_ENABLE	0x80000000u

/* virtio/pci.c's layout, as its capabilities announce it. */
#define BAR4_SIZE	0x8000
#define BAR0_SIZE	0x100
#define OFF_ISR		0x1000
#define OFF_DEVICE	0x2000
#define OFF_NOTIFY	0x3000
#define OFF_TABLE	0x4000
#define OFF_PBA		0x6000
#define NOTIFY_MUL	4
#define CAP_MSIX	0x40
#define FIRST_MSI_GSI	64			/* core/irq.c */
#define STATUS_INTX	0x08			/* PCI Status: Interrupt Status */
#define CMD_IO		0x1
#define CMD_MEM		0x2
#define CMD_INTX_OFF	0x400
#define MSIX_ENABLE	0x8000
#define MSIX_MASKALL	0x4000

struct msix_entry {
	uint32_t addr_lo, addr_hi, data, ctrl;
};

/* The model: what the guest should see. */
struct model {
	bool legacy;
	unsigned int nr_vectors;
	uint32_t latch;			/* 0xcf8 */
	uint8_t cfg[2][256];		/* slot 0 and SLOT, by our writes */
	uint8_t wmask[2][256];
	unsigned int gsi;		/* the INTx line */
	struct msix_entry msix[64];
	uint32_t dfsel, gfsel;
	uint16_t qsel, config_vector;
};

static struct blk_vm vm;
static struct model m;

static uint64_t le_value(const void *data, unsigned int len)
{
	uint64_t v = 0;

	memcpy(&v, data, len);
	return v;
}

/* ---- harness-side looks that change nothing the guest can see ---- */

static uint32_t cfg_peek(unsigned int slot, unsigned int reg)
{
	uint32_t addr = CFG_ENABLE | slot << 11 | (reg & 0xfc), v;

	bus_access(&vm.fake.vm.pio, CFG_PORT, &addr, 4, true);
	bus_access(&vm.fake.vm.pio, CFG_PORT + 4, &v, 4, false);
	bus_access(&vm.fake.vm.pio, CFG_PORT, &m.latch, 4, true);
	return v;
}

static uint16_t model16(unsigned int reg)
{
	uint16_t v;

	memcpy(&v, &m.cfg[1][reg], 2);
	return v;
}

static uint32_t model32(unsigned int reg)
{
	uint32_t v;

	memcpy(&v, &m.cfg[1][reg], 4);
	return v;
}

/* Where the configuration space says the BAR is; 0: not decoded. */
static uint64_t model_bar(void)
{
	uint16_t cmd = model16(0x04);

	if (m.legacy)
		return cmd & CMD_IO ? model32(0x10) & 0xfffc : 0;
	if (!(cmd & CMD_MEM))
		return 0;
	return (model32(0x20) & ~0xfULL) | (uint64_t)model32(0x24) << 32;
}

static struct bus *bar_bus(void)
{
	return m.legacy ? &vm.fake.vm.pio : &vm.fake.vm.mmio;
}

static uint64_t bar_size(void)
{
	return m.legacy ? BAR0_SIZE : BAR4_SIZE;
}

/* The BAR's range on the bus, if it is there: its base, else 0. */
static uint64_t bus_bar(void)
{
	struct bus *bus = bar_bus();
	uint64_t base = 0;
	unsigned int i, found = 0;

	for (i = 0; i < bus->nr_ranges; i++) {
		if (strncmp(bus->ranges[i].dev->name, "virtio-pci", 10))
			continue;
		found++;
		base = bus->ranges[i].base;
		CHECK(bus->ranges[i].size == bar_size());
	}
	CHECK(found <= 1);
	return base;
}

static bool fits_on_bus(uint64_t addr)
{
	struct bus *bus = bar_bus();
	uint64_t end;
	unsigned int i;

	if (u64_add_overflows(addr, bar_size(), &end))
		return false;
	for (i = 0; i < bus->nr_ranges; i++) {
		const struct bus_range *r = &bus->ranges[i];

		if (strncmp(r->dev->name, "virtio-pci", 10) &&
		    r->base < end && addr < r->base + r->size)
			return false;
	}
	return true;
}

static bool msix_enabled(void)
{
	return !m.legacy && model16(CAP_MSIX + 2) & MSIX_ENABLE;
}

static bool vector_masked(unsigned int v)
{
	return model16(CAP_MSIX + 2) & MSIX_MASKALL || m.msix[v].ctrl & 1;
}

static uint64_t notify_addr(void *ctx, unsigned int q)
{
	uint64_t bar = *(uint64_t *)ctx;

	return m.legacy ? bar + VIRTIO_PCI_QUEUE_NOTIFY
			: bar + OFF_NOTIFY + q * NOTIFY_MUL;
}

/*
 * Nothing waits in the PBA that could be delivered: a pending vector is
 * masked, or MSI-X is off (and it goes out once MSI-X is on again).
 */
static void check_pba(uint64_t pba)
{
	unsigned int v;

	if (m.nr_vectors < 64)
		CHECK(!(pba >> m.nr_vectors));
	for (v = 0; v < m.nr_vectors; v++)
		if (pba >> v & 1)
			CHECK(!msix_enabled() || vector_masked(v));
}

static void check_routes(void)
{
	struct kvm_irq_routing_entry e;
	unsigned int v;

	for (v = 0; v < m.nr_vectors; v++) {
		CHECK(fake_vm_route(&vm.fake, FIRST_MSI_GSI + v, &e));
		CHECK(e.type == KVM_IRQ_ROUTING_MSI &&
		      e.u.msi.address_lo == m.msix[v].addr_lo &&
		      e.u.msi.address_hi == m.msix[v].addr_hi &&
		      e.u.msi.data == m.msix[v].data);
	}
}

static void check_all(void)
{
	uint64_t want = model_bar(), bar = bus_bar();
	uint32_t cmd_status = cfg_peek(SLOT, 0x04);
	bool intx_up;

	blk_vm_check_device(&vm);
	/* Configuration space: ours, but for the live interrupt bit. */
	CHECK((cmd_status & ~(STATUS_INTX << 16)) ==
	      (model32(0x04) & ~(STATUS_INTX << 16)));
	CHECK(bar == (want && fits_on_bus(want) ? want : 0));
	blk_vm_check_ioeventfds(&vm, bar, m.legacy, 2, notify_addr, &bar);
	intx_up = cmd_status >> 16 & STATUS_INTX && !(cmd_status & CMD_INTX_OFF) &&
		  !msix_enabled();
	CHECK(vm.fake.irq_level[m.gsi] == intx_up);
	if (!m.legacy) {
		uint64_t pba = ~0ULL;

		check_routes();
		if (bar) {
			bus_access(bar_bus(), bar + OFF_PBA, &pba, 8, false);
			check_pba(pba);
		}
	}
}

/* ---- the guest's accesses ---- */

/* As KVM would: an ioeventfd's eventfd for a match, else an exit. */
static bool guest_access(bool pio, uint64_t addr, void *data, unsigned int len,
			 bool write)
{
	struct bus *bus = pio ? &vm.fake.vm.pio : &vm.fake.vm.mmio;

	if (write && fake_vm_notify(&vm.fake, addr, pio, le_value(data, len),
				    len)) {
		blk_vm_serve_kicks(&vm);
		return true;
	}
	return bus_access(bus, addr, data, len, write);
}

static int cfg_slot(void)
{
	unsigned int bus = m.latch >> 16 & 0xff, fn = m.latch >> 8 & 7;
	unsigned int slot = m.latch >> 11 & 0x1f;

	if (!(m.latch & CFG_ENABLE) || bus || fn || slot > SLOT)
		return -1;
	return slot;
}

static void cfg_port_read_expect(unsigned int off, uint8_t *exp,
				 unsigned int len)
{
	int slot = cfg_slot();
	unsigned int reg = (m.latch & 0xfc) + off - 4;

	memset(exp, 0xff, len);
	if (off < 4) {
		if (!off && len == 4)
			memcpy(exp, &m.latch, 4);
		return;
	}
	if (slot >= 0 && reg + len <= 256)
		memcpy(exp, &m.cfg[slot][reg], len);
}

static void cfg_port_write_model(unsigned int off, const uint8_t *data,
				 unsigned int len)
{
	int slot = cfg_slot();
	unsigned int reg = (m.latch & 0xfc) + off - 4, i;

	if (off < 4) {
		if (!off && len == 4)
			memcpy(&m.latch, data, 4);
		return;
	}
	if (slot < 0 || reg + len > 256)
		return;
	for (i = 0; i < len; i++)
		m.cfg[slot][reg + i] = (m.cfg[slot][reg + i] &
					~m.wmask[slot][reg + i]) |
				       (data[i] & m.wmask[slot][reg + i]);
}

static void cfg_port_access(unsigned int off, unsigned int len, bool write,
			    uint64_t value)
{
	uint8_t data[4], exp[4];

	memcpy(data, &value, len);
	if (write) {
		guest_access(true, CFG_PORT + off, data, len, true);
		cfg_port_write_model(off, data, len);
		return;
	}
	cfg_port_read_expect(off, exp, len);
	guest_access(true, CFG_PORT + off, data, len, false);
	/* The Status register's interrupt bit is the device's to change. */
	if (cfg_slot() == SLOT && off >= 4) {
		unsigned int reg = (m.latch & 0xfc) + off - 4;

		if (reg <= 6 && reg + len > 6) {
			data[6 - reg] &= ~STATUS_INTX;
			exp[6 - reg] &= ~STATUS_INTX;
		}
	}
	CHECK(!memcmp(data, exp, len));
}

static struct virtio_queue *model_queue(void)
{
	return m.qsel < vm.vdev->nr_queues ? &vm.vdev->queues[m.qsel] : NULL;
}

static uint32_t common_expect(unsigned int off)
{
	struct virtio_device *vdev = vm.vdev;
	struct virtio_queue *q = model_queue();

	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:	return m.dfsel;
	case VIRTIO_PCI_COMMON_DF:
		return m.dfsel < 2 ? vdev->host_features >> (32 * m.dfsel) : 0;
	case VIRTIO_PCI_COMMON_GFSELECT:	return m.gfsel;
	case VIRTIO_PCI_COMMON_GF:
		return m.gfsel < 2 ? vdev->guest_features >> (32 * m.gfsel) : 0;
	case VIRTIO_PCI_COMMON_MSIX:		return m.config_vector;
	case VIRTIO_PCI_COMMON_NUMQ:		return vdev->nr_queues;
	case VIRTIO_PCI_COMMON_STATUS:		return vdev->status;
	case VIRTIO_PCI_COMMON_CFGGENERATION:	return vdev->config_generation;
	case VIRTIO_PCI_COMMON_Q_SELECT:	return m.qsel;
	case VIRTIO_PCI_COMMON_Q_SIZE:		return q ? q->size : 0;
	case VIRTIO_PCI_COMMON_Q_MSIX:		return q ? q->msix_vector : 0xffff;
	case VIRTIO_PCI_COMMON_Q_ENABLE:	return q ? q->enabled : 0;
	case VIRTIO_PCI_COMMON_Q_NOFF:		return q ? m.qsel : 0;
	case VIRTIO_PCI_COMMON_Q_DESCLO:	return q ? q->desc_gpa : 0;
	case VIRTIO_PCI_COMMON_Q_DESCHI:	return q ? q->desc_gpa >> 32 : 0;
	case VIRTIO_PCI_COMMON_Q_AVAILLO:	return q ? q->avail_gpa : 0;
	case VIRTIO_PCI_COMMON_Q_AVAILHI:	return q ? q->avail_gpa >> 32 : 0;
	case VIRTIO_PCI_COMMON_Q_USEDLO:	return q ? q->used_gpa : 0;
	case VIRTIO_PCI_COMMON_Q_USEDHI:	return q ? q->used_gpa >> 32 : 0;
	default:				return 0;
	}
}

/* Whatever the queue registers hold, they hold what a driver may set. */
static void check_queues(void)
{
	unsigned int i;

	for (i = 0; i < vm.vdev->nr_queues; i++) {
		const struct virtio_queue *q = &vm.vdev->queues[i];

		CHECK(q->size && q->size <= q->max_size &&
		      !(q->size & (q->size - 1)));
		CHECK(q->msix_vector == 0xffff || q->msix_vector < m.nr_vectors);
	}
	CHECK(m.config_vector == 0xffff || m.config_vector < m.nr_vectors);
}

static void device_config_expect(unsigned int off, uint8_t *exp,
				 unsigned int len)
{
	if (range_within(off, len, 0, vm.vdev->config_size))
		memcpy(exp, vm.vdev->config + off, len);
}

static void msix_table_model_write(unsigned int off, const uint8_t *data,
				   unsigned int len)
{
	unsigned int v = off / 16, field = off % 16;

	if (v < m.nr_vectors && (len == 4 || len == 8) && !(field % 4) &&
	    field + len <= 16)
		memcpy((uint8_t *)&m.msix[v] + field, data, len);
}

static void modern_expect(uint64_t off, uint8_t *exp, unsigned int len)
{
	uint32_t v;

	if (off < OFF_ISR) {
		v = common_expect(off);
		memcpy(exp, &v, MIN(len, 4u));
	} else if (off >= OFF_DEVICE && off < OFF_NOTIFY) {
		device_config_expect(off - OFF_DEVICE, exp, len);
	} else if (off >= OFF_TABLE && off < OFF_PBA) {
		unsigned int e = (off - OFF_TABLE) / 16;
		unsigned int field = (off - OFF_TABLE) % 16;

		if (e < m.nr_vectors && field + len <= 16)
			memcpy(exp, (uint8_t *)&m.msix[e] + field, len);
	}
}

static void legacy_expect(uint64_t off, uint8_t *exp, unsigned int len)
{
	struct virtio_queue *q = model_queue();
	uint32_t v = 0;

	if (off >= 20) {
		device_config_expect(off - 20, exp, len);
		return;
	}
	switch (off) {
	case VIRTIO_PCI_HOST_FEATURES:	v = vm.vdev->host_features; break;
	case VIRTIO_PCI_GUEST_FEATURES:	v = vm.vdev->guest_features; break;
	case VIRTIO_PCI_QUEUE_PFN:
		v = q && q->enabled ? q->desc_gpa >> 12 : 0;
		break;
	case VIRTIO_PCI_QUEUE_NUM:	v = q ? q->max_size : 0; break;
	case VIRTIO_PCI_QUEUE_SEL:	v = m.qsel; break;
	case VIRTIO_PCI_STATUS:		v = vm.vdev->status; break;
	}
	memcpy(exp, &v, MIN(len, 4u));
}

static bool is_isr(uint64_t off)
{
	return off == (m.legacy ? VIRTIO_PCI_ISR : OFF_ISR);
}

static bool is_status(uint64_t off)
{
	return off == (m.legacy ? VIRTIO_PCI_STATUS : VIRTIO_PCI_COMMON_STATUS);
}

/* A written status byte of 0 is a reset: of the transport's state too. */
static bool is_reset(uint64_t off, const uint8_t *data)
{
	return is_status(off) && !data[0];
}

/* The transport's side of a register write, in the model. */
static void bar_write_model(uint64_t off, const uint8_t *data,
			    unsigned int len)
{
	uint32_t v = 0;

	memcpy(&v, data, MIN(len, 4u));
	if (is_reset(off, data))
		m.config_vector = 0xffff;
	if (m.legacy) {
		if (off == VIRTIO_PCI_QUEUE_SEL)
			m.qsel = v;
		return;
	}
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:	m.dfsel = v; break;
	case VIRTIO_PCI_COMMON_GFSELECT:	m.gfsel = v; break;
	case VIRTIO_PCI_COMMON_Q_SELECT:	m.qsel = v; break;
	case VIRTIO_PCI_COMMON_MSIX:
		m.config_vector = v < m.nr_vectors ? v : 0xffff;
		break;
	}
	if (off >= OFF_TABLE && off < OFF_PBA)
		msix_table_model_write(off - OFF_TABLE, data, len);
}

/* An access inside the BAR, which is on the bus. */
static void bar_access(uint64_t bar, uint64_t off, unsigned int len,
		       bool write, uint8_t *data)
{
	uint8_t exp[8] = { 0 };
	bool intx_before = false;

	if (write) {
		guest_access(m.legacy, bar + off, data, len, true);
		bar_write_model(off, data, len);
		if (is_reset(off, data))
			CHECK(!(cfg_peek(SLOT, 0x04) >> 16 & STATUS_INTX));
		return;
	}
	if (is_isr(off))
		intx_before = cfg_peek(SLOT, 0x04) >> 16 & STATUS_INTX;
	else
		(m.legacy ? legacy_expect : modern_expect)(off, exp, len);
	guest_access(m.legacy, bar + off, data, len, false);
	if (is_isr(off)) {
		/* Acknowledged by the read: the line goes down at once. */
		CHECK(!(data[0] & ~3) && (!intx_before || data[0]));
		CHECK(!(cfg_peek(SLOT, 0x04) >> 16 & STATUS_INTX));
		data[0] = 0;
	}
	if (!m.legacy && off >= OFF_PBA && off < OFF_PBA + 8) {
		uint64_t pba = 0;

		memcpy((uint8_t *)&pba + (off - OFF_PBA), data,
		       MIN(len, (unsigned int)(OFF_PBA + 8 - off)));
		check_pba(pba);
		return;
	}
	CHECK(!memcmp(data, exp, len));
}

/* Every guest access: to the model of whatever it reaches. */
static void guest_op(bool pio, uint64_t addr, unsigned int len, bool write,
		     uint64_t value)
{
	uint64_t bar = bus_bar();
	uint8_t data[8];
	unsigned int i;

	if (pio && range_within(addr, len, CFG_PORT, 8)) {
		cfg_port_access(addr - CFG_PORT, len, write, value);
		return;
	}
	memcpy(data, &value, len);
	if (bar && pio == m.legacy && range_within(addr, len, bar, bar_size())) {
		bar_access(bar, addr - bar, len, write, data);
		return;
	}
	/* Nobody there: writes go nowhere, reads float high. */
	CHECK(!guest_access(pio, addr, data, len, write));
	for (i = 0; !write && i < len; i++)
		CHECK(data[i] == 0xff);
}

/* An access at offset off of the BAR, wherever the guest thinks it is. */
static void bar_op(uint64_t off, unsigned int len, bool write, uint64_t value)
{
	guest_op(m.legacy, model_bar() + off, len, write, value);
}

/* ---- decoding the input ---- */

static unsigned int pick_width(struct input *in, bool pio)
{
	return 1u << (take8(in) % (pio ? 3 : 4));
}

/* Mostly somewhere that means something, now and then anywhere. */
static uint64_t pick_bar_offset(struct input *in)
{
	static const uint16_t modern[] = {
		0, OFF_ISR, OFF_DEVICE, OFF_NOTIFY, OFF_TABLE, OFF_PBA,
	};
	uint8_t sel = take8(in);

	if (m.legacy)
		return sel < 0xf0 ? sel % 0x40 : take16(in);
	if (sel >= 0xf0)
		return take16(in);
	if (modern[sel % 6] == OFF_TABLE)
		return OFF_TABLE + take16(in) % (16 * 66);
	return modern[sel % 6] + take8(in) % 0x40;
}

static void op_cfg_addr(struct input *in)
{
	uint8_t how = take8(in);
	uint32_t a = how & 1 ? CFG_ENABLE | SLOT << 11 | (take8(in) & 0xfc)
			     : take32(in);

	cfg_port_access(0, 4, true, a);
}

static void op_cfg_data(struct input *in)
{
	uint8_t how = take8(in);
	unsigned int len = 1u << (how % 3), off = 4 + (how >> 2) % 4;

	if (how & 0x80)
		off = (how >> 2) % 8;		/* anywhere in the 8 ports */
	if (off + len > 8)
		off = 8 - len;
	cfg_port_access(off, len, how & 0x40, take32(in));
}

/* A whole register: select it, then one access, as a driver would. */
static void op_cfg_reg(struct input *in)
{
	uint8_t reg = take8(in) & 0xfc;
	uint8_t how = take8(in);
	uint32_t value;

	switch (how % 4) {
	case 0:	value = 0xffffffff; break;	/* BAR sizing */
	case 1:	value = (uint32_t)model_bar() | (uint32_t)take16(in) << 16; break;
	default: value = take32(in);
	}
	cfg_port_access(0, 4, true, CFG_ENABLE | SLOT << 11 | reg);
	cfg_port_access(4, 4, how & 4 ? false : true, value);
}

static void op_bar(struct input *in)
{
	unsigned int len = pick_width(in, m.legacy);
	uint64_t off = pick_bar_offset(in);
	bool write = take8(in) & 1;

	bar_op(off, len, write, take64(in));
}

/* Anywhere: near the BAR, any port, any address. */
static void op_raw(struct input *in)
{
	uint8_t how = take8(in);
	bool pio = how & 4;
	unsigned int len = 1u << (how % (pio ? 3 : 4));
	uint64_t addr = pio ? take16(in)
			    : model_bar() + (int16_t)take16(in);

	if (how & 0x80)
		addr = take64(in);
	guest_op(pio, addr, len, how & 8, take64(in));
}

static void bar_write(uint64_t off, uint64_t value, unsigned int len)
{
	bar_op(off, len, true, value);
}

/* ACK, DRIVER, the features the input picks of those offered, FEATURES_OK. */
static void op_negotiate(struct input *in)
{
	uint64_t want = vm.vdev->host_features & take64(in);

	if (take8(in) & 1)
		want |= 1ULL << 32;
	if (m.legacy) {
		bar_write(VIRTIO_PCI_STATUS, 3, 1);
		bar_write(VIRTIO_PCI_GUEST_FEATURES, (uint32_t)want, 4);
		return;
	}
	bar_write(VIRTIO_PCI_COMMON_STATUS, 3, 1);
	bar_write(VIRTIO_PCI_COMMON_GFSELECT, 0, 4);
	bar_write(VIRTIO_PCI_COMMON_GF, (uint32_t)want, 4);
	bar_write(VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	bar_write(VIRTIO_PCI_COMMON_GF, want >> 32, 4);
	bar_write(VIRTIO_PCI_COMMON_STATUS, 0xb, 1);
}

/* A queue somewhere in RAM (or near it), as the input says. */
static void op_queue(struct input *in)
{
	uint16_t q = take8(in) % 5;
	uint64_t base = BLK_VM_RAM_GPA + (take16(in) & ~0xfULL);

	if (m.legacy) {
		bar_write(VIRTIO_PCI_QUEUE_SEL, q, 2);
		bar_write(VIRTIO_PCI_QUEUE_PFN, (base >> 12) + take8(in) % 4, 4);
		return;
	}
	bar_write(VIRTIO_PCI_COMMON_Q_SELECT, q, 2);
	bar_write(VIRTIO_PCI_COMMON_Q_SIZE, 1u << take8(in) % 10, 2);
	bar_write(VIRTIO_PCI_COMMON_Q_DESCLO, base, 4);
	bar_write(VIRTIO_PCI_COMMON_Q_AVAILLO, base + take16(in) % 0x1000, 4);
	bar_write(VIRTIO_PCI_COMMON_Q_USEDLO, base + take16(in) % 0x2000, 4);
	bar_write(VIRTIO_PCI_COMMON_Q_MSIX, take8(in) % 8, 2);
	bar_write(VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
}

static void op_driver_ok(struct input *in)
{
	bar_write(m.legacy ? VIRTIO_PCI_STATUS : VIRTIO_PCI_COMMON_STATUS,
		  take8(in) & 1 ? 0x7 : 0xf, 1);
}

/* A notify: through the ioeventfd when the queue is live, else an exit. */
static void op_kick(struct input *in)
{
	uint16_t q = take8(in) % 5;

	if (m.legacy)
		bar_write(VIRTIO_PCI_QUEUE_NOTIFY, q, 2);
	else
		bar_write(OFF_NOTIFY + q * NOTIFY_MUL, q, 2);
}

static void op_msix(struct input *in)
{
	unsigned int v = take8(in) % (m.nr_vectors + 1);
	uint8_t how = take8(in);

	if (m.legacy)
		return;
	if (how & 1) {
		bar_write(OFF_TABLE + 16 * v, 0xfee00000u | take8(in) << 12, 4);
		bar_write(OFF_TABLE + 16 * v + 8, take8(in), 4);
	}
	bar_write(OFF_TABLE + 16 * v + 12, how >> 1 & 1, 4);
	if (how & 4) {
		cfg_port_access(0, 4, true, CFG_ENABLE | SLOT << 11 | CAP_MSIX);
		cfg_port_access(6, 2, true, (how & 8 ? MSIX_ENABLE : 0) |
				(how & 16 ? MSIX_MASKALL : 0));
	}
}

static void setup_model(bool legacy)
{
	unsigned int s, r;

	memset(&m, 0, sizeof(m));
	m.legacy = legacy;
	m.nr_vectors = vm.vdev->nr_queues + 1;
	m.config_vector = 0xffff;
	for (s = 0; s <= SLOT; s++)
		for (r = 0; r < 256; r += 4) {
			uint32_t v = cfg_peek(s, r);

			memcpy(&m.cfg[s][r], &v, 4);
		}
	m.gsi = m.cfg[1][0x3c];
	CHECK(m.gsi < FAKE_VM_MAX_GSIS);
	/* What the bridge and the function declare writable. */
	m.wmask[0][0x04] = 0x07;
	m.wmask[1][0x04] = CMD_IO | CMD_MEM | 0x4;
	m.wmask[1][0x05] = CMD_INTX_OFF >> 8;
	m.wmask[1][0x3c] = 0xff;
	if (legacy) {
		memset(&m.wmask[1][0x11], 0xff, 3);	/* 256-byte I/O BAR */
	} else {
		m.wmask[1][0x21] = 0x80;		/* 32 KiB, 64-bit */
		memset(&m.wmask[1][0x22], 0xff, 6);
		m.wmask[1][CAP_MSIX + 3] = 0xc0;
	}
	for (r = 0; r < m.nr_vectors; r++)
		m.msix[r].ctrl = 1;			/* masked at reset */
}

/* After every step: the queues against the model, then everything. */
static void check_step(void)
{
	check_queues();
	check_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const ops[])(struct input *) = {
		op_cfg_addr, op_cfg_data, op_cfg_reg, op_bar, op_bar, op_bar,
		op_raw, op_negotiate, op_queue, op_driver_ok, op_kick, op_msix,
	};
	struct input in = { .p = data, .n = size };
	uint8_t head = take8(&in);

	blk_vm_start(&vm, head & 1 ? VIRTIO_TRANSPORT_PCI_LEGACY
				   : VIRTIO_TRANSPORT_PCI, 1 + (head >> 1) % 4);
	setup_model(head & 1);
	check_all();
	blk_vm_run(&vm, &in, ops, ARRAY_SIZE(ops), check_step);
	blk_vm_stop(&vm);
	return 0;
}
