// SPDX-License-Identifier: GPL-2.0
/*
 * The ACPI PM1a registers (hw/acpi_pm.c) on a fake VM's port bus: a write
 * changes the bytes it covers and no others, whatever its width, so that
 * a byte written to PM1_CNT's high half (SLP_TYP, SLP_EN) powers off and
 * a byte written to one half of PM1_EN keeps the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/vm.h"
#include "fake_vm.h"

#define EVT		0x600
#define CNT		0x604
#define TMR		0x608
#define SLP_TYP_S5	5
#define SLP_EN		0x2000

static int setup(void **state)
{
	struct fake_vm *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fake_vm_init(f, 0, 1), 0);
	assert_int_equal(acpi_pm_init(&f->vm, EVT, CNT, TMR, 9, SLP_TYP_S5), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fake_vm_destroy(*state);
	free(*state);
	return 0;
}

static void out(struct fake_vm *f, uint16_t port, uint32_t v, unsigned int len)
{
	assert_true(bus_access(&f->vm.pio, port, &v, len, true));
}

static uint32_t in(struct fake_vm *f, uint16_t port, unsigned int len)
{
	uint32_t v = 0;

	assert_true(bus_access(&f->vm.pio, port, &v, len, false));
	return v;
}

static void test_byte_to_cnt_high_half_powers_off(void **state)
{
	struct fake_vm *f = *state;

	out(f, CNT + 1, (SLP_TYP_S5 << 10 | SLP_EN) >> 8, 1);
	assert_true(vm_is_exiting(&f->vm));
	assert_int_equal(f->vm.exit_code, EXIT_POWEROFF);
}

static void test_byte_to_cnt_low_half_keeps_high(void **state)
{
	struct fake_vm *f = *state;

	out(f, CNT, 3 << 10, 2);
	out(f, CNT, 0x00, 1);
	assert_int_equal(in(f, CNT, 2), 3 << 10 | 0x0001);	/* SCI_EN */
	assert_false(vm_is_exiting(&f->vm));
}

static void test_byte_to_en_keeps_other_half(void **state)
{
	struct fake_vm *f = *state;

	out(f, EVT + 2, 0x0121, 2);
	out(f, EVT + 3, 0x04, 1);
	assert_int_equal(in(f, EVT + 2, 2), 0x0421);
	out(f, EVT + 2, 0x00, 1);
	assert_int_equal(in(f, EVT + 2, 2), 0x0400);
	out(f, EVT, 0xffff, 2);		/* PM1_STS only */
	assert_int_equal(in(f, EVT, 4), 0x0400u << 16);
}

static void test_word_sleep_types(void **state)
{
	struct fake_vm *f = *state;

	out(f, CNT, 3 << 10 | SLP_EN, 2);	/* S3: not supported */
	assert_false(vm_is_exiting(&f->vm));
	assert_int_equal(in(f, CNT, 2), 3 << 10 | 0x0001);	/* SLP_EN reads 0 */
	out(f, CNT, SLP_TYP_S5 << 10 | SLP_EN, 2);
	assert_true(vm_is_exiting(&f->vm));
	assert_int_equal(f->vm.exit_code, EXIT_POWEROFF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_byte_to_cnt_high_half_powers_off,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_to_cnt_low_half_keeps_high,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_to_en_keeps_other_half,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_word_sleep_types, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
