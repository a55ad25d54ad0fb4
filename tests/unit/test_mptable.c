// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the MP table builder (x86/mptable.c), read back with the
 * offsets of the MultiProcessor Specification 1.4 rather than the builder's
 * own structures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lkvm/x86/acpi.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/mptable.h"

/* The F segment, one of the places the MP spec has kernels scan. */
#define BASE		0xf0000ULL
#define EBDA_SIZE	1024

static uint16_t rd16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t rd32(const uint8_t *p)
{
	return rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

static size_t expected_size(unsigned int nr_cpus)
{
	/* pointer, header, CPUs, 2 buses, IOAPIC, 15 IRQs, 2 LINTs */
	return 16 + 44 + 20 * nr_cpus + 8 * (2 + 1 + 15 + 2);
}

struct parsed {
	unsigned int cpus, bsps, buses, ioapics, io_intrs, local_intrs;
	int isa_bus;
	uint8_t ioapic_id;
	uint8_t pin_of_irq[16];		/* 0xff: no entry */
	uint16_t flags_of_irq[16];
	uint8_t lint_type[2];
};

/* Walk the config table entry by entry, checking each as it comes. */
static void parse(const uint8_t *buf, struct parsed *p)
{
	const uint8_t *mpc = buf + 16, *e, *end;
	unsigned int count = 0;

	memset(p, 0, sizeof(*p));
	p->isa_bus = -1;
	memset(p->pin_of_irq, 0xff, sizeof(p->pin_of_irq));
	memset(p->lint_type, 0xff, sizeof(p->lint_type));
	end = mpc + rd16(mpc + 4);
	for (e = mpc + 44; e < end; count++) {
		switch (e[0]) {
		case 0:		/* processor */
			assert_int_equal(e[1], p->cpus);	/* APIC id */
			assert_true(e[3] & 1);			/* enabled */
			if (e[3] & 2)
				p->bsps++;
			assert_int_equal(!!(e[3] & 2), e[1] == 0);
			assert_int_equal(e[2] & 0xf0, 0x10);	/* integrated */
			p->cpus++;
			e += 20;
			break;
		case 1:		/* bus */
			if (!memcmp(e + 2, "ISA   ", 6))
				p->isa_bus = e[1];
			p->buses++;
			e += 8;
			break;
		case 2:		/* IOAPIC */
			p->ioapic_id = e[1];
			assert_int_equal(e[2], 0x11);
			assert_true(e[3] & 1);
			assert_int_equal(rd32(e + 4), X86_IOAPIC_ADDR);
			p->ioapics++;
			e += 8;
			break;
		case 3:		/* I/O interrupt assignment */
			assert_int_equal(e[1], 0);		/* INT */
			assert_int_equal(e[4], p->isa_bus);
			assert_int_equal(e[6], p->ioapic_id);
			assert_true(e[5] < 16);
			assert_int_equal(p->pin_of_irq[e[5]], 0xff);
			p->pin_of_irq[e[5]] = e[7];
			p->flags_of_irq[e[5]] = rd16(e + 2);
			p->io_intrs++;
			e += 8;
			break;
		case 4:		/* local interrupt assignment */
			assert_int_equal(e[6], 0xff);		/* all CPUs */
			assert_true(e[7] < 2);
			p->lint_type[e[7]] = e[1];
			p->local_intrs++;
			e += 8;
			break;
		default:
			fail_msg("unknown MP entry type %u", e[0]);
		}
	}
	assert_ptr_equal(e, end);
	assert_int_equal(count, rd16(mpc + 34));
}

static void check_table(unsigned int nr_cpus)
{
	size_t size = expected_size(nr_cpus);
	uint8_t *buf = malloc(size);
	const uint8_t *mpc = buf + 16;
	struct parsed p;

	assert_non_null(buf);
	assert_int_equal(mptable_build(buf, size, BASE, nr_cpus), size);

	/* floating pointer */
	assert_memory_equal(buf, "_MP_", 4);
	assert_int_equal(rd32(buf + 4), BASE + 16);
	assert_int_equal(buf[8], 1);
	assert_int_equal(buf[9], 4);
	assert_int_equal(sum(buf, 16), 0);
	assert_int_equal(buf[11], 0);		/* a config table follows */

	/* config table header */
	assert_memory_equal(mpc, "PCMP", 4);
	assert_int_equal(rd16(mpc + 4), size - 16);
	assert_int_equal(mpc[6], 4);
	assert_int_equal(sum(mpc, size - 16), 0);
	assert_int_equal(rd32(mpc + 36), X86_LAPIC_ADDR);
	assert_int_equal(rd16(mpc + 40), 0);	/* no extended entries */

	parse(buf, &p);
	assert_int_equal(p.cpus, nr_cpus);
	assert_int_equal(p.bsps, 1);
	assert_int_equal(p.buses, 2);
	assert_true(p.isa_bus >= 0);
	assert_int_equal(p.ioapics, 1);
	assert_int_equal(p.ioapic_id, x86_ioapic_id(nr_cpus));

	/* IRQ0 on pin 2, no IRQ2 (the cascade), the rest identity-mapped */
	assert_int_equal(p.io_intrs, 15);
	assert_int_equal(p.pin_of_irq[0], 2);
	assert_int_equal(p.pin_of_irq[2], 0xff);
	for (unsigned int irq = 1; irq < 16; irq++)
		if (irq != 2)
			assert_int_equal(p.pin_of_irq[irq], irq);
	assert_int_equal(p.flags_of_irq[0], 0);
	assert_int_equal(p.flags_of_irq[X86_IRQ_COM1], 0);
	assert_int_equal(p.flags_of_irq[X86_IRQ_SCI], 0x0d);

	assert_int_equal(p.local_intrs, 2);
	assert_int_equal(p.lint_type[0], 3);	/* ExtINT */
	assert_int_equal(p.lint_type[1], 1);	/* NMI */
	free(buf);
}

static void test_one_cpu(void **state)
{
	check_table(1);
}

static void test_four_cpus(void **state)
{
	check_table(4);
}

static void test_max_cpus(void **state)
{
	check_table(ACPI_MAX_CPUS);
	assert_int_equal(expected_size(ACPI_MAX_CPUS), 5320);
}

/* The documented budget: a 1 KiB EBDA holds 40 vCPUs, not 41. */
static void test_ebda_fit(void **state)
{
	uint8_t buf[EBDA_SIZE];

	assert_int_equal(mptable_build(buf, sizeof(buf), BASE, 40),
			 expected_size(40));
	assert_true(expected_size(40) <= EBDA_SIZE);
	assert_int_equal(mptable_build(buf, sizeof(buf), BASE, 41), -1);
	check_table(40);
}

/* Every size short of the table fails, and writes nothing out of bounds. */
static void test_too_small(void **state)
{
	size_t need = expected_size(2);

	for (size_t size = 0; size < need; size++) {
		uint8_t *buf = malloc(size ? size : 1);

		assert_non_null(buf);
		assert_int_equal(mptable_build(buf, size, BASE, 2), -1);
		free(buf);
	}
}

static void test_bad_args(void **state)
{
	uint8_t buf[8192];

	assert_int_equal(mptable_build(buf, sizeof(buf), BASE, 0), -1);
	assert_int_equal(mptable_build(buf, sizeof(buf), BASE,
				       ACPI_MAX_CPUS + 1), -1);
	assert_int_equal(mptable_build(buf, sizeof(buf), BASE + 8, 1), -1);
	assert_int_equal(mptable_build(buf, sizeof(buf), X86_4G, 1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_cpu),
		cmocka_unit_test(test_four_cpus),
		cmocka_unit_test(test_max_cpus),
		cmocka_unit_test(test_ebda_fit),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
