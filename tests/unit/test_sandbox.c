// SPDX-License-Identifier: GPL-2.0
/*
 * lkvm sandbox's configuration (core/sandbox.c): what it adds to a run
 * configuration. Here: the host's / read-only and the working directory
 * read-write, and a user-mode network that keeps the host's loopback out
 * of reach unless the user asked for it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/net.h"
#include "lkvm/sandbox.h"

/* A stand-in for the /init lkvm embeds (core/sandbox_init.S). */
__asm__(".section .rodata\n"
	".globl sandbox_init_start, sandbox_init_end\n"
	"sandbox_init_start: .ascii \"#!/bin/sh\\n\"\n"
	"sandbox_init_end:\n"
	".previous");

static void test_shares_and_networks(void **state)
{
	static char *argv[] = { "true", NULL };
	struct vm_config cfg;
	char cwd[PATH_MAX];

	memset(&cfg, 0, sizeof(cfg));
	cfg.nr_nics = 3;
	assert_int_equal(net_parse_option("user", &cfg.nics[0]), 0);
	assert_int_equal(net_parse_option("user,host_loopback=on",
					  &cfg.nics[1]), 0);
	assert_int_equal(net_parse_option("tap", &cfg.nics[2]), 0);
	assert_int_equal(sandbox_configure(&cfg, 1, argv), 0);

	assert_int_equal(cfg.nics[0].host_loopback, NET_HOST_LOOPBACK_OFF);
	assert_int_equal(cfg.nics[1].host_loopback, NET_HOST_LOOPBACK_ON);
	assert_int_equal(cfg.nics[2].host_loopback, NET_HOST_LOOPBACK_DEFAULT);

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(cfg.nr_shares, strcmp(cwd, "/") ? 2 : 1);
	assert_string_equal(cfg.shares[0].path, "/");
	assert_true(cfg.shares[0].ro);
	if (cfg.nr_shares == 2) {
		assert_string_equal(cfg.shares[1].path, cwd);
		assert_false(cfg.shares[1].ro);
	}
	assert_non_null(cfg.initrd);
	assert_non_null(strstr(cfg.params, "quiet loglevel=1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_and_networks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
