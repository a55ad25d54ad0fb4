/* SPDX-License-Identifier: GPL-2.0 */
/*
 * selftest.elf: tests the guest kit's own runtime, so that a failure in the
 * other guests points at the VMM rather than at the kit: printf formatting,
 * the heap (alignment, reuse, coalescing, rejecting bad frees), command-line
 * parsing (give it "alpha=1 beta=0x10 gamma word=hello"), checksums and the
 * clock.
 */
#include "kit.h"

static void expect_fmt(const char *want, const char *got)
{
	kit_check(!strcmp(want, got), "printf: want \"%s\", got \"%s\"", want,
		  got);
}

static void test_printf(void)
{
	char b[64];
	int n;

	kit_snprintf(b, sizeof(b), "%d %i %u", -5, 17, 4294967295u);
	expect_fmt("-5 17 4294967295", b);
	kit_snprintf(b, sizeof(b), "%x %X %lx", 0xbeefu, 0xbeefu,
		     0x123456789abcdef0UL);
	expect_fmt("beef BEEF 123456789abcdef0", b);
	kit_snprintf(b, sizeof(b), "%ld %lu", (long)(-9223372036854775807L - 1),
		     18446744073709551615UL);
	expect_fmt("-9223372036854775808 18446744073709551615", b);
	kit_snprintf(b, sizeof(b), "[%s|%c|%p|%%]", "abc", 'z', (void *)0x1000);
	expect_fmt("[abc|z|0x1000|%]", b);
	kit_snprintf(b, sizeof(b), "[%5d|%-5d|%05d|%#x|%.2s|%-4s]", 42, 42, 42,
		     0x1f, "abcdef", "ab");
	expect_fmt("[   42|42   |00042|0x1f|ab|ab  ]", b);
	kit_snprintf(b, sizeof(b), "[%05d|%3s]", -42, "abcd");
	expect_fmt("[-0042|abcd]", b);
	n = kit_snprintf(b, 4, "abcdef");
	expect_fmt("abc", b);
	kit_check(n == 6, "snprintf returned %d for 6 characters", n);
}

static bool disjoint(const char *a, size_t an, const char *b, size_t bn)
{
	return a + an <= b || b + bn <= a;
}

static void test_heap(void)
{
	size_t before = kit_heap_free_bytes();
	char *a = kit_malloc(100), *b = kit_malloc(200), *c = kit_malloc(50);
	char *d, *z;

	kit_check(before >= 512 * 1024, "heap only %lu bytes", before);
	if (!kit_check(a && b && c, "heap: small allocations failed"))
		return;
	kit_check(!((uintptr_t)a & 15) && !((uintptr_t)b & 15) &&
		  !((uintptr_t)c & 15), "heap: blocks not 16-byte aligned");
	kit_check(disjoint(a, 100, b, 200) && disjoint(b, 200, c, 50) &&
		  disjoint(a, 100, c, 50), "heap: blocks overlap");
	memset(a, 0xaa, 100);
	memset(b, 0xbb, 200);
	memset(c, 0xcc, 50);
	kit_free(b);
	d = kit_malloc(150);
	kit_check(d == b, "heap: freed block %p not reused (got %p)", b, d);
	kit_check(a[99] == (char)0xaa && c[0] == (char)0xcc,
		  "heap: neighbours clobbered");
	z = kit_zalloc(64);
	if (kit_check(z, "heap: zalloc failed"))
		for (int i = 0; i < 64; i++)
			if (!kit_check(!z[i], "heap: zalloc byte %d not 0", i))
				break;
	kit_check(!kit_malloc(64 << 20), "heap: 64 MiB allocation succeeded");

	kit_check(!kit_free_checked(a + 16), "heap: interior pointer freed");
	kit_check(!kit_free_checked((void *)0x1000), "heap: wild pointer freed");
	kit_free(d);
	kit_check(!kit_free_checked(d), "heap: double free not caught");
	kit_free(a);
	kit_free(c);
	kit_free(z);
	kit_check(kit_heap_free_bytes() == before,
		  "heap: %lu bytes free after freeing all, %lu before",
		  kit_heap_free_bytes(), before);
	a = kit_malloc(before);
	kit_check(a != NULL, "heap: coalesced heap cannot give back %lu bytes",
		  before);
	kit_free(a);
}

static void test_cmdline(void)
{
	char w[8];

	if (!kit_cmdline_has("alpha")) {
		kit_printf("no alpha= on the command line: parsing not tested\n");
		return;
	}
	kit_check(kit_cmdline_u64("alpha", 0) == 1, "cmdline: alpha != 1");
	kit_check(kit_cmdline_u64("beta", 0) == 16, "cmdline: beta != 0x10");
	kit_check(kit_cmdline_has("gamma"), "cmdline: bare gamma not found");
	kit_check(!kit_cmdline_has("alph"), "cmdline: prefix alph matched");
	kit_check(kit_cmdline_u64("delta", 99) == 99,
		  "cmdline: missing key did not give the default");
	kit_check(kit_cmdline_get("word", w, sizeof(w)) && !strcmp(w, "hello"),
		  "cmdline: word != hello");
	kit_check(kit_cmdline_get("word", w, 3) && !strcmp(w, "he"),
		  "cmdline: value not truncated to the buffer");
}

static void test_misc(void)
{
	static const uint8_t bytes[] = { 0x10, 0x20, 0xd0 };
	const char *end;
	uint64_t t0, t1;

	kit_check(kit_checksum(bytes, sizeof(bytes)) == 0, "checksum");
	kit_check(kit_strtou64("0x1F", &end) == 31 && !*end, "strtou64 hex");
	kit_check(kit_strtou64("123x", &end) == 123 && *end == 'x',
		  "strtou64 decimal");
	t0 = kit_now_us();
	kit_udelay(2000);
	t1 = kit_now_us();
	kit_printf("udelay(2000) took %lu us by the kit clock\n", t1 - t0);
	kit_check(t1 - t0 >= 2000 && t1 - t0 < 1000000,
		  "clock: udelay(2000) measured %lu us", t1 - t0);
	kit_check(kit_start_info && kit_start_info->version >= 1,
		  "start_info version < 1");
}

KIT_TEST(selftest)
{
	test_printf();
	test_heap();
	test_cmdline();
	test_misc();
}
