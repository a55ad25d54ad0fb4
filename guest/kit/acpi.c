/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest-kit ACPI helpers: find the RSDP (by the BIOS-area scan and through
 * start_info), walk the XSDT/RSDT, reach the DSDT through the FADT, pull
 * \_S5's SLP_TYP out of the AML, and list the MADT's processors.
 */
#include "kit.h"

uint8_t kit_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return sum;
}

bool kit_acpi_rsdp_valid(const struct acpi_rsdp *rsdp)
{
	if (!rsdp || memcmp(rsdp->signature, "RSD PTR ", 8))
		return false;
	if (kit_checksum(rsdp, 20))
		return false;
	if (rsdp->revision >= 2 &&
	    (rsdp->length < sizeof(*rsdp) || rsdp->length > 4096 ||
	     kit_checksum(rsdp, rsdp->length)))
		return false;
	return true;
}

static const struct acpi_rsdp *scan(uintptr_t start, uintptr_t end)
{
	for (uintptr_t a = start; a + 20 <= end; a += 16) {
		const struct acpi_rsdp *r = kit_phys(a);

		if (kit_acpi_rsdp_valid(r))
			return r;
	}
	return NULL;
}

const struct acpi_rsdp *kit_acpi_rsdp_scan(void)
{
	const uint16_t *bda_ebda = kit_phys(0x40e);
	uintptr_t ebda = (uintptr_t)*bda_ebda << 4;
	const struct acpi_rsdp *r = NULL;

	/* Only a plausible EBDA segment: a PVH boot may leave the BDA blank. */
	if (ebda >= 0x80000 && ebda < 0xa0000)
		r = scan(ebda, ebda + 1024);
	return r ? r : scan(0xe0000, 0x100000);
}

const struct acpi_rsdp *kit_acpi_rsdp_start_info(void)
{
	if (!kit_start_info || !kit_start_info->rsdp_paddr ||
	    kit_start_info->rsdp_paddr >= (1ULL << 32))
		return NULL;
	return kit_phys(kit_start_info->rsdp_paddr);
}

const struct acpi_rsdp *kit_acpi_rsdp(void)
{
	static const struct acpi_rsdp *cached;
	const struct acpi_rsdp *r;

	if (cached)
		return cached;
	r = kit_acpi_rsdp_start_info();
	if (!kit_acpi_rsdp_valid(r))
		r = kit_acpi_rsdp_scan();
	cached = r;
	return r;
}

/* Tables above 4 GiB are outside the kit's identity map. */
static const struct acpi_header *table_at(uint64_t addr)
{
	if (!addr || addr >= (1ULL << 32))
		return NULL;
	return kit_phys(addr);
}

const struct acpi_header *kit_acpi_find(const char *sig, unsigned int nth)
{
	const struct acpi_rsdp *rsdp = kit_acpi_rsdp();
	const struct acpi_header *root;
	bool x;
	unsigned int n;

	if (!rsdp)
		return NULL;
	x = rsdp->revision >= 2 && rsdp->xsdt_addr;
	root = table_at(x ? rsdp->xsdt_addr : rsdp->rsdt_addr);
	if (!root || root->length < sizeof(*root))
		return NULL;
	n = (root->length - sizeof(*root)) / (x ? 8 : 4);
	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *ents = (const uint8_t *)(root + 1);
		uint64_t a;
		const struct acpi_header *t;

		if (x)
			memcpy(&a, ents + 8 * i, 8);
		else
			a = ((const uint32_t *)ents)[i];
		t = table_at(a);
		if (t && !memcmp(t->signature, sig, 4) && !nth--)
			return t;
	}
	return NULL;
}

const struct acpi_header *kit_acpi_dsdt(void)
{
	const struct acpi_fadt *f = (const void *)kit_acpi_find("FACP", 0);

	if (!f)
		return NULL;
	if (f->hdr.length >= offsetof(struct acpi_fadt, x_dsdt) + 8 &&
	    f->x_dsdt)
		return table_at(f->x_dsdt);
	return table_at(f->dsdt);
}

/* One AML integer constant; returns bytes used or 0 if it is not one. */
static int aml_integer(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	switch (p[0]) {
	case 0x00:			/* ZeroOp */
		*v = 0;
		return 1;
	case 0x01:			/* OneOp */
		*v = 1;
		return 1;
	case 0xff:			/* OnesOp */
		*v = ~0ULL;
		return 1;
	case 0x0a:			/* BytePrefix */
		if (p + 2 > end)
			return 0;
		*v = p[1];
		return 2;
	case 0x0b:			/* WordPrefix */
		if (p + 3 > end)
			return 0;
		*v = p[1] | p[2] << 8;
		return 3;
	case 0x0c:			/* DWordPrefix */
		if (p + 5 > end)
			return 0;
		*v = p[1] | p[2] << 8 | p[3] << 16 | (uint64_t)p[4] << 24;
		return 5;
	default:
		return 0;
	}
}

int kit_acpi_s5_slp_typ(void)
{
	const struct acpi_header *d = kit_acpi_dsdt();
	const uint8_t *p, *end;

	if (!d || d->length < sizeof(*d))
		return -1;
	p = (const uint8_t *)(d + 1);
	end = (const uint8_t *)d + d->length;
	/* Name(_S5_, Package() {SLP_TYPa, ...}) */
	for (; p + 8 <= end; p++) {
		const uint8_t *q;
		uint64_t v;

		if (memcmp(p, "_S5_", 4) || p[4] != 0x12)
			continue;
		q = p + 5;
		q += 1 + (q[0] >> 6);	/* PkgLength: lead byte + follow-ons */
		q++;			/* NumElements */
		if (q < end && aml_integer(q, end, &v))
			return (int)(v & 7);
	}
	return -1;
}

unsigned int kit_madt_apic_ids(uint32_t *ids, unsigned int max)
{
	const struct acpi_madt *m = (const void *)kit_acpi_find("APIC", 0);
	const uint8_t *p, *end;
	unsigned int n = 0;

	if (!m || m->hdr.length < sizeof(*m))
		return 0;
	p = m->entries;
	end = (const uint8_t *)m + m->hdr.length;
	while (p + 2 <= end) {
		const struct acpi_madt_entry *e = (const void *)p;

		if (e->length < 2 || p + e->length > end)
			break;
		if (e->type == ACPI_MADT_LAPIC && e->length >= 8) {
			const struct acpi_madt_lapic *l = (const void *)p;

			if ((l->flags & 1) && n < max)
				ids[n] = l->apic_id;
			if (l->flags & 1)
				n++;
		} else if (e->type == ACPI_MADT_X2APIC && e->length >= 16) {
			const struct acpi_madt_x2apic *l = (const void *)p;

			if ((l->flags & 1) && n < max)
				ids[n] = l->x2apic_id;
			if (l->flags & 1)
				n++;
		}
		p += e->length;
	}
	return n;
}
