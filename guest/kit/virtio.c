// SPDX-License-Identifier: GPL-2.0
/*
 * The guest kit's virtio driver (see virtio.h): just enough of a driver to
 * test lkvm's devices from the inside. One request in flight at a time is
 * the common case; the tests that need more use vio_add() and vio_kick()
 * themselves. virtio-mmio is here; the calls that touch registers hand
 * virtio-pci devices to virtio_pci.c.
 */
#include "virtio.h"
#include "virtio_pci.h"

unsigned long vio_reg_reads, vio_reg_writes, vio_kicks;

/* lkvm's slot -> GSI table (x86/arch.c, mmio_dev_gsis). */
static const uint8_t slot_gsis[VIO_MMIO_SLOTS] = {
	5, 6, 7, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23
};

/* x86 keeps stores in order; the device needs our stores before our loads. */
static inline void vio_mb(void)
{
	asm volatile("mfence" ::: "memory");
}

static inline uint16_t load16(const uint16_t *p)
{
	return *(const volatile uint16_t *)p;
}

static inline void store16(uint16_t *p, uint16_t v)
{
	*(volatile uint16_t *)p = v;
}

uint32_t vio_read(const struct vio_dev *d, unsigned int reg)
{
	vio_reg_reads++;
	return mmio_read32(d->base + reg);
}

void vio_write(const struct vio_dev *d, unsigned int reg, uint32_t v)
{
	vio_reg_writes++;
	mmio_write32(d->base + reg, v);
}

static bool is_pci(const struct vio_dev *d)
{
	return d->transport != VIO_MMIO;
}

uint8_t vio_config_read8(const struct vio_dev *d, unsigned int off)
{
	if (is_pci(d))
		return vio_pci_config_read(d, off, 1);
	vio_reg_reads++;
	return mmio_read8(d->base + VIRTIO_MMIO_CONFIG + off);
}

uint32_t vio_config_read32(const struct vio_dev *d, unsigned int off)
{
	if (is_pci(d))
		return vio_pci_config_read(d, off, 4);
	return vio_read(d, VIRTIO_MMIO_CONFIG + off);
}

void vio_config_write32(const struct vio_dev *d, unsigned int off, uint32_t v)
{
	if (is_pci(d))
		vio_pci_config_write32(d, off, v);
	else
		vio_write(d, VIRTIO_MMIO_CONFIG + off, v);
}

uint32_t vio_config_generation(const struct vio_dev *d)
{
	if (is_pci(d))
		return vio_pci_config_generation(d);
	return vio_read(d, VIRTIO_MMIO_CONFIG_GENERATION);
}

uint64_t vio_config_read64(const struct vio_dev *d, unsigned int off)
{
	uint32_t gen, lo, hi;

	/* legacy has no generation: the same value twice will do */
	do {
		gen = vio_config_generation(d);
		lo = vio_config_read32(d, off);
		hi = vio_config_read32(d, off + 4);
	} while (gen != vio_config_generation(d) ||
		 (d->transport == VIO_PCI_LEGACY &&
		  (lo != vio_config_read32(d, off) ||
		   hi != vio_config_read32(d, off + 4))));
	return ((uint64_t)hi << 32) | lo;
}

int vio_slot_gsi(unsigned int slot)
{
	return slot < VIO_MMIO_SLOTS ? slot_gsis[slot] : -1;
}

enum vio_transport vio_cmdline_transport(enum vio_transport dflt)
{
	char name[16];

	if (!kit_cmdline_get("transport", name, sizeof(name)))
		return dflt;
	if (!strcmp(name, "pci"))
		return VIO_PCI;
	if (!strcmp(name, "legacy"))
		return VIO_PCI_LEGACY;
	if (strcmp(name, "mmio")) {
		kit_fail("transport=%s: not mmio, pci or legacy", name);
		kit_finish();
	}
	return VIO_MMIO;
}

unsigned int vio_find(struct vio_dev *devs, unsigned int max)
{
	unsigned int slot, n = 0;

	for (slot = 0; slot < VIO_MMIO_SLOTS && n < max; slot++) {
		struct vio_dev d = {
			.base = VIO_MMIO_BASE + slot * VIO_MMIO_SLOT_SIZE,
			.slot = slot,
			.gsi = slot_gsis[slot],
		};

		if (vio_read(&d, VIRTIO_MMIO_MAGIC_VALUE) != VIO_MMIO_MAGIC)
			continue;
		if (vio_read(&d, VIRTIO_MMIO_VERSION) != 2) {
			kit_printf("virtio: slot %u: version %u, not 2\n", slot,
				   vio_read(&d, VIRTIO_MMIO_VERSION));
			continue;
		}
		/* ID 0 is a placeholder slot without a device (4.2.3.1.1). */
		d.device_id = vio_read(&d, VIRTIO_MMIO_DEVICE_ID);
		if (!d.device_id)
			continue;
		devs[n++] = d;
	}
	return n;
}

static uint32_t le32_at(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Not an AML interpreter: lkvm emits each device as _HID string, _UID,
 * then a _CRS buffer, so the resource descriptors follow the _HID within
 * a few dozen bytes and before the next device's _HID.
 */
bool vio_dsdt_lookup(uintptr_t base, uint32_t *size, uint32_t *gsi,
		     bool *edge_high)
{
	static const char hid[] = "LNRO0005";
	const struct acpi_header *dsdt = kit_acpi_dsdt();
	const uint8_t *p, *end, *q, *dev_end;

	if (!dsdt)
		return false;
	p = (const uint8_t *)dsdt;
	end = p + dsdt->length;
	for (; p + sizeof(hid) < end; p++) {
		bool found_mem = false;

		if (memcmp(p, hid, sizeof(hid)))	/* with its NUL */
			continue;
		dev_end = p + 128 < end ? p + 128 : end;
		for (q = p + sizeof(hid); q + 12 <= dev_end; q++) {
			if (!memcmp(q, hid, sizeof(hid)))
				break;
			/* Memory32Fixed: tag 0x86, length 9 */
			if (!found_mem && q[0] == 0x86 && q[1] == 9 && q[2] == 0) {
				if (le32_at(q + 4) != base)
					break;
				*size = le32_at(q + 8);
				found_mem = true;
				q += 11;
				continue;
			}
			/* Extended Interrupt: tag 0x89, one interrupt */
			if (found_mem && q[0] == 0x89 && q[1] == 6 && q[2] == 0 &&
			    q[4] == 1) {
				*gsi = le32_at(q + 5);
				/* bit 1 edge, bit 2 active-low */
				*edge_high = (q[3] & 0x6) == 0x2;
				return true;
			}
		}
	}
	return false;
}

uint8_t vio_status(const struct vio_dev *d)
{
	if (is_pci(d))
		return vio_pci_status(d);
	return vio_read(d, VIRTIO_MMIO_STATUS);
}

void vio_set_status(const struct vio_dev *d, uint8_t status)
{
	if (is_pci(d)) {
		vio_pci_set_status(d, status);
		return;
	}
	vio_write(d, VIRTIO_MMIO_STATUS, status);
}

bool vio_reset(const struct vio_dev *d)
{
	uint64_t start = kit_now_us();

	vio_set_status(d, 0);
	/* 4.2.3.1: the reset is done when Status reads back 0. */
	while (vio_status(d)) {
		if (kit_now_us() - start > 1000000)
			return false;
		kit_udelay(100);
	}
	return true;
}

int vio_negotiate(struct vio_dev *d, uint64_t wanted)
{
	uint8_t status;

	if (!vio_reset(d)) {
		kit_printf("virtio: slot %u: reset did not complete\n", d->slot);
		return -1;
	}
	vio_set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	vio_set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);

	if (is_pci(d)) {
		vio_pci_features(d, wanted);
		/* a legacy device has no FEATURES_OK to agree with */
		if (d->transport == VIO_PCI_LEGACY)
			return 0;
		goto features_ok;
	}
	vio_write(d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	d->offered = vio_read(d, VIRTIO_MMIO_DEVICE_FEATURES);
	vio_write(d, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	d->offered |= (uint64_t)vio_read(d, VIRTIO_MMIO_DEVICE_FEATURES) << 32;

	d->features = d->offered & (wanted | (1ULL << VIRTIO_F_VERSION_1));
	vio_write(d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	vio_write(d, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)d->features);
	vio_write(d, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	vio_write(d, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(d->features >> 32));

features_ok:
	status = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
		 VIRTIO_CONFIG_S_FEATURES_OK;
	vio_set_status(d, status);
	if (!(vio_status(d) & VIRTIO_CONFIG_S_FEATURES_OK)) {
		kit_printf("virtio: slot %u: features %#llx not accepted\n",
			   d->slot, (unsigned long long)d->features);
		vio_set_status(d, status | VIRTIO_CONFIG_S_FAILED);
		return -1;
	}
	return 0;
}

void vio_driver_ok(const struct vio_dev *d)
{
	if (d->transport == VIO_PCI_LEGACY) {
		vio_set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE |
				  VIRTIO_CONFIG_S_DRIVER |
				  VIRTIO_CONFIG_S_DRIVER_OK);
		return;
	}
	vio_set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			  VIRTIO_CONFIG_S_FEATURES_OK |
			  VIRTIO_CONFIG_S_DRIVER_OK);
}

uint32_t vio_isr(const struct vio_dev *d)
{
	if (is_pci(d))
		return vio_pci_isr(d);
	return vio_read(d, VIRTIO_MMIO_INTERRUPT_STATUS);
}

void vio_isr_ack(const struct vio_dev *d, uint32_t bits)
{
	/* virtio-pci: the read that returned the bits acknowledged them */
	if (is_pci(d))
		return;
	vio_write(d, VIRTIO_MMIO_INTERRUPT_ACK, bits);
}

/* ---- interrupts, seen in the LAPIC IRR ---- */

#define IOAPIC_REGSEL		0x00
#define IOAPIC_WINDOW		0x10
#define IOAPIC_REDIR(pin)	(0x10 + 2 * (pin))
#define IOAPIC_MASKED		(1u << 16)
#define LAPIC_IRR		0x200
#define LAPIC_SVR_ENABLE	(1u << 8)
#define PIC1_DATA		0x21
#define PIC2_DATA		0xa1

static void ioapic_write(unsigned int reg, uint32_t v)
{
	mmio_write32(KIT_IOAPIC_ADDR + IOAPIC_REGSEL, reg);
	mmio_write32(KIT_IOAPIC_ADDR + IOAPIC_WINDOW, v);
}

void vio_irq_route(const struct vio_dev *d, unsigned int vector)
{
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
	lapic_write(LAPIC_SVR, LAPIC_SVR_ENABLE | 0xff);
	ioapic_write(IOAPIC_REDIR(d->gsi) + 1, 0);
	ioapic_write(IOAPIC_REDIR(d->gsi), vector);
}

void vio_irq_mask(const struct vio_dev *d)
{
	ioapic_write(IOAPIC_REDIR(d->gsi), IOAPIC_MASKED);
}

bool vio_irq_pending(unsigned int vector)
{
	return lapic_read(LAPIC_IRR + 0x10 * (vector / 32)) &
	       (1u << (vector % 32));
}

bool vio_irq_wait(unsigned int vector, uint64_t us)
{
	uint64_t start = kit_now_us();

	do {
		if (vio_irq_pending(vector))
			return true;
		kit_udelay(50);
	} while (kit_now_us() - start < us);
	return false;
}

/* ---- queues ---- */

void vio_queue_free(struct vio_queue *q)
{
	unsigned int i;

	if (q->indirect) {
		for (i = 0; i < q->size; i++)
			if (q->indirect[i])
				kit_free(q->indirect[i]);
	}
	if (q->ring) {
		kit_free(q->ring);
	} else {
		if (q->desc)
			kit_free(q->desc);
		if (q->avail)
			kit_free(q->avail);
		if (q->used)
			kit_free(q->used);
	}
	if (q->chain_len)
		kit_free(q->chain_len);
	if (q->indirect)
		kit_free(q->indirect);
	memset(q, 0, sizeof(*q));
}

#define LEGACY_ALIGN		4096

static int queue_alloc(struct vio_queue *q, struct vio_dev *d,
		       unsigned int index, unsigned int size, bool legacy)
{
	unsigned int i;

	memset(q, 0, sizeof(*q));
	if (!size || size > 32768 || (size & (size - 1)))
		return -1;
	q->dev = d;
	q->index = index;
	q->size = size;
	q->event_idx = d->features & (1ULL << VIRTIO_RING_F_EVENT_IDX);
	if (legacy) {
		/*
		 * 2.7.2 legacy layout: one page-aligned block, avail right
		 * after desc, used on the next 4 KiB boundary.
		 */
		size_t used_off = (16 * size + 6 + 2 * size + LEGACY_ALIGN - 1) &
				  ~(size_t)(LEGACY_ALIGN - 1);
		size_t bytes = used_off + 6 + 8 * size;
		uintptr_t p;

		q->ring = kit_zalloc(bytes + LEGACY_ALIGN);
		if (q->ring) {
			p = ((uintptr_t)q->ring + LEGACY_ALIGN - 1) &
			    ~(uintptr_t)(LEGACY_ALIGN - 1);
			q->desc = (void *)p;
			q->avail = (void *)(p + 16 * size);
			q->used = (void *)(p + used_off);
		}
	} else {
		/* 2.7: desc 16-aligned, avail 2, used 4; the heap gives 16. */
		q->desc = kit_zalloc(16 * size);
		q->avail = kit_zalloc(6 + 2 * size);
		q->used = kit_zalloc(6 + 8 * size);
	}
	q->chain_len = kit_zalloc(2 * size);
	q->indirect = kit_zalloc(sizeof(*q->indirect) * size);
	if (!q->desc || !q->avail || !q->used || !q->chain_len ||
	    !q->indirect) {
		kit_printf("virtio: out of heap for a %u-entry queue\n", size);
		vio_queue_free(q);
		return -1;
	}
	q->used_event = &q->avail->ring[size];
	q->avail_event = (uint16_t *)&q->used->ring[size];
	for (i = 0; i < size; i++)
		q->desc[i].next = i + 1;
	q->nr_free = size;
	return 0;
}

int vio_queue_alloc(struct vio_queue *q, struct vio_dev *d,
		    unsigned int index, unsigned int size)
{
	return queue_alloc(q, d, index, size, false);
}

int vio_queue_alloc_legacy(struct vio_queue *q, struct vio_dev *d,
			   unsigned int index, unsigned int size)
{
	return queue_alloc(q, d, index, size, true);
}

bool vio_queue_enabled(struct vio_queue *q)
{
	if (is_pci(q->dev))
		return vio_pci_queue_enabled(q);
	vio_write(q->dev, VIRTIO_MMIO_QUEUE_SEL, q->index);
	return vio_read(q->dev, VIRTIO_MMIO_QUEUE_READY) == 1;
}

static void queue_addr(const struct vio_dev *d, unsigned int lo_reg,
		       const void *p)
{
	uint64_t a = (uintptr_t)p;

	vio_write(d, lo_reg, (uint32_t)a);
	vio_write(d, lo_reg + 4, (uint32_t)(a >> 32));
}

int vio_queue_program(struct vio_queue *q, unsigned int num)
{
	const struct vio_dev *d = q->dev;
	uint32_t max;

	if (is_pci(d)) {
		kit_printf("virtio: vio_queue_program is virtio-mmio only\n");
		return -1;
	}
	vio_write(d, VIRTIO_MMIO_QUEUE_SEL, q->index);
	if (vio_read(d, VIRTIO_MMIO_QUEUE_READY)) {
		kit_printf("virtio: queue %u is already ready\n", q->index);
		return -1;
	}
	max = vio_read(d, VIRTIO_MMIO_QUEUE_NUM_MAX);
	if (!max) {
		kit_printf("virtio: queue %u does not exist\n", q->index);
		return -1;
	}
	vio_write(d, VIRTIO_MMIO_QUEUE_NUM, num);
	queue_addr(d, VIRTIO_MMIO_QUEUE_DESC_LOW, q->desc);
	queue_addr(d, VIRTIO_MMIO_QUEUE_AVAIL_LOW, q->avail);
	queue_addr(d, VIRTIO_MMIO_QUEUE_USED_LOW, q->used);
	vio_write(d, VIRTIO_MMIO_QUEUE_READY, 1);
	return 0;
}

int vio_queue_setup(struct vio_queue *q, struct vio_dev *d,
		    unsigned int index, unsigned int want)
{
	uint32_t max;

	if (is_pci(d))
		return vio_pci_queue_setup(q, d, index, want);
	vio_write(d, VIRTIO_MMIO_QUEUE_SEL, index);
	max = vio_read(d, VIRTIO_MMIO_QUEUE_NUM_MAX);
	if (!max) {
		kit_printf("virtio: slot %u has no queue %u\n", d->slot, index);
		return -1;
	}
	if (want > max)
		want = max;
	if (vio_queue_alloc(q, d, index, want))
		return -1;
	if (vio_queue_program(q, want)) {
		vio_queue_free(q);
		return -1;
	}
	return 0;
}

/* Takes n descriptors off the free list, linked in free-list order. */
static int desc_take(struct vio_queue *q, unsigned int n)
{
	if (!n || n > q->nr_free)
		return -1;
	q->nr_free -= n;
	return q->free_head;
}

static void fill_desc(struct vring_desc *d, const struct vio_buf *b,
		      bool more)
{
	d->addr = b->addr;
	d->len = b->len;
	d->flags = (b->write ? VRING_DESC_F_WRITE : 0) |
		   (more ? VRING_DESC_F_NEXT : 0);
}

int vio_add(struct vio_queue *q, const struct vio_buf *bufs, unsigned int n,
	    bool indirect)
{
	unsigned int i, idx;
	int head;

	if (!n)
		return -1;
	head = desc_take(q, indirect ? 1 : n);
	if (head < 0)
		return -1;
	if (indirect) {
		struct vring_desc *t = kit_malloc(16 * n);

		if (!t) {
			q->nr_free++;
			return -1;
		}
		for (i = 0; i < n; i++) {
			fill_desc(&t[i], &bufs[i], i + 1 < n);
			t[i].next = i + 1;
		}
		q->desc[head].addr = (uintptr_t)t;
		q->desc[head].len = 16 * n;
		q->desc[head].flags = VRING_DESC_F_INDIRECT;
		q->free_head = q->desc[head].next;
		q->indirect[head] = t;
		q->chain_len[head] = 1;
	} else {
		idx = head;
		for (i = 0; i < n; i++) {
			fill_desc(&q->desc[idx], &bufs[i], i + 1 < n);
			if (i + 1 < n)
				idx = q->desc[idx].next;
		}
		q->free_head = q->desc[idx].next;
		q->chain_len[head] = n;
	}
	vio_raw_publish(q, head, 1);
	return head;
}

void vio_raw_desc(struct vio_queue *q, unsigned int i, uint64_t addr,
		  uint32_t len, uint16_t flags, uint16_t next)
{
	q->desc[i].addr = addr;
	q->desc[i].len = len;
	q->desc[i].flags = flags;
	q->desc[i].next = next;
}

void vio_raw_publish(struct vio_queue *q, uint16_t head, uint16_t delta)
{
	store16(&q->avail->ring[q->avail_idx & (q->size - 1)], head);
	/* x86 keeps the ring entry before the index; the compiler must too */
	barrier();
	q->avail_idx += delta;
	store16(&q->avail->idx, q->avail_idx);
}

void vio_raw_submit(struct vio_queue *q, uint16_t head, uint16_t delta)
{
	if (head < q->size)
		q->chain_len[head] = 1;
	vio_raw_publish(q, head, delta);
	vio_notify(q);
}

void vio_notify(struct vio_queue *q)
{
	vio_kicks++;
	if (is_pci(q->dev))
		vio_pci_notify(q);
	else
		vio_write(q->dev, VIRTIO_MMIO_QUEUE_NOTIFY, q->index);
}

bool vio_kick(struct vio_queue *q)
{
	uint16_t old = q->kicked_idx, new = q->avail_idx;
	bool need;

	/* our avail->idx store before the load of what the device wants */
	vio_mb();
	if (q->event_idx)
		need = vring_need_event(load16(q->avail_event), new, old);
	else
		need = !(load16(&q->used->flags) & VRING_USED_F_NO_NOTIFY);
	q->kicked_idx = new;
	if (need)
		vio_notify(q);
	return need;
}

void vio_want_interrupt(struct vio_queue *q, bool want)
{
	if (q->event_idx) {
		/* one before what we consumed: the device's test never passes */
		store16(q->used_event, want ? q->last_used
					    : (uint16_t)(q->last_used - 1));
	} else {
		store16(&q->avail->flags, want ? 0 : VRING_AVAIL_F_NO_INTERRUPT);
	}
	vio_mb();
}

static void desc_put(struct vio_queue *q, uint16_t head)
{
	unsigned int n = q->chain_len[head], idx = head;

	while (--n)
		idx = q->desc[idx].next;
	q->desc[idx].next = q->free_head;
	q->free_head = head;
	q->nr_free += q->chain_len[head];
	q->chain_len[head] = 0;
	if (q->indirect[head]) {
		kit_free(q->indirect[head]);
		q->indirect[head] = NULL;
	}
}

bool vio_get_used(struct vio_queue *q, uint32_t *id, uint32_t *len)
{
	struct vring_used_elem *e;
	uint16_t used_idx = load16(&q->used->idx);

	if (used_idx == q->last_used)
		return false;
	/* x86 does not reorder loads; the element is read after the index */
	barrier();
	if ((uint16_t)(used_idx - q->last_used) > q->size)
		kit_fail("virtio: used->idx %u ran %u past our %u (size %u)",
			 used_idx, (uint16_t)(used_idx - q->last_used),
			 q->last_used, q->size);
	e = &q->used->ring[q->last_used & (q->size - 1)];
	*id = *(volatile uint32_t *)&e->id;
	*len = *(volatile uint32_t *)&e->len;
	q->last_used++;
	if (*id < q->size && q->chain_len[*id])
		desc_put(q, *id);
	else
		kit_fail("virtio: the device used id %u, which we never gave it",
			 *id);
	/*
	 * Keep asking for an interrupt at the next completion. The store
	 * must be visible before our next look at used->idx: otherwise the
	 * device may read the old used_event after publishing, send nothing,
	 * and we wait for an interrupt that never comes.
	 */
	if (q->event_idx) {
		store16(q->used_event, q->last_used);
		vio_mb();
	}
	return true;
}

enum vio_wait vio_wait_used(struct vio_queue *q, uint64_t timeout_us,
			    bool watch_status, uint32_t *id, uint32_t *len)
{
	uint64_t start = kit_now_us();
	unsigned int spins = 0;

	for (;;) {
		if (vio_get_used(q, id, len))
			return VIO_WAIT_USED;
		/* clock and Status reads exit to the VMM: not every spin */
		if (++spins % 64)
			continue;
		if (watch_status &&
		    (vio_status(q->dev) & VIO_STATUS_NEEDS_RESET))
			return VIO_WAIT_NEEDS_RESET;
		if (kit_now_us() - start > timeout_us)
			return VIO_WAIT_TIMEOUT;
		cpu_relax();
	}
}

/* ---- virtio-blk ---- */

int vio_blk_request(struct vio_queue *q, uint32_t type, uint64_t sector,
		    const struct vio_buf *data, unsigned int n, bool indirect,
		    uint32_t *used_len, enum vio_wait *wait)
{
	struct virtio_blk_outhdr *hdr = kit_malloc(sizeof(*hdr));
	volatile uint8_t *status = kit_malloc(1);
	struct vio_buf bufs[16];
	enum vio_wait w = VIO_WAIT_TIMEOUT;
	uint32_t id = 0, len = 0;
	unsigned int i;
	int head, ret = -1;

	if (!hdr || !status || n > ARRAY_SIZE(bufs) - 2)
		goto out;
	hdr->type = type;
	hdr->ioprio = 0;
	hdr->sector = sector;
	*status = 0xff;		/* not a status the device may write */
	bufs[0] = (struct vio_buf){ (uintptr_t)hdr, sizeof(*hdr), false };
	for (i = 0; i < n; i++)
		bufs[1 + i] = data[i];
	bufs[1 + n] = (struct vio_buf){ (uintptr_t)status, 1, true };
	head = vio_add(q, bufs, n + 2, indirect);
	if (head < 0) {
		kit_fail("virtio-blk: no room in the ring");
		goto out;
	}
	vio_kick(q);
	w = vio_wait_used(q, VIO_BLK_TIMEOUT_US, true, &id, &len);
	if (w == VIO_WAIT_USED) {
		kit_check(id == (uint32_t)head,
			  "virtio-blk: used id %u, expected head %d", id, head);
		ret = *status;
	}
out:
	if (used_len)
		*used_len = len;
	if (wait)
		*wait = w;
	/* a request that never completed may still be written to: leak it */
	if (w == VIO_WAIT_USED) {
		kit_free(hdr);
		kit_free((void *)status);
	}
	return ret;
}

int vio_blk_rw(struct vio_queue *q, bool write, uint64_t sector, void *buf,
	       uint32_t len, bool indirect)
{
	struct vio_buf b = { (uintptr_t)buf, len, !write };

	return vio_blk_request(q, write ? VIRTIO_BLK_T_OUT : VIRTIO_BLK_T_IN,
			       sector, &b, 1, indirect, NULL, NULL);
}
