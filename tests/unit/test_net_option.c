// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the -n option (net/option.c) and the default MAC. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/net.h"
#include "lkvm/util.h"

static int quiet(void **state)
{
	log_threshold = LOG_SILENT;
	return 0;
}

static void test_short_forms(void **state)
{
	struct net_config c;

	assert_int_equal(net_parse_option("tap", &c), 0);
	assert_int_equal(c.mode, NET_MODE_TAP);
	assert_int_equal(c.queues, 1);
	assert_string_equal(c.tapif, "");
	assert_int_equal(net_parse_option("user", &c), 0);
	assert_int_equal(c.mode, NET_MODE_USER);
	assert_int_equal(net_parse_option("none", &c), 0);
	assert_int_equal(c.mode, NET_MODE_NONE);
	assert_int_equal(net_parse_option("bogus", &c), -1);
	/* the mode may lead the settings, unnamed, as in QEMU's -netdev */
	assert_int_equal(net_parse_option("user,hostfwd=tcp::2222-:22", &c), 0);
	assert_int_equal(c.mode, NET_MODE_USER);
	assert_int_equal(c.nr_hostfwd, 1);
	assert_int_equal(net_parse_option("tap,tapif=t0", &c), 0);
	assert_int_equal(c.mode, NET_MODE_TAP);
	assert_string_equal(c.tapif, "t0");
	assert_int_equal(net_parse_option("tapif=t0,tap", &c), -1);
	assert_int_equal(net_parse_option("bogus,tapif=t0", &c), -1);
}

static void test_tap_settings(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	struct net_config c;

	assert_int_equal(net_parse_option(
		"mode=tap,tapif=t0,guest_mac=52:54:00:ab:cd:ef,queues=4,script=/bin/true",
		&c), 0);
	assert_int_equal(c.mode, NET_MODE_TAP);
	assert_string_equal(c.tapif, "t0");
	assert_true(c.mac_given);
	assert_memory_equal(c.mac, mac, 6);
	assert_int_equal(c.queues, 4);
	assert_string_equal(c.script, "/bin/true");
	/* kvmtool's script=none means no script */
	assert_int_equal(net_parse_option("mode=tap,script=none", &c), 0);
	assert_string_equal(c.script, "");
}

static void test_bad_values(void **state)
{
	static const char *const bad[] = {
		"mode=bogus", "mode=tap,tapif=", "mode=tap,tapif=0123456789abcdef",
		"mode=tap,guest_mac=01:00:5e:00:00:01",	/* multicast */
		"mode=tap,guest_mac=00:00:00:00:00:00",
		"mode=tap,guest_mac=52:54:00:12:34", "mode=tap,guest_mac=52:54:00:12:34:567",
		"mode=tap,queues=0", "mode=tap,queues=9", "mode=tap,queues=x",
		"mode=tap,script=", "mode=tap,colour=red", "mode=tap,tapif",
		"mode=user,hostfwd=tcp::0-:22", "mode=user,hostfwd=tcp::2222",
		"mode=user,hostfwd=tcp::2222-:65536", "mode=user,hostfwd=sctp::1-:2",
		"mode=user,hostfwd=tcp:1.2.3:2222-:22",
		"mode=user,hostfwd=tcp::2222-10.0.2.300:22",
		/* settings of the other backend */
		"mode=user,tapif=t0", "mode=user,queues=2", "mode=user,script=/x",
		"mode=tap,hostfwd=tcp::2222-:22",
		"mode=tap,restrict=on", "mode=tap,host_loopback=off",
		"mode=user,restrict=yes", "mode=user,host_loopback=",
		"mode=user,restrict=on,host_loopback=on",	/* contradicts */
	};
	struct net_config c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		if (net_parse_option(bad[i], &c) != -1)
			fail_msg("'%s' was accepted", bad[i]);
	}
}

static void test_hostfwd(void **state)
{
	struct net_config c;
	char addr[INET_ADDRSTRLEN];

	assert_int_equal(net_parse_option(
		"mode=user,hostfwd=tcp::2222-:22,hostfwd=udp:0.0.0.0:5353-10.0.2.16:53",
		&c), 0);
	assert_int_equal(c.mode, NET_MODE_USER);
	assert_int_equal(c.nr_hostfwd, 2);
	/* no host address: loopback only, so a sandbox is not exposed */
	assert_false(c.hostfwd[0].udp);
	inet_ntop(AF_INET, &c.hostfwd[0].host_addr, addr, sizeof(addr));
	assert_string_equal(addr, "127.0.0.1");
	assert_int_equal(c.hostfwd[0].host_port, 2222);
	assert_int_equal(c.hostfwd[0].guest_addr.s_addr, 0);
	assert_int_equal(c.hostfwd[0].guest_port, 22);
	assert_true(c.hostfwd[1].udp);
	inet_ntop(AF_INET, &c.hostfwd[1].host_addr, addr, sizeof(addr));
	assert_string_equal(addr, "0.0.0.0");
	inet_ntop(AF_INET, &c.hostfwd[1].guest_addr, addr, sizeof(addr));
	assert_string_equal(addr, "10.0.2.16");
	assert_int_equal(c.hostfwd[1].guest_port, 53);
	/* the protocol defaults to tcp, as in QEMU */
	assert_int_equal(net_parse_option("mode=user,hostfwd=:8080-:80", &c), 0);
	assert_false(c.hostfwd[0].udp);
	assert_int_equal(c.hostfwd[0].host_port, 8080);
}

/* -n user's reach: QEMU's by default, the host's loopback or all kept out. */
static void test_user_reach(void **state)
{
	struct net_config c;

	assert_int_equal(net_parse_option("user", &c), 0);
	assert_false(c.restricted);
	assert_int_equal(c.host_loopback, NET_HOST_LOOPBACK_DEFAULT);
	assert_int_equal(net_parse_option("user,host_loopback=off", &c), 0);
	assert_int_equal(c.host_loopback, NET_HOST_LOOPBACK_OFF);
	assert_int_equal(net_parse_option("mode=user,host_loopback=on", &c), 0);
	assert_int_equal(c.host_loopback, NET_HOST_LOOPBACK_ON);
	assert_int_equal(net_parse_option(
		"user,restrict=on,hostfwd=tcp::2222-:22", &c), 0);
	assert_true(c.restricted);
	assert_int_equal(c.nr_hostfwd, 1);
	assert_int_equal(net_parse_option("user,restrict=on,host_loopback=off",
					  &c), 0);
	assert_int_equal(net_parse_option("user,restrict=off", &c), 0);
	assert_false(c.restricted);
}

static void test_hostfwd_limit(void **state)
{
	char arg[1024] = "mode=user";
	struct net_config c;
	unsigned int i;

	for (i = 0; i < NET_MAX_HOSTFWD; i++)
		snprintf(arg + strlen(arg), sizeof(arg) - strlen(arg),
			 ",hostfwd=tcp::%u-:22", 2000 + i);
	assert_int_equal(net_parse_option(arg, &c), 0);
	assert_int_equal(c.nr_hostfwd, NET_MAX_HOSTFWD);
	strcat(arg, ",hostfwd=tcp::3000-:22");
	assert_int_equal(net_parse_option(arg, &c), -1);
}

static void test_default_mac(void **state)
{
	uint8_t a[6], b[6], c[6];

	net_default_mac("vm1", 0, a);
	net_default_mac("vm1", 0, b);
	net_default_mac("vm1", 1, c);
	assert_memory_equal(a, b, 6);
	assert_memory_not_equal(a, c, 6);
	/* locally administered unicast */
	assert_int_equal(a[0], 0x02);
	net_default_mac(NULL, 0, b);
	assert_memory_not_equal(a, b, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_forms),
		cmocka_unit_test(test_tap_settings),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_hostfwd),
		cmocka_unit_test(test_user_reach),
		cmocka_unit_test(test_hostfwd_limit),
		cmocka_unit_test(test_default_mac),
	};

	return cmocka_run_group_tests(tests, quiet, NULL);
}
