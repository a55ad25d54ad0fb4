/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tables.elf: checks the firmware tables and memory map a VMM hands a PVH
 * guest. RSDP by scan and through start_info (same one), every ACPI
 * checksum, the XSDT's FACP/APIC and the DSDT behind the FADT, the MADT's
 * processors against cpus=N, the MP table found by scan with N processors,
 * and the start_info memory map against mem=MiB with no RAM in the legacy
 * hole or the 32-bit PCI hole.
 */
#include "kit.h"

#define MIB		(1ULL << 20)
#define GIB		(1ULL << 30)

static uint32_t madt_ids[KIT_MAX_CPUS];
static unsigned int nr_madt;

static bool sig_printable(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/* A table reachable from the root pointer: present, sane, summing to 0. */
static const struct acpi_header *check_table(uint64_t addr, const char *want)
{
	const struct acpi_header *t;

	if (!kit_check(addr && addr < (1ULL << 32),
		       "%s table address %#lx unusable", want ? want : "ACPI",
		       addr))
		return NULL;
	t = kit_phys(addr);
	if (!kit_check(sig_printable(t->signature),
		       "table at %#lx has no signature", addr))
		return NULL;
	if (want && !kit_check(!memcmp(t->signature, want, 4),
			       "expected %s at %#lx, found %.4s", want, addr,
			       t->signature))
		return NULL;
	kit_printf("  %c%c%c%c at %#lx len %u rev %u\n", t->signature[0],
		   t->signature[1], t->signature[2], t->signature[3], addr,
		   t->length, t->revision);
	if (!kit_check(t->length >= sizeof(*t) && t->length < (1u << 20),
		       "%.4s length %u", t->signature, t->length))
		return NULL;
	kit_check(!kit_checksum(t, t->length), "%c%c%c%c checksum",
		  t->signature[0], t->signature[1], t->signature[2],
		  t->signature[3]);
	return t;
}

static void check_rsdp(void)
{
	const struct acpi_rsdp *scan = kit_acpi_rsdp_scan();
	const struct acpi_rsdp *si = kit_acpi_rsdp_start_info();

	kit_printf("RSDP by scan at %p, start_info says %p\n", scan, si);
	kit_check(scan, "no RSDP found by scanning 0xe0000-0xfffff");
	kit_check(si, "start_info.rsdp_paddr is 0");
	if (si)
		kit_check(kit_acpi_rsdp_valid(si),
			  "start_info.rsdp_paddr %p is not a valid RSDP", si);
	if (scan && si)
		kit_check(scan == si, "scan found %p, start_info says %p",
			  scan, si);
}

static void check_fadt(const struct acpi_fadt *f)
{
	uint64_t dsdt = f->dsdt;
	uint64_t facs = f->firmware_ctrl;

	if (f->hdr.length >= offsetof(struct acpi_fadt, x_dsdt) + 8) {
		if (f->x_dsdt && f->dsdt)
			kit_check(f->x_dsdt == f->dsdt,
				  "FADT DSDT %#x != X_DSDT %#lx", f->dsdt,
				  f->x_dsdt);
		if (f->x_dsdt)
			dsdt = f->x_dsdt;
		if (f->x_firmware_ctrl)
			facs = f->x_firmware_ctrl;
	}
	bool hw_reduced = f->hdr.length > offsetof(struct acpi_fadt, flags) &&
			  (f->flags & ACPI_FADT_HW_REDUCED);

	check_table(dsdt, "DSDT");
	kit_check(kit_acpi_s5_slp_typ() >= 0, "no \\_S5 package in the DSDT");
	kit_check(facs || hw_reduced, "FADT points at no FACS");
	if (facs && kit_check(facs < (1ULL << 32), "FACS above 4 GiB")) {
		const struct acpi_header *t = kit_phys(facs);

		/* The FACS has a signature and length but no checksum. */
		kit_check(!memcmp(t->signature, "FACS", 4) &&
			  t->length >= 64, "FACS at %#lx malformed", facs);
	}
	if (!hw_reduced)
		kit_check(f->pm1a_cnt_blk || f->x_pm1a_cnt_blk.address,
			  "FADT has no PM1a control block");
	if (f->pm_tmr_blk && f->pm_tmr_blk < 0x10000) {
		uint16_t port = (uint16_t)f->pm_tmr_blk;
		uint32_t a = inl(port), b = a;

		/* 3.58 MHz: a few port reads apart it must have moved. */
		for (int i = 0; i < 100 && b == a; i++)
			b = inl(port);
		kit_check(a != b, "PM timer at %#x does not run (%#x)", port, a);
	}
	kit_printf("  FADT: SCI %u, PM1a_EVT %#x, PM1a_CNT %#x, PM_TMR %#x, "
		   "S5 SLP_TYP %d\n", f->sci_int, f->pm1a_evt_blk,
		   f->pm1a_cnt_blk, f->pm_tmr_blk, kit_acpi_s5_slp_typ());
}

static void check_madt(const struct acpi_madt *m, unsigned int want)
{
	const uint8_t *p = m->entries, *end = (const uint8_t *)m + m->hdr.length;
	unsigned int nioapic = 0;
	bool ioapic_at_base = false;

	kit_check(m->lapic_addr == KIT_LAPIC_ADDR, "MADT LAPIC address %#x",
		  m->lapic_addr);
	while (p + 2 <= end) {
		const struct acpi_madt_entry *e = (const void *)p;

		if (!kit_check(e->length >= 2 && p + e->length <= end,
			       "MADT entry at offset %lu overruns the table",
			       (uintptr_t)(p - (const uint8_t *)m)))
			break;
		if (e->type == ACPI_MADT_IOAPIC && e->length >= 12) {
			uint32_t addr;

			memcpy(&addr, p + 4, 4);
			kit_printf("  IOAPIC id %u at %#x gsi base %u\n", p[2],
				   addr, p[8] | p[9] << 8 | p[10] << 16 |
				   (uint32_t)p[11] << 24);
			ioapic_at_base |= addr == KIT_IOAPIC_ADDR;
			nioapic++;
		}
		p += e->length;
	}
	kit_check(nioapic >= 1, "MADT lists no IOAPIC");
	kit_check(!nioapic || ioapic_at_base, "no IOAPIC at %#lx",
		  KIT_IOAPIC_ADDR);

	nr_madt = kit_madt_apic_ids(madt_ids, ARRAY_SIZE(madt_ids));
	kit_printf("  MADT: %u enabled processors:", nr_madt);
	for (unsigned int i = 0; i < nr_madt && i < KIT_MAX_CPUS; i++)
		kit_printf(" %u", madt_ids[i]);
	kit_printf("\n");
	if (want)
		kit_check(nr_madt == want, "MADT has %u processors, cpus=%u",
			  nr_madt, want);
	for (unsigned int i = 0; i < nr_madt && i < KIT_MAX_CPUS; i++)
		for (unsigned int j = 0; j < i; j++)
			kit_check(madt_ids[i] != madt_ids[j],
				  "MADT APIC ID %u listed twice", madt_ids[i]);
}

static void check_acpi(unsigned int want_cpus)
{
	const struct acpi_rsdp *r = kit_acpi_rsdp();
	const struct acpi_header *root, *fadt = NULL, *madt = NULL;
	bool x;
	unsigned int n;

	if (!r)
		return;
	kit_printf("RSDP rev %u, RSDT %#x, XSDT %#lx\n", r->revision,
		   r->rsdt_addr, r->revision >= 2 ? r->xsdt_addr : 0);
	kit_check(r->revision >= 2 && r->xsdt_addr, "no XSDT");
	x = r->revision >= 2 && r->xsdt_addr;
	if (r->rsdt_addr)
		check_table(r->rsdt_addr, "RSDT");
	root = check_table(x ? r->xsdt_addr : r->rsdt_addr, x ? "XSDT" : "RSDT");
	if (!root)
		return;

	n = (root->length - sizeof(*root)) / (x ? 8 : 4);
	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *ents = (const uint8_t *)(root + 1);
		const struct acpi_header *t;
		uint64_t a;

		if (x)
			memcpy(&a, ents + 8 * i, 8);
		else
			a = ((const uint32_t *)ents)[i];
		t = check_table(a, NULL);
		if (!t)
			continue;
		if (!memcmp(t->signature, "FACP", 4))
			fadt = t;
		else if (!memcmp(t->signature, "APIC", 4))
			madt = t;
		kit_check(memcmp(t->signature, "DSDT", 4),
			  "DSDT listed in the root table");
	}
	kit_check(fadt, "no FACP in the root table");
	kit_check(madt, "no APIC in the root table");
	if (fadt)
		check_fadt((const void *)fadt);
	if (madt)
		check_madt((const void *)madt, want_cpus);
}

/* ---- MP table ---- */

struct mp_fp {
	char sig[4];
	uint32_t physptr;
	uint8_t length;
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t feature[5];
} __packed;

struct mp_config {
	char sig[4];
	uint16_t base_len;
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_ptr;
	uint16_t oem_size;
	uint16_t entry_count;
	uint32_t lapic_addr;
	uint16_t ext_len;
	uint8_t ext_checksum;
	uint8_t reserved;
} __packed;

static const struct mp_fp *mp_scan(uintptr_t start, uintptr_t end)
{
	for (uintptr_t a = start; a + 16 <= end; a += 16) {
		const struct mp_fp *fp = kit_phys(a);

		if (!memcmp(fp->sig, "_MP_", 4) && fp->length == 1 &&
		    !kit_checksum(fp, 16))
			return fp;
	}
	return NULL;
}

static void check_mptable(unsigned int want)
{
	const uint16_t *bda_ebda = kit_phys(0x40e);
	uintptr_t ebda = (uintptr_t)*bda_ebda << 4;
	const struct mp_fp *fp = NULL;
	const struct mp_config *c;
	const uint8_t *p, *end;
	unsigned int ncpu = 0, nbsp = 0;

	if (ebda >= 0x80000 && ebda < 0xa0000)
		fp = mp_scan(ebda, ebda + 1024);
	if (!fp)
		fp = mp_scan(KIT_EBDA_ADDR, 0xa0000);
	if (!fp)
		fp = mp_scan(0xf0000, 0x100000);
	if (!kit_check(fp, "no MP floating pointer in the EBDA or 0xf0000"))
		return;
	kit_printf("MP floating pointer at %p, spec 1.%u, config at %#x\n",
		   fp, fp->spec_rev, fp->physptr);
	if (!kit_check(fp->physptr && fp->physptr < 0x100000,
		       "MP config table pointer %#x", fp->physptr))
		return;
	c = kit_phys(fp->physptr);
	if (!kit_check(!memcmp(c->sig, "PCMP", 4), "MP config signature"))
		return;
	kit_check(!kit_checksum(c, c->base_len), "MP config table checksum");
	kit_check((uint8_t)(kit_checksum((const uint8_t *)c + c->base_len,
					 c->ext_len) + c->ext_checksum) == 0,
		  "MP extended table checksum");
	kit_check(c->lapic_addr == KIT_LAPIC_ADDR, "MP LAPIC address %#x",
		  c->lapic_addr);

	p = (const uint8_t *)(c + 1);
	end = (const uint8_t *)c + c->base_len;
	for (unsigned int i = 0; i < c->entry_count && p < end; i++) {
		unsigned int len = p[0] == 0 ? 20 : 8;

		if (!kit_check(p[0] <= 4 && p + len <= end,
			       "MP entry %u (type %u) malformed", i, p[0]))
			break;
		if (p[0] == 0 && (p[3] & 1)) {
			bool in_madt = false;

			ncpu++;
			nbsp += !!(p[3] & 2);
			for (unsigned int j = 0; j < nr_madt && j < KIT_MAX_CPUS; j++)
				in_madt |= madt_ids[j] == p[1];
			kit_check(!nr_madt || in_madt,
				  "MP processor APIC ID %u not in the MADT",
				  p[1]);
		}
		p += len;
	}
	kit_printf("MP table: %u entries, %u processors\n", c->entry_count,
		   ncpu);
	if (want)
		kit_check(ncpu == want, "MP table has %u processors, cpus=%u",
			  ncpu, want);
	kit_check(nbsp == 1, "MP table marks %u BSPs", nbsp);
}

/* ---- memory map ---- */

static bool overlaps(uint64_t a, uint64_t asz, uint64_t b, uint64_t bend)
{
	return a < bend && b < a + asz;
}

static void check_memmap(uint64_t want_mib)
{
	const struct hvm_memmap_table_entry *e;
	extern char __image_start[], __image_end[];
	uint64_t total = 0;
	bool high = false, image_in_ram = false;
	uint32_t n;

	if (!kit_check(kit_start_info && kit_start_info->memmap_paddr &&
		       kit_start_info->memmap_entries,
		       "start_info has no memory map"))
		return;
	e = kit_phys(kit_start_info->memmap_paddr);
	n = kit_start_info->memmap_entries;
	kit_printf("memory map (%u entries):\n", n);
	for (uint32_t i = 0; i < n; i++) {
		kit_printf("  %#012lx-%#012lx type %u\n", e[i].addr,
			   e[i].addr + e[i].size - 1, e[i].type);
		if (e[i].type != HVM_MEMMAP_RAM)
			continue;
		total += e[i].size;
		high |= e[i].addr + e[i].size > (1ULL << 32);
		kit_check(!overlaps(e[i].addr, e[i].size, 0xa0000, 0x100000),
			  "RAM entry %u overlaps 0xa0000-0xfffff", i);
		kit_check(!overlaps(e[i].addr, e[i].size, 0xc0000000ULL,
				    1ULL << 32),
			  "RAM entry %u overlaps the 32-bit PCI hole", i);
		if (e[i].addr <= (uintptr_t)__image_start &&
		    e[i].addr + e[i].size >= (uintptr_t)__image_end)
			image_in_ram = true;
		for (uint32_t j = 0; j < i; j++)
			kit_check(e[j].type != HVM_MEMMAP_RAM ||
				  !overlaps(e[i].addr, e[i].size, e[j].addr,
					    e[j].addr + e[j].size),
				  "RAM entries %u and %u overlap", j, i);
	}
	kit_printf("total RAM %lu KiB (%lu MiB), mem=%lu MiB\n", total >> 10,
		   total >> 20, want_mib);
	kit_check(image_in_ram, "the kit image at %p is not inside one RAM entry",
		  __image_start);
	if (!want_mib)
		return;
	kit_check(total <= want_mib * MIB && total + 4 * MIB >= want_mib * MIB,
		  "RAM total %lu KiB is not within 4 MiB below mem=%lu MiB",
		  total >> 10, want_mib);
	if (want_mib > 3 * 1024)
		kit_check(high, "mem=%lu MiB but no RAM above 4 GiB", want_mib);
	else
		kit_check(!high, "RAM above 4 GiB with only %lu MiB", want_mib);
}

KIT_TEST(tables)
{
	unsigned int cpus = (unsigned int)kit_cmdline_u64("cpus", 0);
	uint64_t mem = kit_cmdline_u64("mem", 0);

	if (!cpus)
		kit_printf("no cpus= given: processor counts not compared\n");
	if (!mem)
		kit_printf("no mem= given: RAM size not compared\n");
	check_rsdp();
	check_acpi(cpus);
	check_mptable(cpus);
	check_memmap(mem);
}
