// SPDX-License-Identifier: GPL-2.0
/*
 * The run loop's poll() timeout for --timeout's deadline: none, passed,
 * rounded up (never a busy 0 before the deadline), and deadlines beyond
 * what an int of milliseconds holds (--timeout takes up to a year), which
 * once wrapped negative and made poll() wait for ever.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lkvm/util.h"

static void test_no_deadline_waits_for_ever(void **state)
{
	assert_int_equal(poll_timeout_ms(0, 1000), -1);
}

static void test_passed_deadline_is_zero(void **state)
{
	assert_int_equal(poll_timeout_ms(1000, 1000), 0);
	assert_int_equal(poll_timeout_ms(1000, 5000), 0);
}

static void test_rounded_up(void **state)
{
	assert_int_equal(poll_timeout_ms(1000.2, 1000), 1);
	assert_int_equal(poll_timeout_ms(2500.5, 1000), 1501);
	assert_int_equal(poll_timeout_ms(2000, 1000), 1000);
}

static void test_long_deadlines_clamped(void **state)
{
	double now = 5e6, day = 86400e3;

	assert_int_equal(poll_timeout_ms(now + 24 * day, now), 24 * 86400000);
	assert_int_equal(poll_timeout_ms(now + 25 * day, now), INT_MAX);
	assert_int_equal(poll_timeout_ms(now + 365 * day, now), INT_MAX);
}

static void test_now_is_monotonic(void **state)
{
	double a = now_ms(), b = now_ms();

	assert_true(a > 0 && b >= a);
}

/* A guest that makes lkvm warn in a loop gets a few lines, then a count. */
static void test_ratelimit(void **state)
{
	struct log_ratelimit rl = { 0 };
	unsigned int i, allowed = 0;

	for (i = 0; i < 100; i++)
		allowed += log_ratelimit_allow(&rl);
	assert_int_equal(allowed, LOG_BURST);
	assert_int_equal(rl.held, 100 - LOG_BURST);
	/* the window over: a fresh burst, the count told and cleared */
	rl.window_start_ms -= LOG_WINDOW_MS;
	log_threshold = LOG_SILENT;
	assert_true(log_ratelimit_allow(&rl));
	log_threshold = LOG_WARN;
	assert_int_equal(rl.held, 0);
	assert_int_equal(rl.printed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_no_deadline_waits_for_ever),
		cmocka_unit_test(test_passed_deadline_is_zero),
		cmocka_unit_test(test_rounded_up),
		cmocka_unit_test(test_long_deadlines_clamped),
		cmocka_unit_test(test_now_is_monotonic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
