// SPDX-License-Identifier: GPL-2.0
/*
 * ACPI tables of the x86 board (ACPI 6.x): RSDP, XSDT and RSDT, a full
 * (not hardware-reduced) FADT with its FACS, the MADT and a DSDT in AML.
 * Everything is written into one caller buffer, RSDP first.
 */
#include <stddef.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/x86/acpi.h"
#include "lkvm/x86/aml.h"
#include "lkvm/x86/layout.h"

#define ACPI_OEM_ID		"LKVM  "
#define ACPI_OEM_TABLE_ID	"LKVMBOAR"
#define ACPI_CREATOR_ID		"LKVM"

struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

struct acpi_rsdp {
	char signature[8];
	uint8_t checksum;		/* of the first 20 bytes (ACPI 1.0) */
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt_address;
	uint32_t length;
	uint64_t xsdt_address;
	uint8_t extended_checksum;	/* of all 36 bytes */
	uint8_t reserved[3];
} __attribute__((packed));

/* Generic Address Structure */
struct acpi_gas {
	uint8_t space_id;
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;
	uint64_t address;
} __attribute__((packed));

#define GAS_SYSTEM_IO		1
#define GAS_ACCESS_WORD		2
#define GAS_ACCESS_DWORD	3

struct acpi_facs {
	char signature[4];
	uint32_t length;
	uint32_t hardware_signature;
	uint32_t waking_vector;
	uint32_t global_lock;
	uint32_t flags;
	uint64_t x_waking_vector;
	uint8_t version;
	uint8_t reserved1[3];
	uint32_t ospm_flags;
	uint8_t reserved2[24];
} __attribute__((packed));

struct acpi_fadt {
	struct acpi_header h;
	uint32_t firmware_ctrl;
	uint32_t dsdt;
	uint8_t reserved1;
	uint8_t preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable;
	uint8_t acpi_disable;
	uint8_t s4bios_req;
	uint8_t pstate_cnt;
	uint32_t pm1a_evt_blk;
	uint32_t pm1b_evt_blk;
	uint32_t pm1a_cnt_blk;
	uint32_t pm1b_cnt_blk;
	uint32_t pm2_cnt_blk;
	uint32_t pm_tmr_blk;
	uint32_t gpe0_blk;
	uint32_t gpe1_blk;
	uint8_t pm1_evt_len;
	uint8_t pm1_cnt_len;
	uint8_t pm2_cnt_len;
	uint8_t pm_tmr_len;
	uint8_t gpe0_blk_len;
	uint8_t gpe1_blk_len;
	uint8_t gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat;
	uint16_t p_lvl3_lat;
	uint16_t flush_size;
	uint16_t flush_stride;
	uint8_t duty_offset;
	uint8_t duty_width;
	uint8_t day_alrm;
	uint8_t mon_alrm;
	uint8_t century;
	uint16_t iapc_boot_arch;
	uint8_t reserved2;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl;
	uint64_t x_dsdt;
	struct acpi_gas x_pm1a_evt_blk;
	struct acpi_gas x_pm1b_evt_blk;
	struct acpi_gas x_pm1a_cnt_blk;
	struct acpi_gas x_pm1b_cnt_blk;
	struct acpi_gas x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk;
	struct acpi_gas x_gpe1_blk;
	struct acpi_gas sleep_control_reg;
	struct acpi_gas sleep_status_reg;
	uint64_t hypervisor_vendor_id;
} __attribute__((packed));

_Static_assert(sizeof(struct acpi_rsdp) == 36, "RSDP layout");
_Static_assert(sizeof(struct acpi_facs) == 64, "FACS layout");
_Static_assert(offsetof(struct acpi_fadt, iapc_boot_arch) == 109, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_dsdt) == 140, "FADT layout");
_Static_assert(sizeof(struct acpi_fadt) == 276, "FADT layout");

/*
 * IAPC_BOOT_ARCH: ISA devices (COM1, RTC), no VGA, and no 8042 advertised:
 * the i8042 has no keyboard behind it, and a kernel told one is there
 * probes it and waits out each unanswered keyboard command. Its reset
 * line still works, because kernels reach it directly to reboot.
 */
#define BOOT_ARCH_LEGACY_DEVICES	(1U << 0)
#define BOOT_ARCH_VGA_NOT_PRESENT	(1U << 2)

/* FADT flags */
#define FADT_WBINVD		(1U << 0)
#define FADT_PROC_C1		(1U << 2)
#define FADT_PWR_BUTTON		(1U << 4)	/* no fixed power button */
#define FADT_SLP_BUTTON		(1U << 5)	/* no fixed sleep button */
#define FADT_FIX_RTC		(1U << 6)	/* no RTC wake status */

/* Latencies above these limits tell the OS C2 and C3 do not exist. */
#define FADT_NO_C2_LATENCY	101
#define FADT_NO_C3_LATENCY	1001

struct acpi_madt {
	struct acpi_header h;
	uint32_t lapic_address;
	uint32_t flags;
} __attribute__((packed));

#define MADT_PCAT_COMPAT	(1U << 0)	/* dual 8259s are present */

#define MADT_LAPIC		0
#define MADT_IOAPIC		1
#define MADT_SRC_OVERRIDE	2
#define MADT_LAPIC_NMI		4

struct madt_lapic {
	uint8_t type;
	uint8_t length;
	uint8_t processor_uid;
	uint8_t apic_id;
	uint32_t flags;
} __attribute__((packed));

#define MADT_LAPIC_ENABLED	(1U << 0)

struct madt_ioapic {
	uint8_t type;
	uint8_t length;
	uint8_t id;
	uint8_t reserved;
	uint32_t address;
	uint32_t gsi_base;
} __attribute__((packed));

struct madt_src_override {
	uint8_t type;
	uint8_t length;
	uint8_t bus;			/* 0: ISA */
	uint8_t source;
	uint32_t gsi;
	uint16_t flags;
} __attribute__((packed));

struct madt_lapic_nmi {
	uint8_t type;
	uint8_t length;
	uint8_t processor_uid;		/* 0xff: every processor */
	uint16_t flags;
	uint8_t lint;
} __attribute__((packed));

/* MPS INTI flags: polarity in bits 1-0, trigger mode in bits 3-2. */
#define MPS_ACTIVE_HIGH		0x1
#define MPS_EDGE		(0x1 << 2)
#define MPS_LEVEL		(0x3 << 2)

/* The buffer being filled, and where in the guest it will sit. */
struct acpi_out {
	uint8_t *buf;
	size_t size;
	size_t used;
	uint64_t base;
};

/* Carve len bytes out of the buffer; NULL when they do not fit. */
static void *place(struct acpi_out *o, size_t len, size_t align,
		   uint32_t *gpa)
{
	size_t off = ALIGN_UP(o->used, align);

	if (off > o->size || len > o->size - off)
		return NULL;
	o->used = off + len;
	*gpa = o->base + off;
	return o->buf + off;
}


static void fill_header(struct acpi_header *h, const char *sig, size_t len,
			uint8_t revision)
{
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = revision;
	memcpy(h->oem_id, ACPI_OEM_ID, 6);
	memcpy(h->oem_table_id, ACPI_OEM_TABLE_ID, 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, ACPI_CREATOR_ID, 4);
	h->creator_revision = 1;
}

/* Checksum last, once every byte of the table is final. */
static void seal(struct acpi_header *h)
{
	h->checksum = 0;
	h->checksum = table_checksum(h, h->length);
}

/*
 * _PRT: INTA-INTD of every slot, swizzled over the GSIs lkvm wires them to
 * (arch_pci_intx_gsi); a GSI straight in the table (no link device) means
 * level-triggered, active-low, shareable.
 */
static void dsdt_pci_prt(struct aml_buf *b)
{
	unsigned int slot, pin;

	aml_name(b, "_PRT");
	aml_package(b, 31 * 4);
	for (slot = 1; slot < 32; slot++) {
		for (pin = 0; pin < 4; pin++) {
			aml_package(b, 4);
			aml_integer(b, ((uint64_t)slot << 16) | 0xffff);
			aml_integer(b, pin);
			aml_integer(b, 0);
			aml_integer(b, X86_PCI_INTX_GSI_BASE + (slot + pin) % 4);
			aml_close(b);
		}
	}
	aml_close(b);
}

static void dsdt_pci_host(struct aml_buf *b)
{
	aml_device(b, "PCI0");
	aml_name_eisaid(b, "_HID", "PNP0A03");
	aml_name_integer(b, "_UID", 0);
	aml_name_integer(b, "_SEG", 0);
	aml_name_integer(b, "_BBN", 0);
	aml_name(b, "_CRS");
	aml_resource_template(b);
	aml_res_word_bus(b, 0, 255);
	/* The config ports are the bridge's own; every other port is routed. */
	aml_res_io(b, X86_PORT_PCI_CONFIG, X86_PORT_PCI_CONFIG, 1, 8);
	aml_res_word_io(b, 0, X86_PORT_PCI_CONFIG - 1, AML_RES_PRODUCER);
	aml_res_word_io(b, X86_PORT_PCI_CONFIG + 8, 0xffff, AML_RES_PRODUCER);
	aml_res_dword_memory(b, X86_PCI_MMIO_START,
			     X86_PCI_MMIO_START + X86_PCI_MMIO_SIZE - 1,
			     AML_RES_PRODUCER);
	aml_close(b);
	dsdt_pci_prt(b);
	aml_close(b);
}

static void dsdt_com1(struct aml_buf *b)
{
	aml_device(b, "COM1");
	aml_name_eisaid(b, "_HID", "PNP0501");
	aml_name_integer(b, "_UID", 1);
	aml_name(b, "_CRS");
	aml_resource_template(b);
	aml_res_io(b, X86_PORT_COM1, X86_PORT_COM1, 1, 8);
	aml_res_irq(b, X86_IRQ_COM1, AML_IRQ_EDGE);
	aml_close(b);
	aml_close(b);
}

static void dsdt_pvpanic(struct aml_buf *b)
{
	aml_device(b, "PVPN");
	aml_name_string(b, "_HID", "QEMU0001");
	aml_name_integer(b, "_UID", 0);
	aml_name(b, "_CRS");
	aml_resource_template(b);
	aml_res_io(b, X86_PORT_PVPANIC, X86_PORT_PVPANIC, 1, 1);
	aml_close(b);
	aml_method_return_integer(b, "_STA", 0x0f);
	aml_close(b);
}

static const char hex_digits[] = "0123456789ABCDEF";

static void dsdt_virtio_mmio(struct aml_buf *b, unsigned int idx,
			     const struct acpi_mmio_dev *dev)
{
	char name[5] = { 'V', 'R', hex_digits[idx >> 4 & 0xf],
			 hex_digits[idx & 0xf], 0 };

	aml_device(b, name);
	aml_name_string(b, "_HID", "LNRO0005");
	aml_name_integer(b, "_UID", idx);
	aml_name(b, "_CRS");
	aml_resource_template(b);
	if (dev->base + dev->size <= X86_4G)
		aml_res_memory32_fixed(b, dev->base, dev->size, true);
	else
		aml_res_qword_memory(b, dev->base, dev->base + dev->size - 1,
				     AML_RES_CONSUMER);
	/* virtio-mmio raises an edge per notification, as Firecracker does. */
	aml_res_ext_irq(b, dev->gsi, AML_IRQ_EDGE | AML_IRQ_ACTIVE_HIGH);
	aml_close(b);
	aml_close(b);
}

/* Processor devices whose _UID matches the MADT's processor UID. */
static void dsdt_cpus(struct aml_buf *b, unsigned int nr_cpus)
{
	for (unsigned int i = 0; i < nr_cpus; i++) {
		char name[5] = { 'C', hex_digits[i >> 8 & 0xf],
				 hex_digits[i >> 4 & 0xf],
				 hex_digits[i & 0xf], 0 };

		aml_device(b, name);
		aml_name_string(b, "_HID", "ACPI0007");
		aml_name_integer(b, "_UID", i);
		aml_close(b);
	}
}

static void dsdt_body(struct aml_buf *b, const struct acpi_config *cfg)
{
	aml_scope(b, "\\_SB");
	dsdt_pci_host(b);
	dsdt_com1(b);
	if (cfg->pvpanic)
		dsdt_pvpanic(b);
	for (unsigned int i = 0; i < cfg->nr_mmio_devs; i++)
		dsdt_virtio_mmio(b, i, &cfg->mmio_devs[i]);
	dsdt_cpus(b, cfg->nr_cpus);
	aml_close(b);

	/* SLP_TYPa, SLP_TYPb, then two reserved entries. */
	aml_name(b, "\\_S5");
	aml_package(b, 4);
	aml_integer(b, X86_SLP_TYP_S5);
	aml_integer(b, X86_SLP_TYP_S5);
	aml_integer(b, 0);
	aml_integer(b, 0);
	aml_close(b);
}

static int build_dsdt(struct acpi_out *o, const struct acpi_config *cfg,
		      uint32_t *gpa)
{
	size_t hdr = sizeof(struct acpi_header);
	size_t off = ALIGN_UP(o->used, 16);
	struct acpi_header *h;
	struct aml_buf b;

	if (off > o->size || o->size - off < hdr)
		return -1;
	/* The AML goes straight into place, behind room for the header. */
	aml_init(&b, o->buf + off + hdr, o->size - off - hdr);
	dsdt_body(&b, cfg);
	if (aml_finish(&b))
		return -1;
	h = place(o, hdr + b.len, 16, gpa);
	if (!h)
		return -1;
	/* Revision 2: integers are 64-bit. */
	fill_header(h, "DSDT", hdr + b.len, 2);
	seal(h);
	return 0;
}

static void gas_io(struct acpi_gas *g, uint16_t port, uint8_t len,
		   uint8_t access)
{
	g->space_id = GAS_SYSTEM_IO;
	g->bit_width = 8 * len;
	g->access_size = access;
	g->address = port;
}

static struct acpi_fadt *build_fadt(struct acpi_out *o, uint32_t facs,
				    uint32_t dsdt, uint32_t *gpa)
{
	struct acpi_fadt *f = place(o, sizeof(*f), 16, gpa);

	if (!f)
		return NULL;
	fill_header(&f->h, "FACP", sizeof(*f), 6);
	f->minor_version = 0;
	/* X_FIRMWARE_CTRL must stay 0 when the 32-bit pointer is used. */
	f->firmware_ctrl = facs;
	f->dsdt = dsdt;
	f->x_dsdt = dsdt;
	f->sci_int = X86_IRQ_SCI;
	/* No SMI command port: the board is always in ACPI mode. */
	f->smi_cmd = 0;
	f->pm1a_evt_blk = X86_PORT_PM1A_EVT;
	f->pm1a_cnt_blk = X86_PORT_PM1A_CNT;
	f->pm_tmr_blk = X86_PORT_PM_TMR;
	f->pm1_evt_len = 4;
	f->pm1_cnt_len = 2;
	f->pm_tmr_len = 4;
	gas_io(&f->x_pm1a_evt_blk, X86_PORT_PM1A_EVT, 4, GAS_ACCESS_WORD);
	gas_io(&f->x_pm1a_cnt_blk, X86_PORT_PM1A_CNT, 2, GAS_ACCESS_WORD);
	gas_io(&f->x_pm_tmr_blk, X86_PORT_PM_TMR, 4, GAS_ACCESS_DWORD);
	f->p_lvl2_lat = FADT_NO_C2_LATENCY;
	f->p_lvl3_lat = FADT_NO_C3_LATENCY;
	f->century = 0x32;	/* the CMOS register hw/rtc.c keeps it in */
	f->iapc_boot_arch = BOOT_ARCH_LEGACY_DEVICES | BOOT_ARCH_VGA_NOT_PRESENT;
	/*
	 * TMR_VAL_EXT stays clear: a 24-bit PM timer is all the OS may
	 * assume. RESET_REG_SUP too: reboot goes through the i8042.
	 */
	f->flags = FADT_WBINVD | FADT_PROC_C1 | FADT_PWR_BUTTON |
		   FADT_SLP_BUTTON | FADT_FIX_RTC;
	memcpy(&f->hypervisor_vendor_id, "LKVM\0\0\0\0", 8);
	seal(&f->h);
	return f;
}

static size_t madt_size(unsigned int nr_cpus)
{
	return sizeof(struct acpi_madt) +
	       nr_cpus * sizeof(struct madt_lapic) +
	       sizeof(struct madt_ioapic) +
	       2 * sizeof(struct madt_src_override) +
	       sizeof(struct madt_lapic_nmi);
}

static void madt_override(struct madt_src_override *s, uint8_t irq,
			  uint32_t gsi, uint16_t flags)
{
	s->type = MADT_SRC_OVERRIDE;
	s->length = sizeof(*s);
	s->bus = 0;
	s->source = irq;
	s->gsi = gsi;
	s->flags = flags;
}

static int build_madt(struct acpi_out *o, unsigned int nr_cpus,
		      uint32_t *gpa)
{
	size_t len = madt_size(nr_cpus);
	struct acpi_madt *m = place(o, len, 16, gpa);
	struct madt_lapic *lapic;
	struct madt_ioapic *ioapic;
	struct madt_src_override *src;
	struct madt_lapic_nmi *nmi;

	if (!m)
		return -1;
	fill_header(&m->h, "APIC", len, 5);
	m->lapic_address = X86_LAPIC_ADDR;
	m->flags = MADT_PCAT_COMPAT;

	lapic = (struct madt_lapic *)(m + 1);
	for (unsigned int i = 0; i < nr_cpus; i++, lapic++) {
		lapic->type = MADT_LAPIC;
		lapic->length = sizeof(*lapic);
		lapic->processor_uid = i;
		lapic->apic_id = i;
		lapic->flags = MADT_LAPIC_ENABLED;
	}

	ioapic = (struct madt_ioapic *)lapic;
	ioapic->type = MADT_IOAPIC;
	ioapic->length = sizeof(*ioapic);
	ioapic->id = x86_ioapic_id(nr_cpus);
	ioapic->address = X86_IOAPIC_ADDR;
	ioapic->gsi_base = 0;

	/* The PIT is wired to pin 2; the SCI is level-triggered. */
	src = (struct madt_src_override *)(ioapic + 1);
	madt_override(&src[0], 0, 2, MPS_ACTIVE_HIGH | MPS_EDGE);
	madt_override(&src[1], X86_IRQ_SCI, X86_IRQ_SCI,
		      MPS_ACTIVE_HIGH | MPS_LEVEL);

	nmi = (struct madt_lapic_nmi *)(src + 2);
	nmi->type = MADT_LAPIC_NMI;
	nmi->length = sizeof(*nmi);
	nmi->processor_uid = 0xff;
	nmi->flags = 0;			/* conforms to the bus */
	nmi->lint = 1;

	seal(&m->h);
	return 0;
}

/* XSDT (64-bit entries) or RSDT (32-bit), listing the given tables. */
static int build_sdt(struct acpi_out *o, const char *sig, size_t entry,
		     const uint32_t *tables, size_t nr, uint32_t *gpa)
{
	size_t len = sizeof(struct acpi_header) + nr * entry;
	struct acpi_header *h = place(o, len, 16, gpa);
	uint8_t *p;

	if (!h)
		return -1;
	fill_header(h, sig, len, 1);
	p = (uint8_t *)(h + 1);
	for (size_t i = 0; i < nr; i++, p += entry) {
		uint64_t addr = tables[i];

		memcpy(p, &addr, entry);	/* little-endian host */
	}
	seal(h);
	return 0;
}

static void build_rsdp(struct acpi_rsdp *r, uint32_t rsdt, uint32_t xsdt)
{
	memcpy(r->signature, "RSD PTR ", 8);
	memcpy(r->oem_id, ACPI_OEM_ID, 6);
	r->revision = 2;
	r->rsdt_address = rsdt;
	r->length = sizeof(*r);
	r->xsdt_address = xsdt;
	r->checksum = table_checksum(r, 20);
	r->extended_checksum = table_checksum(r, sizeof(*r));
}

static bool config_ok(const struct acpi_config *cfg)
{
	if (cfg->nr_cpus == 0 || cfg->nr_cpus > ACPI_MAX_CPUS ||
	    cfg->nr_mmio_devs > ACPI_MAX_MMIO_DEVS)
		return false;
	for (unsigned int i = 0; i < cfg->nr_mmio_devs; i++) {
		const struct acpi_mmio_dev *d = &cfg->mmio_devs[i];
		uint64_t end;

		if (!d->size || u64_add_overflows(d->base, d->size, &end))
			return false;
	}
	return true;
}

int acpi_build_tables(void *buf, size_t size, uint64_t base,
		      const struct acpi_config *cfg, uint64_t *rsdp_gpa)
{
	struct acpi_out o = { .buf = buf, .size = size, .base = base };
	uint32_t rsdp, facs, dsdt, tables[2], rsdt, xsdt;
	struct acpi_rsdp *r;
	struct acpi_facs *fs;

	/* Pure code: the caller, who knows the context, reports failures. */
	if (!config_ok(cfg))
		return -1;
	/* Every pointer must fit the 32-bit fields; scanners want 16-byte. */
	if (base % 16 || !range_within(base, size, 0, X86_4G))
		return -1;
	memset(buf, 0, size);

	r = place(&o, sizeof(*r), 16, &rsdp);
	fs = place(&o, sizeof(*fs), 64, &facs);
	if (!r || !fs)
		return -1;
	memcpy(fs->signature, "FACS", 4);
	fs->length = sizeof(*fs);
	fs->version = 2;

	if (build_dsdt(&o, cfg, &dsdt) ||
	    !build_fadt(&o, facs, dsdt, &tables[0]) ||
	    build_madt(&o, cfg->nr_cpus, &tables[1]) ||
	    build_sdt(&o, "XSDT", 8, tables, ARRAY_SIZE(tables), &xsdt) ||
	    build_sdt(&o, "RSDT", 4, tables, ARRAY_SIZE(tables), &rsdt))
		return -1;

	build_rsdp(r, rsdt, xsdt);
	*rsdp_gpa = rsdp;
	return 0;
}
