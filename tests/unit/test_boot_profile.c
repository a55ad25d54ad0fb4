// SPDX-License-Identifier: GPL-2.0
/*
 * The boot profile (core/boot_profile.c) on a fake VM: milestones set once
 * and never moved, the kernel's lines found in the console stream with
 * their printk timestamps (and lines too long for the buffer survived),
 * the exits counted up to each mark, and --stats' JSON listing what was
 * seen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/boot_profile.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "fake_vm.h"

static int setup(void **state)
{
	struct fake_vm *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fake_vm_init(f, 0, 1), 0);
	boot_profile_start(now_ms());
	boot_profile_init(&f->vm);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fake_vm_destroy(*state);
	free(*state);
	return 0;
}

static void console(struct vm *vm, const char *s)
{
	while (*s)
		boot_profile_console(vm, (uint8_t)*s++);
}

static const struct boot_mark_rec *mark(struct vm *vm, enum boot_mark m)
{
	return &vm->boot.marks[m];
}

static void test_kernel_lines_and_their_timestamps(void **state)
{
	struct vm *vm = &((struct fake_vm *)*state)->vm;

	console(vm, "[    0.000000] Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)\r\n");
	console(vm, "[    0.812345] Freeing unused kernel image memory: 2048K\r\n");
	console(vm, "[    1.234567] Run /init as init process\r\n");
	assert_true(mark(vm, BOOT_FIRST_CONSOLE)->set);
	assert_true(mark(vm, BOOT_KERNEL_BANNER)->set);
	assert_string_equal(mark(vm, BOOT_KERNEL_BANNER)->detail, "0.000000");
	assert_true(mark(vm, BOOT_KERNEL_RUN_INIT)->set);
	assert_string_equal(mark(vm, BOOT_KERNEL_RUN_INIT)->detail, "1.234567");
	assert_true(mark(vm, BOOT_FIRST_CONSOLE)->ms <=
		    mark(vm, BOOT_KERNEL_BANNER)->ms);
	assert_true(mark(vm, BOOT_KERNEL_BANNER)->ms <=
		    mark(vm, BOOT_KERNEL_RUN_INIT)->ms);
}

static void test_marks_are_set_once(void **state)
{
	struct vm *vm = &((struct fake_vm *)*state)->vm;
	double first;

	boot_mark_at(vm, BOOT_INIT_START, vm->boot.start_ms + 5);
	first = mark(vm, BOOT_INIT_START)->ms;
	assert_true(first > 4.9 && first < 5.1);
	boot_mark(vm, BOOT_INIT_START);
	assert_true(mark(vm, BOOT_INIT_START)->ms == first);
	/* "Run /init" without a timestamp (printk.time=0), then again */
	console(vm, "Run /sbin/init as init process\n");
	assert_string_equal(mark(vm, BOOT_KERNEL_RUN_INIT)->detail, "");
	first = mark(vm, BOOT_KERNEL_RUN_INIT)->ms;
	console(vm, "[    9.000000] Run /init as init process\n");
	assert_true(mark(vm, BOOT_KERNEL_RUN_INIT)->ms == first);
	assert_false(mark(vm, BOOT_KERNEL_BANNER)->set);
}

static void test_a_line_longer_than_the_buffer(void **state)
{
	struct vm *vm = &((struct fake_vm *)*state)->vm;
	char long_line[3 * BOOT_LINE_MAX];

	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	console(vm, long_line);
	console(vm, "\n[    0.5] Linux version 6.1\n");
	assert_true(mark(vm, BOOT_KERNEL_BANNER)->set);
	assert_string_equal(mark(vm, BOOT_KERNEL_BANNER)->detail, "0.5");
}

static void test_exits_up_to_each_mark(void **state)
{
	struct vm *vm = &((struct fake_vm *)*state)->vm;
	struct vcpu vcpus[2] = { 0 };

	vcpus[0].stats.exits = 10;
	vcpus[1].stats.exits = 5;
	vcpus[1].stats.handle_ns = 2000000;
	vm->nr_vcpus = 2;
	vm->vcpus = vcpus;
	boot_mark(vm, BOOT_EXIT);
	assert_int_equal(mark(vm, BOOT_EXIT)->exits, 15);
	assert_int_equal(mark(vm, BOOT_EXIT)->vmm_ns, 2000000);
	vm->vcpus = NULL;
}

static void test_json_lists_what_was_seen(void **state)
{
	struct vm *vm = &((struct fake_vm *)*state)->vm;
	char buf[4096] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	assert_non_null(f);
	console(vm, "[    2.5] Run /init as init process\n");
	boot_profile_write_json(vm, f);
	fclose(f);
	assert_non_null(strstr(buf, "\"boot\":[{\"mark\":\"vmm_start\",\"ms\":0.000"));
	assert_non_null(strstr(buf, "\"mark\":\"kernel_run_init\""));
	assert_non_null(strstr(buf, "\"kernel_s\":\"2.5\""));
	assert_null(strstr(buf, "kernel_banner"));
	assert_null(strstr(buf, "init_start"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_kernel_lines_and_their_timestamps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marks_are_set_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_line_longer_than_the_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exits_up_to_each_mark,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_lists_what_was_seen,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
