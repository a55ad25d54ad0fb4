// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the ACPI table builder (x86/acpi.c). The tables are read
 * back with the offsets of the ACPI 6.x spec, not the builder's structures,
 * and, when acpica-tools is installed, disassembled with `iasl -d` to prove
 * that an independent parser accepts them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lkvm/x86/acpi.h"
#include "lkvm/x86/layout.h"

#define BASE		X86_ACPI_ADDR
#define HDR_LEN		36

static uint16_t rd16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t rd32(const uint8_t *p)
{
	return rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

struct tables {
	uint8_t *buf;
	size_t size;
	const uint8_t *rsdp, *xsdt, *rsdt, *fadt, *madt, *dsdt, *facs;
};

/* A guest address inside the buffer, as a host pointer; fails otherwise. */
static const uint8_t *at(const struct tables *t, uint64_t gpa, size_t len)
{
	assert_true(gpa >= BASE);
	assert_true(gpa - BASE <= t->size && len <= t->size - (gpa - BASE));
	return t->buf + (gpa - BASE);
}

/* A table with a sane header and checksum, whose signature is `sig`. */
static const uint8_t *table(const struct tables *t, uint64_t gpa,
			    const char *sig)
{
	const uint8_t *h = at(t, gpa, HDR_LEN);
	uint32_t len = rd32(h + 4);

	assert_memory_equal(h, sig, 4);
	assert_true(len >= HDR_LEN);
	at(t, gpa, len);
	assert_int_equal(sum(h, len), 0);
	assert_memory_equal(h + 10, "LKVM  ", 6);
	assert_memory_equal(h + 28, "LKVM", 4);
	return h;
}

static void default_config(struct acpi_config *cfg, unsigned int nr_cpus)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nr_cpus = nr_cpus;
}

static void add_mmio(struct acpi_config *cfg, uint64_t base, uint32_t gsi)
{
	struct acpi_mmio_dev *d = &cfg->mmio_devs[cfg->nr_mmio_devs++];

	d->base = base;
	d->size = 0x200;
	d->gsi = gsi;
}

/* Build into a fresh X86_ACPI_SIZE buffer and find every table. */
static void build(struct tables *t, const struct acpi_config *cfg)
{
	uint64_t rsdp_gpa = 0;
	const uint8_t *x;
	uint32_t n;

	memset(t, 0, sizeof(*t));
	t->size = X86_ACPI_SIZE;
	t->buf = malloc(t->size);
	assert_non_null(t->buf);
	assert_int_equal(acpi_build_tables(t->buf, t->size, BASE, cfg,
					   &rsdp_gpa), 0);
	assert_int_equal(rsdp_gpa, BASE);

	/* RSDP: both checksums, revision 2, both pointers */
	t->rsdp = t->buf;
	assert_memory_equal(t->rsdp, "RSD PTR ", 8);
	assert_int_equal(sum(t->rsdp, 20), 0);
	assert_int_equal(t->rsdp[15], 2);
	assert_int_equal(rd32(t->rsdp + 20), 36);
	assert_int_equal(sum(t->rsdp, 36), 0);
	t->rsdt = table(t, rd32(t->rsdp + 16), "RSDT");
	t->xsdt = table(t, rd64(t->rsdp + 24), "XSDT");

	/* Every XSDT entry is a valid table; the RSDT lists the same ones. */
	x = t->xsdt;
	n = (rd32(x + 4) - HDR_LEN) / 8;
	assert_int_equal(rd32(x + 4), HDR_LEN + 8 * n);
	assert_int_equal(rd32(t->rsdt + 4), HDR_LEN + 4 * n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t gpa = rd64(x + HDR_LEN + 8 * i);
		const uint8_t *h = at(t, gpa, HDR_LEN);

		assert_int_equal(rd32(t->rsdt + HDR_LEN + 4 * i), gpa);
		if (!memcmp(h, "FACP", 4))
			t->fadt = table(t, gpa, "FACP");
		else if (!memcmp(h, "APIC", 4))
			t->madt = table(t, gpa, "APIC");
		else
			fail_msg("unexpected table %.4s in the XSDT",
				 (const char *)h);
	}
	assert_int_equal(n, 2);
	assert_non_null(t->fadt);
	assert_non_null(t->madt);

	/* The DSDT and FACS hang off the FADT. */
	assert_int_equal(rd32(t->fadt + 40), rd64(t->fadt + 140));
	t->dsdt = table(t, rd64(t->fadt + 140), "DSDT");
	assert_int_equal(rd32(t->fadt + 36) % 64, 0);
	t->facs = at(t, rd32(t->fadt + 36), 64);
	assert_memory_equal(t->facs, "FACS", 4);
	assert_int_equal(rd32(t->facs + 4), 64);
}

static void release(struct tables *t)
{
	free(t->buf);
}

static void check_gas_io(const uint8_t *g, uint16_t port, unsigned int len)
{
	assert_int_equal(g[0], 1);		/* SystemIO */
	assert_int_equal(g[1], 8 * len);
	assert_int_equal(g[2], 0);
	assert_int_equal(rd64(g + 4), port);
}

static void test_fadt(void **state)
{
	struct acpi_config cfg;
	struct tables t;
	const uint8_t *f;
	uint32_t flags;

	default_config(&cfg, 1);
	build(&t, &cfg);
	f = t.fadt;
	assert_int_equal(rd32(f + 4), 276);
	assert_int_equal(f[8], 6);
	assert_int_equal(rd16(f + 46), X86_IRQ_SCI);
	assert_int_equal(rd32(f + 48), 0);	/* no SMI_CMD: ACPI mode */
	assert_int_equal(rd32(f + 56), X86_PORT_PM1A_EVT);
	assert_int_equal(rd32(f + 64), X86_PORT_PM1A_CNT);
	assert_int_equal(rd32(f + 76), X86_PORT_PM_TMR);
	assert_int_equal(rd32(f + 60), 0);	/* no PM1b, PM2, GPE blocks */
	assert_int_equal(rd32(f + 68), 0);
	assert_int_equal(rd32(f + 72), 0);
	assert_int_equal(rd32(f + 80), 0);
	assert_int_equal(f[88], 4);
	assert_int_equal(f[89], 2);
	assert_int_equal(f[91], 4);
	check_gas_io(f + 148, X86_PORT_PM1A_EVT, 4);
	check_gas_io(f + 172, X86_PORT_PM1A_CNT, 2);
	check_gas_io(f + 208, X86_PORT_PM_TMR, 4);

	/* IAPC_BOOT_ARCH: legacy devices, no 8042 to probe, no VGA */
	assert_true(rd16(f + 109) & (1U << 0));
	assert_false(rd16(f + 109) & (1U << 1));
	assert_true(rd16(f + 109) & (1U << 2));

	flags = rd32(f + 112);
	assert_true(flags & (1U << 0));		/* WBINVD */
	assert_false(flags & (1U << 10));	/* RESET_REG_SUP */
	assert_false(flags & (1U << 20));	/* HW_REDUCED_ACPI */

	/* FACS by the 32-bit pointer only, as the spec wants below 4 GiB */
	assert_int_not_equal(rd32(f + 36), 0);
	assert_int_equal(rd64(f + 132), 0);
	release(&t);
}

static void check_madt(unsigned int nr_cpus)
{
	struct acpi_config cfg;
	struct tables t;
	const uint8_t *m, *e, *end;
	unsigned int lapics = 0, ioapics = 0, nmis = 0;
	bool irq0 = false, sci = false;

	default_config(&cfg, nr_cpus);
	build(&t, &cfg);
	m = t.madt;
	assert_int_equal(rd32(m + 36), X86_LAPIC_ADDR);
	assert_true(rd32(m + 40) & 1);		/* PCAT_COMPAT */

	end = m + rd32(m + 4);
	for (e = m + 44; e < end; e += e[1]) {
		assert_true(e[1] >= 2 && e + e[1] <= end);
		switch (e[0]) {
		case 0:		/* Processor Local APIC */
			assert_int_equal(e[1], 8);
			assert_int_equal(e[2], lapics);	/* UID */
			assert_int_equal(e[3], lapics);	/* APIC id */
			assert_true(rd32(e + 4) & 1);	/* enabled */
			lapics++;
			break;
		case 1:		/* I/O APIC */
			assert_int_equal(e[1], 12);
			assert_int_equal(e[2], x86_ioapic_id(nr_cpus));
			assert_int_equal(rd32(e + 4), X86_IOAPIC_ADDR);
			assert_int_equal(rd32(e + 8), 0);
			ioapics++;
			break;
		case 2:		/* Interrupt Source Override */
			assert_int_equal(e[1], 10);
			assert_int_equal(e[2], 0);	/* ISA */
			if (e[3] == 0) {
				assert_int_equal(rd32(e + 4), 2);
				assert_int_equal(rd16(e + 8) & 0xc, 0x4);
				irq0 = true;
			} else if (e[3] == X86_IRQ_SCI) {
				assert_int_equal(rd32(e + 4), X86_IRQ_SCI);
				assert_int_equal(rd16(e + 8), 0xd);
				sci = true;
			} else {
				fail_msg("override of IRQ %u", e[3]);
			}
			break;
		case 4:		/* Local APIC NMI */
			assert_int_equal(e[1], 6);
			assert_int_equal(e[2], 0xff);
			assert_int_equal(e[5], 1);	/* LINT1 */
			nmis++;
			break;
		default:
			fail_msg("unexpected MADT entry type %u", e[0]);
		}
	}
	assert_ptr_equal(e, end);
	assert_int_equal(lapics, nr_cpus);
	assert_int_equal(ioapics, 1);
	assert_int_equal(nmis, 1);
	assert_true(irq0 && sci);
	release(&t);
}

static void test_madt_1(void **state)
{
	check_madt(1);
}

static void test_madt_2(void **state)
{
	check_madt(2);
}

static void test_madt_64(void **state)
{
	check_madt(64);
}

static void test_madt_255(void **state)
{
	check_madt(255);
}

static void test_bad_config(void **state)
{
	uint8_t *buf = malloc(X86_ACPI_SIZE);
	struct acpi_config cfg;
	uint64_t gpa;

	assert_non_null(buf);
	default_config(&cfg, 0);
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE, BASE, &cfg,
					   &gpa), -1);
	default_config(&cfg, ACPI_MAX_CPUS + 1);
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE, BASE, &cfg,
					   &gpa), -1);
	default_config(&cfg, 1);
	cfg.nr_mmio_devs = ACPI_MAX_MMIO_DEVS + 1;
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE, BASE, &cfg,
					   &gpa), -1);
	default_config(&cfg, 1);
	add_mmio(&cfg, 0xe0000000, 5);
	cfg.mmio_devs[0].size = 0;
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE, BASE, &cfg,
					   &gpa), -1);
	/* misaligned, or not entirely below 4 GiB */
	default_config(&cfg, 1);
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE, BASE + 4, &cfg,
					   &gpa), -1);
	assert_int_equal(acpi_build_tables(buf, X86_ACPI_SIZE,
					   X86_4G - 0x1000, &cfg, &gpa), -1);
	free(buf);
}

/* The smallest buffer that takes the tables of cfg. */
static size_t min_size(const struct acpi_config *cfg)
{
	uint8_t *buf = malloc(X86_ACPI_SIZE);
	size_t lo = 0, hi = X86_ACPI_SIZE;
	uint64_t gpa;

	assert_non_null(buf);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (acpi_build_tables(buf, mid, BASE, cfg, &gpa) == 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	free(buf);
	return lo;
}

/*
 * Every size short of the minimum fails, without writing out of bounds
 * (each try gets an exactly-sized heap block, for ASan to watch).
 */
static void test_too_small(void **state)
{
	struct acpi_config cfg;
	size_t need;
	uint64_t gpa;

	default_config(&cfg, 2);
	add_mmio(&cfg, 0xe0000000, 5);
	need = min_size(&cfg);
	assert_true(need > 0 && need < X86_ACPI_SIZE);
	for (size_t size = 0; size <= need; size++) {
		uint8_t *buf = malloc(size ? size : 1);

		assert_non_null(buf);
		assert_int_equal(acpi_build_tables(buf, size, BASE, &cfg,
						   &gpa),
				 size == need ? 0 : -1);
		free(buf);
	}
}

/* The biggest board still fits the BIOS area with room to spare. */
static void test_largest_fits(void **state)
{
	struct acpi_config cfg;

	default_config(&cfg, ACPI_MAX_CPUS);
	cfg.pvpanic = 1;
	for (unsigned int i = 0; i < ACPI_MAX_MMIO_DEVS; i++)
		add_mmio(&cfg, X86_VIRTIO_MMIO_START + 0x200 * i, 5 + i);
	assert_true(min_size(&cfg) <= 16 * 1024);
}

/* Scan the DSDT's AML for a byte string, without any AML parser. */
static bool dsdt_has_bytes(const struct tables *t, const void *p, size_t n)
{
	return memmem(t->dsdt, rd32(t->dsdt + 4), p, n) != NULL;
}

#define dsdt_has(t, lit)	dsdt_has_bytes(t, lit, sizeof(lit) - 1)

static void test_dsdt_contents(void **state)
{
	struct acpi_config cfg;
	struct tables t;

	default_config(&cfg, 2);
	build(&t, &cfg);
	assert_int_equal(t.dsdt[8], 2);		/* 64-bit integers */
	assert_true(dsdt_has(&t, "PCI0"));
	assert_true(dsdt_has(&t, "\x0c\x41\xd0\x0a\x03"));	/* PNP0A03 */
	assert_true(dsdt_has(&t, "\x0c\x41\xd0\x05\x01"));	/* PNP0501 */
	/* Name(\_S5_, Package(4) { 5, 5, 0, 0 }) */
	assert_true(dsdt_has(&t, "\x08\\_S5_\x12\x08\x04\x0a\x05\x0a\x05"
				 "\x00\x00"));
	assert_false(dsdt_has(&t, "QEMU0001"));
	assert_false(dsdt_has(&t, "LNRO0005"));
	release(&t);

	cfg.pvpanic = 1;
	add_mmio(&cfg, 0xe0000000, 5);
	build(&t, &cfg);
	assert_true(dsdt_has(&t, "QEMU0001"));
	assert_true(dsdt_has(&t, "LNRO0005"));
	release(&t);
}

static bool have_iasl(void)
{
	return system("command -v iasl >/dev/null 2>&1") == 0;
}

static void write_table(const char *dir, const char *name, const void *p,
			size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Run iasl in dir; true if it exits 0 and its log reports no error. */
static bool iasl(const char *dir, const char *args)
{
	char cmd[512], path[256], line[512];
	bool ok;
	FILE *log;

	snprintf(cmd, sizeof(cmd), "cd '%s' && iasl %s >iasl.log 2>&1", dir,
		 args);
	ok = system(cmd) == 0;
	snprintf(path, sizeof(path), "%s/iasl.log", dir);
	log = fopen(path, "r");
	assert_non_null(log);
	while (fgets(line, sizeof(line), log)) {
		if (strstr(line, "Error") && !strstr(line, " 0 Errors"))
			ok = false;
		if (!ok)
			fprintf(stderr, "iasl %s: %s", args, line);
	}
	fclose(log);
	return ok;
}

static char *slurp(const char *dir, const char *name)
{
	char path[256], *buf;
	FILE *f;
	long len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc(len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static void disassemble(const struct acpi_config *cfg)
{
	char dir[] = "/tmp/lkvm-acpi-XXXXXX", cmd[64];
	struct tables t;
	char *dsl;

	assert_non_null(mkdtemp(dir));
	build(&t, cfg);
	write_table(dir, "dsdt.dat", t.dsdt, rd32(t.dsdt + 4));
	write_table(dir, "facp.dat", t.fadt, rd32(t.fadt + 4));
	write_table(dir, "apic.dat", t.madt, rd32(t.madt + 4));
	write_table(dir, "xsdt.dat", t.xsdt, rd32(t.xsdt + 4));
	write_table(dir, "rsdt.dat", t.rsdt, rd32(t.rsdt + 4));
	write_table(dir, "facs.dat", t.facs, 64);
	release(&t);

	assert_true(iasl(dir, "-d dsdt.dat facp.dat apic.dat xsdt.dat "
			      "rsdt.dat facs.dat"));
	dsl = slurp(dir, "dsdt.dsl");
	assert_non_null(strstr(dsl, "EisaId (\"PNP0A03\")"));
	assert_non_null(strstr(dsl, "EisaId (\"PNP0501\")"));
	assert_non_null(strstr(dsl, "_S5_"));
	assert_non_null(strstr(dsl, "ResourceTemplate"));
	assert_int_equal(strstr(dsl, "LNRO0005") != NULL,
			 cfg->nr_mmio_devs > 0);
	assert_int_equal(strstr(dsl, "QEMU0001") != NULL, cfg->pvpanic);
	free(dsl);
	dsl = slurp(dir, "apic.dsl");
	assert_non_null(strstr(dsl, "Processor Local APIC"));
	assert_non_null(strstr(dsl, "Interrupt Source Override"));
	free(dsl);

	/* The disassembly compiles back: the AML had a sound structure. */
	assert_true(iasl(dir, "dsdt.dsl"));

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_iasl(void **state)
{
	struct acpi_config cfg;

	if (!have_iasl()) {
		fprintf(stderr, "iasl not found (apt-get install "
			"acpica-tools): skipping the disassembly test\n");
		skip();
	}
	default_config(&cfg, 4);
	disassemble(&cfg);

	cfg.pvpanic = 1;
	add_mmio(&cfg, X86_VIRTIO_MMIO_START, 5);
	add_mmio(&cfg, X86_VIRTIO_MMIO_START + 0x200, 6);
	add_mmio(&cfg, X86_4G + 0x1000, 7);	/* needs a QWord range */
	disassemble(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fadt),
		cmocka_unit_test(test_madt_1),
		cmocka_unit_test(test_madt_2),
		cmocka_unit_test(test_madt_64),
		cmocka_unit_test(test_madt_255),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_largest_fits),
		cmocka_unit_test(test_dsdt_contents),
		cmocka_unit_test(test_iasl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
