// SPDX-License-Identifier: GPL-2.0
/*
 * The CMOS RTC (hw/rtc.c) on a fake VM's port bus: a guest that writes
 * values no clock register can hold (BCD junk, minute 75, year 165) moves
 * nothing; valid writes move the guest's clock (not the host's) and read
 * back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "fake_vm.h"

#define PORT		0x70
#define SECONDS		0x00
#define MINUTES		0x02
#define YEAR		0x09
#define CENTURY		0x32

static int setup(void **state)
{
	struct fake_vm *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fake_vm_init(f, 0, 1), 0);
	assert_int_equal(rtc_init(&f->vm, PORT, 256ULL << 20, 0), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fake_vm_destroy(*state);
	free(*state);
	return 0;
}

static uint8_t cmos_read(struct fake_vm *f, uint8_t index)
{
	uint8_t v = 0xff;

	bus_access(&f->vm.pio, PORT, &index, 1, true);
	bus_access(&f->vm.pio, PORT + 1, &v, 1, false);
	return v;
}

static void cmos_write(struct fake_vm *f, uint8_t index, uint8_t v)
{
	bus_access(&f->vm.pio, PORT, &index, 1, true);
	bus_access(&f->vm.pio, PORT + 1, &v, 1, true);
}

static void test_junk_moves_nothing(void **state)
{
	struct fake_vm *f = *state;
	uint8_t century = cmos_read(f, CENTURY), year = cmos_read(f, YEAR);

	cmos_write(f, YEAR, 0xff);	/* not BCD: was year 165, for good */
	cmos_write(f, YEAR, 0x9a);
	cmos_write(f, MINUTES, 0x75);
	cmos_write(f, CENTURY, 0x99);
	assert_int_equal(cmos_read(f, CENTURY), century);
	assert_int_equal(cmos_read(f, YEAR), year);
}

static void test_valid_writes_read_back(void **state)
{
	struct fake_vm *f = *state;

	cmos_write(f, YEAR, 0x30);
	assert_int_equal(cmos_read(f, YEAR), 0x30);
	cmos_write(f, CENTURY, 0x21);
	assert_int_equal(cmos_read(f, CENTURY), 0x21);
	assert_int_equal(cmos_read(f, YEAR), 0x30);
	cmos_write(f, CENTURY, 0x20);
	cmos_write(f, YEAR, 0x99);
	assert_int_equal(cmos_read(f, YEAR), 0x99);
	assert_int_equal(cmos_read(f, CENTURY), 0x20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_junk_moves_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_valid_writes_read_back,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
