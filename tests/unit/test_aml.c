// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the AML encoder (x86/aml.c): the byte encodings checked
 * against the ACPI spec by hand, and its refusal to overflow or to accept
 * malformed names and unbalanced blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lkvm/x86/aml.h"

static void expect_bytes(const struct aml_buf *b, const void *want, size_t n)
{
	assert_int_equal(aml_finish(b), 0);
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
}

static void check_pkglen(size_t body, size_t n, const uint8_t *want)
{
	uint8_t out[4];

	assert_int_equal(aml_pkglen_encode(out, body), n);
	assert_memory_equal(out, want, n);
}

/* The length counts its own bytes: each boundary moves with the size. */
static void test_pkglen_boundaries(void **state)
{
	uint8_t out[4];

	check_pkglen(0, 1, (const uint8_t[]){ 0x01 });
	check_pkglen(62, 1, (const uint8_t[]){ 0x3f });
	check_pkglen(63, 2, (const uint8_t[]){ 0x41, 0x04 });	/* 65 */
	check_pkglen(4093, 2, (const uint8_t[]){ 0x4f, 0xff });	/* 0xfff */
	check_pkglen(4094, 3, (const uint8_t[]){ 0x81, 0x00, 0x01 });
	check_pkglen(0xfffff - 3, 3, (const uint8_t[]){ 0x8f, 0xff, 0xff });
	check_pkglen(0xfffff - 2, 4,
		     (const uint8_t[]){ 0xc1, 0x00, 0x00, 0x01 });
	check_pkglen(AML_PKGLEN_MAX - 4, 4,
		     (const uint8_t[]){ 0xcf, 0xff, 0xff, 0xff });
	assert_int_equal(aml_pkglen_encode(out, AML_PKGLEN_MAX - 3), 0);
	assert_int_equal(aml_pkglen_encode(out, SIZE_MAX), 0);
}

/* A Buffer block re-packs its PkgLength and BufferSize when closed. */
static void check_buffer_block(size_t n, const uint8_t *head, size_t head_len)
{
	static uint8_t payload[8192];
	struct aml_buf b;

	memset(payload, 0xa5, sizeof(payload));
	aml_init_growable(&b);
	aml_buffer(&b);
	aml_bytes(&b, payload, n);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), 0);
	assert_int_equal(b.len, 1 + head_len + n);
	assert_int_equal(b.data[0], 0x11);
	assert_memory_equal(b.data + 1, head, head_len);
	assert_memory_equal(b.data + 1 + head_len, payload, n);
	aml_free(&b);
}

static void test_buffer_lengths(void **state)
{
	/* 59 bytes + ByteConst size (2) = 61, +1 for the length: 62 */
	check_buffer_block(59, (const uint8_t[]){ 0x3e, 0x0a, 59 }, 3);
	/* 61 + 2 = 63 needs a second length byte: 65 */
	check_buffer_block(61, (const uint8_t[]){ 0x41, 0x04, 0x0a, 61 }, 4);
	/* 300 + WordConst size (3) + 2 = 305 = 0x131 */
	check_buffer_block(300,
			   (const uint8_t[]){ 0x41, 0x13, 0x0b, 0x2c, 0x01 },
			   5);
	check_buffer_block(0, (const uint8_t[]){ 0x02, 0x00 }, 2);
	check_buffer_block(1, (const uint8_t[]){ 0x03, 0x01 }, 2);
}

static void check_integer(uint64_t v, const uint8_t *want, size_t n)
{
	uint8_t mem[16];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_integer(&b, v);
	expect_bytes(&b, want, n);
}

static void test_integers(void **state)
{
	check_integer(0, (const uint8_t[]){ 0x00 }, 1);
	check_integer(1, (const uint8_t[]){ 0x01 }, 1);
	check_integer(2, (const uint8_t[]){ 0x0a, 0x02 }, 2);
	check_integer(0xff, (const uint8_t[]){ 0x0a, 0xff }, 2);
	check_integer(0x100, (const uint8_t[]){ 0x0b, 0x00, 0x01 }, 3);
	check_integer(0xffff, (const uint8_t[]){ 0x0b, 0xff, 0xff }, 3);
	check_integer(0x10000,
		      (const uint8_t[]){ 0x0c, 0x00, 0x00, 0x01, 0x00 }, 5);
	check_integer(0xfee00000,
		      (const uint8_t[]){ 0x0c, 0x00, 0x00, 0xe0, 0xfe }, 5);
	check_integer(0x100000000ULL,
		      (const uint8_t[]){ 0x0e, 0, 0, 0, 0, 1, 0, 0, 0 }, 9);
	check_integer(UINT64_MAX,
		      (const uint8_t[]){ 0x0e, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff }, 9);
}

static void test_eisaid(void **state)
{
	uint32_t v;
	uint8_t mem[8];
	struct aml_buf b;

	assert_true(aml_eisaid_value("PNP0A03", &v));
	assert_int_equal(v, 0x030ad041);
	assert_true(aml_eisaid_value("PNP0501", &v));
	assert_int_equal(v, 0x0105d041);
	assert_false(aml_eisaid_value("pnp0a03", &v));
	assert_false(aml_eisaid_value("PNP0A0", &v));
	assert_false(aml_eisaid_value("PNP0A033", &v));
	assert_false(aml_eisaid_value("PNP0G03", &v));
	assert_false(aml_eisaid_value("PNP0a03", &v));

	aml_init(&b, mem, sizeof(mem));
	aml_eisaid(&b, "PNP0A03");
	expect_bytes(&b, (const uint8_t[]){ 0x0c, 0x41, 0xd0, 0x0a, 0x03 }, 5);
}

static void test_nameseg(void **state)
{
	uint8_t seg[4];

	assert_true(aml_nameseg(seg, "_SB", 3));
	assert_memory_equal(seg, "_SB_", 4);
	assert_true(aml_nameseg(seg, "A", 1));
	assert_memory_equal(seg, "A___", 4);
	assert_true(aml_nameseg(seg, "PCI0", 4));
	assert_memory_equal(seg, "PCI0", 4);
	assert_true(aml_nameseg(seg, "_S5", 3));
	assert_memory_equal(seg, "_S5_", 4);
	assert_false(aml_nameseg(seg, "0ABC", 4));
	assert_false(aml_nameseg(seg, "pci0", 4));
	assert_false(aml_nameseg(seg, "PCI00", 5));
	assert_false(aml_nameseg(seg, "", 0));
	assert_false(aml_nameseg(seg, "A-B", 3));
}

static void check_path(const char *path, const void *want, size_t n)
{
	uint8_t mem[64];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_name_path(&b, path);
	expect_bytes(&b, want, n);
}

static void bad_path(const char *path)
{
	uint8_t mem[64];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_name_path(&b, path);
	assert_int_equal(aml_finish(&b), -1);
}

static void test_name_paths(void **state)
{
	check_path("_HID", "_HID", 4);
	check_path("\\_SB", "\\_SB_", 5);
	check_path("\\_SB.PCI0", "\\\x2e_SB_PCI0", 10);
	check_path("\\_SB.PCI0.COM1", "\\\x2f\x03_SB_PCI0COM1", 15);
	check_path("^^FOO", "^^FOO_", 6);
	check_path("\\", "\\\x00", 2);
	bad_path("\\_SB.");
	bad_path("\\_SB..PCI0");
	bad_path("\\_sb");
	bad_path("\\TOOLONG");
}

static void test_string_and_name(void **state)
{
	uint8_t mem[32];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_name_string(&b, "_HID", "LNRO0005");
	expect_bytes(&b, "\x08_HID\x0dLNRO0005\x00", 15);

	aml_init(&b, mem, sizeof(mem));
	aml_string(&b, "caf\xc3\xa9");
	assert_int_equal(aml_finish(&b), -1);
}

static void test_method_sta(void **state)
{
	uint8_t mem[32];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_method_return_integer(&b, "_STA", 0x0f);
	expect_bytes(&b, "\x14\x09_STA\x00\xa4\x0a\x0f", 10);
}

/* Closing the inner block shrinks it, and the outer length follows. */
static void test_nested_blocks(void **state)
{
	static const uint8_t want[] = {
		0x10, 0x1e, '\\', '_', 'S', 'B', '_',		/* Scope */
		0x5b, 0x82, 0x16, 'C', 'O', 'M', '1',		/* Device */
		0x08, '_', 'U', 'I', 'D', 0x01,			/* Name */
		0x08, '_', 'P', 'R', 'W',			/* Name */
		0x12, 0x05, 0x02, 0x0a, 0x03, 0x00,		/* Package */
	};
	uint8_t mem[64];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_scope(&b, "\\_SB");
	aml_device(&b, "COM1");
	aml_name_integer(&b, "_UID", 1);
	aml_name(&b, "_PRW");
	aml_package(&b, 2);
	aml_integer(&b, 3);
	aml_integer(&b, 0);
	aml_close(&b);
	aml_close(&b);
	aml_close(&b);
	expect_bytes(&b, want, sizeof(want));
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

static void test_resource_template(void **state)
{
	static const uint8_t io[] = { 0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03,
				      0x01, 0x08 };
	static const uint8_t irq[] = { 0x23, 0x10, 0x00, 0x01 };
	static const uint8_t mem32[] = { 0x86, 0x09, 0x00, 0x01,
					 0x00, 0x00, 0x00, 0xe0,
					 0x00, 0x02, 0x00, 0x00 };
	static const uint8_t ext_irq[] = { 0x89, 0x06, 0x00, 0x03, 0x01,
					   0x05, 0x00, 0x00, 0x00 };
	static const uint8_t word_bus[] = { 0x88, 0x0d, 0x00, 0x02, 0x0c, 0x00,
					    0, 0, 0, 0, 0xff, 0, 0, 0,
					    0x00, 0x01 };
	size_t body = sizeof(io) + sizeof(irq) + sizeof(mem32) +
		      sizeof(ext_irq) + sizeof(word_bus) + 2;
	uint8_t mem[128], *t;
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_resource_template(&b);
	aml_res_io(&b, 0x3f8, 0x3f8, 1, 8);
	aml_res_irq(&b, 4, AML_IRQ_EDGE);
	aml_res_memory32_fixed(&b, 0xe0000000, 0x200, true);
	aml_res_ext_irq(&b, 5, AML_IRQ_EDGE | AML_IRQ_ACTIVE_HIGH);
	aml_res_word_bus(&b, 0, 255);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), 0);

	/* BufferOp, PkgLength (1 byte), ByteConst size, then descriptors */
	assert_int_equal(b.len, 4 + body);
	assert_int_equal(b.data[0], 0x11);
	assert_int_equal(b.data[1], 3 + body);
	assert_int_equal(b.data[2], 0x0a);
	assert_int_equal(b.data[3], body);
	t = b.data + 4;
	assert_memory_equal(t, io, sizeof(io));
	t += sizeof(io);
	assert_memory_equal(t, irq, sizeof(irq));
	t += sizeof(irq);
	assert_memory_equal(t, mem32, sizeof(mem32));
	t += sizeof(mem32);
	assert_memory_equal(t, ext_irq, sizeof(ext_irq));
	t += sizeof(ext_irq);
	assert_memory_equal(t, word_bus, sizeof(word_bus));
	t += sizeof(word_bus);
	assert_int_equal(t[0], 0x79);
	assert_int_equal(sum(b.data + 4, body), 0);
}

static void test_address_ranges(void **state)
{
	uint8_t mem[128];
	struct aml_buf b;

	aml_init(&b, mem, sizeof(mem));
	aml_resource_template(&b);
	aml_res_qword_memory(&b, 0x100000000ULL, 0x1ffffffffULL,
			     AML_RES_PRODUCER | AML_RES_PREFETCHABLE);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), 0);
	/* tag, length 43, memory, producer + fixed, RW prefetchable */
	assert_memory_equal(b.data + 4, "\x8a\x2b\x00\x00\x0c\x07", 6);
	/* the length field, last of the five QWords */
	assert_memory_equal(b.data + 4 + 6 + 32, "\0\0\0\0\1\0\0\0", 8);

	/* 0..0xffff does not have a 16-bit length; max < min is nonsense */
	aml_init(&b, mem, sizeof(mem));
	aml_resource_template(&b);
	aml_res_word_io(&b, 0, 0xffff, AML_RES_PRODUCER);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), -1);

	aml_init(&b, mem, sizeof(mem));
	aml_resource_template(&b);
	aml_res_dword_memory(&b, 2, 1, 0);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), -1);
}

static void test_errors(void **state)
{
	uint8_t mem[32];
	struct aml_buf b;

	/* a descriptor outside a template */
	aml_init(&b, mem, sizeof(mem));
	aml_res_io(&b, 0x60, 0x60, 1, 1);
	assert_int_equal(aml_finish(&b), -1);

	/* unbalanced blocks, both ways */
	aml_init(&b, mem, sizeof(mem));
	aml_close(&b);
	assert_int_equal(aml_finish(&b), -1);
	aml_init(&b, mem, sizeof(mem));
	aml_device(&b, "DEV0");
	assert_int_equal(aml_finish(&b), -1);

	/* too deep */
	aml_init_growable(&b);
	for (int i = 0; i <= AML_MAX_DEPTH; i++)
		aml_scope(&b, "S");
	assert_int_equal(aml_finish(&b), -1);
	aml_free(&b);

	/* more than 7 arguments, more than 255 package elements */
	aml_init(&b, mem, sizeof(mem));
	aml_method(&b, "M", 8, false);
	assert_int_equal(aml_finish(&b), -1);
	aml_init(&b, mem, sizeof(mem));
	aml_package(&b, 256);
	assert_int_equal(aml_finish(&b), -1);
}

/* A full caller buffer fails cleanly and never writes past its end. */
static void test_fixed_buffer_overflow(void **state)
{
	uint8_t mem[40];
	struct aml_buf b;

	memset(mem, 0xcc, sizeof(mem));
	aml_init(&b, mem, 24);
	aml_scope(&b, "\\_SB");
	aml_name_string(&b, "_HID", "LNRO0005");
	aml_name_string(&b, "_STR", "more than fits");
	aml_close(&b);
	assert_int_equal(aml_finish(&b), -1);
	assert_true(b.len <= 24);
	for (size_t i = 24; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0xcc);
}

static void test_growable(void **state)
{
	struct aml_buf b;

	aml_init_growable(&b);
	aml_scope(&b, "\\_SB");
	for (unsigned int i = 0; i < 1000; i++)
		aml_name_integer(&b, "_UID", i);
	aml_close(&b);
	assert_int_equal(aml_finish(&b), 0);
	/* 1000 Names of 5 + 1..3 bytes: a 3-byte PkgLength */
	assert_int_equal(b.data[0], 0x10);
	assert_int_equal(b.data[1] >> 6, 2);
	aml_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pkglen_boundaries),
		cmocka_unit_test(test_buffer_lengths),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_eisaid),
		cmocka_unit_test(test_nameseg),
		cmocka_unit_test(test_name_paths),
		cmocka_unit_test(test_string_and_name),
		cmocka_unit_test(test_method_sta),
		cmocka_unit_test(test_nested_blocks),
		cmocka_unit_test(test_resource_template),
		cmocka_unit_test(test_address_ranges),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_fixed_buffer_overflow),
		cmocka_unit_test(test_growable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
