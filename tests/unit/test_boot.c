// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the x86 loaders' pure parts: the bzImage setup-header
 * checks, the ELF/PVH note parser (with malformed files), the guest memory
 * map and the initrd placement.
 */
#include <asm/bootparam.h>
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lkvm/util.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/pvh.h"

#define BZ_SETUP_SECTS	4
#define BZ_SETUP_SIZE	((BZ_SETUP_SECTS + 1) * 512)
#define BZ_KERNEL_SIZE	8192
#define BZ_SIZE		(BZ_SETUP_SIZE + BZ_KERNEL_SIZE)

/* A minimal well-formed bzImage: setup header + a "kernel" of zeroes. */
static uint8_t *make_bzimage(void)
{
	uint8_t *img = calloc(1, BZ_SIZE);
	struct setup_header *hdr = (void *)(img + offsetof(struct boot_params, hdr));

	hdr->setup_sects = BZ_SETUP_SECTS;
	hdr->boot_flag = 0xaa55;
	hdr->jump = 0x66eb;	/* header ends at 0x202 + 0x66 = 0x268 */
	hdr->header = 0x53726448;
	hdr->version = 0x020f;
	hdr->loadflags = LOADED_HIGH;
	hdr->xloadflags = XLF_KERNEL_64;
	hdr->initrd_addr_max = 0x7fffffff;
	hdr->cmdline_size = 2047;
	hdr->init_size = 4 * BZ_KERNEL_SIZE;
	hdr->payload_offset = 0x100;
	hdr->payload_length = 0x1000;
	return img;
}

static struct setup_header *hdr_of(uint8_t *img)
{
	return (void *)(img + offsetof(struct boot_params, hdr));
}

static void test_bzimage_ok(void **state)
{
	uint8_t *img = make_bzimage();
	struct bzimage bz;

	assert_int_equal(bzimage_parse(img, BZ_SIZE, "t", &bz), 0);
	assert_int_equal(bz.protocol, 0x020f);
	assert_int_equal(bz.setup_size, BZ_SETUP_SIZE);
	assert_int_equal(bz.header_end, 0x268);
	assert_ptr_equal(bz.kernel, img + BZ_SETUP_SIZE);
	assert_int_equal(bz.kernel_size, BZ_KERNEL_SIZE);
	assert_int_equal(bz.cmdline_size, 2047);
	assert_int_equal(bz.payload_offset, 0x100);
	free(img);
}

static void test_bzimage_setup_sects_zero_means_four(void **state)
{
	uint8_t *img = make_bzimage();
	struct bzimage bz;

	hdr_of(img)->setup_sects = 0;
	assert_int_equal(bzimage_parse(img, BZ_SIZE, "t", &bz), 0);
	assert_int_equal(bz.setup_size, 5 * 512);
	free(img);
}

static void expect_bzimage_error(uint8_t *img, size_t size)
{
	struct bzimage bz;

	assert_int_equal(bzimage_parse(img, size, "t", &bz), -1);
	free(img);
}

static void test_bzimage_bad_magic(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->header = 0x12345678;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_bad_boot_flag(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->boot_flag = 0;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_old_protocol(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->version = 0x020b;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_no_64bit_entry(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->xloadflags = 0;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_zimage(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->loadflags = 0;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_truncated(void **state)
{
	uint8_t *img = make_bzimage();
	size_t sizes[] = { 0, 16, 0x200, sizeof(struct boot_params),
			   BZ_SETUP_SIZE, BZ_SETUP_SIZE + 0x200 };
	struct bzimage bz;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		assert_int_equal(bzimage_parse(img, sizes[i], "t", &bz), -1);
	free(img);
}

/*
 * The 64-bit entry is 0x200 into the protected-mode code: a file that
 * ends there has none, even with a setup part big enough for the header.
 */
static void test_bzimage_ends_before_entry(void **state)
{
	uint8_t *img = make_bzimage();
	size_t setup = 8 * 512;
	struct bzimage bz;

	hdr_of(img)->setup_sects = 7;
	hdr_of(img)->payload_offset = 0;
	hdr_of(img)->payload_length = 0x100;
	assert_int_equal(bzimage_parse(img, setup + 0x200, "t", &bz), -1);
	assert_int_equal(bzimage_parse(img, setup + 0x201, "t", &bz), 0);
	assert_int_equal(bz.kernel_size, 0x201);
	free(img);
}

static void test_bzimage_setup_beyond_file(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->setup_sects = 200;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_payload_beyond_kernel(void **state)
{
	uint8_t *img = make_bzimage();

	hdr_of(img)->payload_length = 0xffffff00;
	expect_bzimage_error(img, BZ_SIZE);
}

static void test_bzimage_random_bytes(void **state)
{
	uint8_t *img = malloc(BZ_SIZE);
	unsigned int i, seed = 1;

	for (i = 0; i < BZ_SIZE; i++)
		img[i] = rand_r(&seed);
	expect_bzimage_error(img, BZ_SIZE);
}

/* An ELF64 with one PT_LOAD and one PT_NOTE carrying the PVH entry. */
struct test_elf {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	Elf64_Nhdr nh;
	char name[4];
	uint32_t entry;
	uint8_t payload[64];
};

static struct test_elf *make_elf(void)
{
	struct test_elf *e = calloc(1, sizeof(*e));

	memcpy(e->eh.e_ident, ELFMAG, SELFMAG);
	e->eh.e_ident[EI_CLASS] = ELFCLASS64;
	e->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	e->eh.e_type = ET_EXEC;
	e->eh.e_machine = EM_X86_64;
	e->eh.e_phoff = offsetof(struct test_elf, ph);
	e->eh.e_phentsize = sizeof(Elf64_Phdr);
	e->eh.e_phnum = 2;
	e->ph[0] = (Elf64_Phdr) {
		.p_type = PT_LOAD, .p_offset = offsetof(struct test_elf, payload),
		.p_paddr = 0x100000, .p_filesz = 64, .p_memsz = 4096,
	};
	e->ph[1] = (Elf64_Phdr) {
		.p_type = PT_NOTE, .p_offset = offsetof(struct test_elf, nh),
		.p_filesz = sizeof(Elf64_Nhdr) + 8,
	};
	e->nh = (Elf64_Nhdr) { .n_namesz = 4, .n_descsz = 4,
			       .n_type = XEN_ELFNOTE_PHYS32_ENTRY };
	memcpy(e->name, "Xen", 4);
	e->entry = 0x100020;
	return e;
}

static void test_elf_pvh_ok(void **state)
{
	struct test_elf *e = make_elf();
	struct elf_kernel k;

	assert_true(elf_is_elf(e, sizeof(*e)));
	assert_int_equal(elf_parse_pvh(e, sizeof(*e), "t", &k), 0);
	assert_int_equal(k.pvh_entry, 0x100020);
	assert_int_equal(k.nr_segments, 1);
	assert_int_equal(k.segments[0].paddr, 0x100000);
	assert_int_equal(k.segments[0].memsz, 4096);
	free(e);
}

static void expect_elf_error(struct test_elf *e, size_t size)
{
	struct elf_kernel k;

	assert_int_equal(elf_parse_pvh(e, size, "t", &k), -1);
	free(e);
}

static void test_elf_no_note(void **state)
{
	struct test_elf *e = make_elf();

	e->nh.n_type = 1;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_note_wrong_owner(void **state)
{
	struct test_elf *e = make_elf();

	memcpy(e->name, "Lnx", 4);
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_note_overflowing_size(void **state)
{
	struct test_elf *e = make_elf();

	e->nh.n_descsz = 0xfffffffc;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_segment_beyond_file(void **state)
{
	struct test_elf *e = make_elf();

	e->ph[0].p_offset = 0xfffffffffffff000ULL;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_filesz_above_memsz(void **state)
{
	struct test_elf *e = make_elf();

	e->ph[0].p_memsz = 8;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_phdrs_beyond_file(void **state)
{
	struct test_elf *e = make_elf();

	e->eh.e_phnum = 0xffff;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_wrong_machine(void **state)
{
	struct test_elf *e = make_elf();

	e->eh.e_machine = EM_AARCH64;
	expect_elf_error(e, sizeof(*e));
}

/* Past the segments, or in the zeroed part of one: not the file's code. */
static void test_elf_entry_not_loaded(void **state)
{
	struct test_elf *e = make_elf();

	e->entry = 0x200000;
	expect_elf_error(e, sizeof(*e));
	e = make_elf();
	e->entry = 0x100040;		/* p_filesz is 64 */
	expect_elf_error(e, sizeof(*e));
	e = make_elf();
	e->entry = 0xfffff;
	expect_elf_error(e, sizeof(*e));
}

static void test_elf_truncated(void **state)
{
	struct test_elf *e = make_elf();

	expect_elf_error(e, 40);
}

static void test_memory_map_small(void **state)
{
	struct x86_mem_range map[X86_MAX_E820];
	unsigned int n = x86_memory_map(256 * MiB, 0, map);
	uint64_t ram = 0;
	unsigned int i;

	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		if (map[i].type == E820_RAM)
			ram += map[i].size;
		/* No RAM in the VGA/BIOS hole or the 32-bit hole. */
		if (map[i].type == E820_RAM) {
			assert_true(map[i].addr + map[i].size <= X86_LOW_RAM_END ||
				    map[i].addr >= X86_BIOS_END);
			assert_true(map[i].addr + map[i].size <= X86_MMIO_HOLE_START ||
				    map[i].addr >= X86_4G);
		}
	}
	assert_int_equal(ram, 256 * MiB - (X86_BIOS_END - X86_EBDA_ADDR));
}

static void test_memory_map_above_4g(void **state)
{
	struct x86_mem_range map[X86_MAX_E820];
	unsigned int n = x86_memory_map(3 * GiB, 2 * GiB, map);

	assert_int_equal(n, 5);
	assert_int_equal(map[3].addr, X86_BIOS_END);
	assert_int_equal(map[3].addr + map[3].size, 3 * GiB);
	assert_int_equal(map[4].addr, X86_4G);
	assert_int_equal(map[4].size, 2 * GiB);
}

static void test_initrd_placement(void **state)
{
	uint64_t addr;

	assert_int_equal(x86_place_initrd(256 * MiB, 32 * MiB, 0x7fffffff,
					  10 * MiB + 1, &addr), 0);
	assert_int_equal(addr % 4096, 0);
	assert_true(addr + 10 * MiB + 1 <= 256 * MiB);
	assert_true(addr >= 32 * MiB);
	/* initrd_addr_max below the top of RAM caps the placement */
	assert_int_equal(x86_place_initrd(3 * GiB, 32 * MiB, 0x37ffffff,
					  MiB, &addr), 0);
	assert_true(addr + MiB <= 0x38000000ULL);
	/* too big to fit after the kernel */
	assert_int_equal(x86_place_initrd(64 * MiB, 32 * MiB, 0x7fffffff,
					  40 * MiB, &addr), -1);
	assert_int_equal(x86_place_initrd(64 * MiB, 32 * MiB, 0x7fffffff,
					  UINT64_MAX, &addr), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bzimage_ok),
		cmocka_unit_test(test_bzimage_setup_sects_zero_means_four),
		cmocka_unit_test(test_bzimage_bad_magic),
		cmocka_unit_test(test_bzimage_bad_boot_flag),
		cmocka_unit_test(test_bzimage_old_protocol),
		cmocka_unit_test(test_bzimage_no_64bit_entry),
		cmocka_unit_test(test_bzimage_zimage),
		cmocka_unit_test(test_bzimage_truncated),
		cmocka_unit_test(test_bzimage_ends_before_entry),
		cmocka_unit_test(test_bzimage_setup_beyond_file),
		cmocka_unit_test(test_bzimage_payload_beyond_kernel),
		cmocka_unit_test(test_bzimage_random_bytes),
		cmocka_unit_test(test_elf_pvh_ok),
		cmocka_unit_test(test_elf_no_note),
		cmocka_unit_test(test_elf_note_wrong_owner),
		cmocka_unit_test(test_elf_note_overflowing_size),
		cmocka_unit_test(test_elf_segment_beyond_file),
		cmocka_unit_test(test_elf_filesz_above_memsz),
		cmocka_unit_test(test_elf_phdrs_beyond_file),
		cmocka_unit_test(test_elf_wrong_machine),
		cmocka_unit_test(test_elf_entry_not_loaded),
		cmocka_unit_test(test_elf_truncated),
		cmocka_unit_test(test_memory_map_small),
		cmocka_unit_test(test_memory_map_above_4g),
		cmocka_unit_test(test_initrd_placement),
	};

	log_threshold = LOG_SILENT;	/* the errors are expected */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
