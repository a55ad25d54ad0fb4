// SPDX-License-Identifier: GPL-2.0
/*
 * bzImage loading per the Linux x86 boot protocol (Documentation/arch/x86/
 * boot.rst): check the setup header, copy the protected-mode kernel to
 * 1 MiB, fill the zero page (setup header, command line, initrd, e820
 * map, RSDP) and enter the 64-bit entry point at load address + 0x200.
 */
#include <asm/bootparam.h>
#include <stddef.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"

#define HDR_OFFSET		0x1f1
#define HDR_MAGIC		0x53726448	/* "HdrS" */
#define BOOT_FLAG		0xaa55
#define MIN_PROTOCOL		0x020c		/* 2.12: xloadflags */
#define LOADER_TYPE_UNKNOWN	0xff
#define ENTRY_64_OFFSET		0x200
#define DEFAULT_SETUP_SECTS	4

static uint32_t get_le(const uint8_t *p, unsigned int len)
{
	uint32_t v = 0;

	while (len--)
		v = (v << 8) | p[len];
	return v;
}

#define HDR_FIELD(data, field) \
	get_le((const uint8_t *)(data) + offsetof(struct boot_params, hdr) + \
	       offsetof(struct setup_header, field), \
	       sizeof(((struct setup_header *)0)->field))

static int bzimage_check_header(const uint8_t *d, size_t size,
				const char *path, struct bzimage *bz)
{
	unsigned int setup_sects;

	if (size < sizeof(struct boot_params) ||
	    HDR_FIELD(d, boot_flag) != BOOT_FLAG ||
	    HDR_FIELD(d, header) != HDR_MAGIC) {
		pr_err("kernel '%s' is neither a bzImage nor an ELF with a PVH note",
		       path);
		return -1;
	}
	bz->protocol = HDR_FIELD(d, version);
	if (bz->protocol < MIN_PROTOCOL) {
		pr_err("kernel '%s' uses boot protocol %u.%02u; lkvm needs 2.12 or later",
		       path, bz->protocol >> 8, bz->protocol & 0xff);
		return -1;
	}
	bz->xloadflags = HDR_FIELD(d, xloadflags);
	if (!(bz->xloadflags & XLF_KERNEL_64)) {
		pr_err("kernel '%s' has no 64-bit entry point (a 32-bit kernel?)",
		       path);
		return -1;
	}
	if (!(HDR_FIELD(d, loadflags) & LOADED_HIGH)) {
		pr_err("kernel '%s' is a zImage, not a bzImage", path);
		return -1;
	}
	setup_sects = HDR_FIELD(d, setup_sects);
	bz->setup_size = ((setup_sects ? setup_sects : DEFAULT_SETUP_SECTS) + 1) * 512;
	/* The header's length is in the jump at 0x200: 0x202 + its offset. */
	bz->header_end = 0x202 + d[0x201];
	if (bz->setup_size >= size || bz->header_end > bz->setup_size ||
	    bz->header_end > sizeof(struct boot_params)) {
		pr_err("kernel '%s' is truncated or has a corrupt setup header",
		       path);
		return -1;
	}
	return 0;
}

int bzimage_parse(const void *data, size_t size, const char *path,
		  struct bzimage *bz)
{
	const uint8_t *d = data;

	memset(bz, 0, sizeof(*bz));
	if (bzimage_check_header(d, size, path, bz))
		return -1;
	bz->kernel = d + bz->setup_size;
	bz->kernel_size = size - bz->setup_size;
	if (bz->kernel_size <= ENTRY_64_OFFSET) {
		pr_err("kernel '%s' is truncated (it ends before its 64-bit entry point)",
		       path);
		return -1;
	}
	bz->initrd_addr_max = HDR_FIELD(d, initrd_addr_max);
	bz->cmdline_size = HDR_FIELD(d, cmdline_size);
	bz->init_size = HDR_FIELD(d, init_size);
	bz->payload_offset = HDR_FIELD(d, payload_offset);
	bz->payload_length = HDR_FIELD(d, payload_length);
	if (bz->init_size < bz->kernel_size ||
	    (uint64_t)bz->payload_offset + bz->payload_length > bz->kernel_size) {
		pr_err("kernel '%s' is truncated (the setup header promises more than the file has)",
		       path);
		return -1;
	}
	return 0;
}

static void zero_page_set_e820(struct boot_params *zp, struct vm *vm)
{
	struct x86_mem_range map[X86_MAX_E820];
	unsigned int i, n;

	n = x86_memory_map(vm->arch->ram_below_4g, vm->arch->ram_above_4g, map);
	for (i = 0; i < n; i++) {
		zp->e820_table[i].addr = map[i].addr;
		zp->e820_table[i].size = map[i].size;
		zp->e820_table[i].type = map[i].type;
	}
	zp->e820_entries = n;
}

static void zero_page_set_initrd(struct boot_params *zp,
				 const struct arch_guest *g)
{
	zp->hdr.ramdisk_image = (uint32_t)g->initrd_addr;
	zp->hdr.ramdisk_size = (uint32_t)g->initrd_size;
	zp->ext_ramdisk_image = g->initrd_addr >> 32;
	zp->ext_ramdisk_size = (uint64_t)g->initrd_size >> 32;
}

static bool bzimage_cmdline_fits(const struct bzimage *bz, size_t len)
{
	if (len <= bz->cmdline_size && len < X86_CMDLINE_MAX)
		return true;
	pr_err("kernel command line is %zu bytes; this kernel takes at most %u",
	       len, bz->cmdline_size);
	return false;
}

int x86_check_bzimage(struct arch_guest *g, uint64_t ram_below_4g,
		      size_t cmdline_len)
{
	struct bzimage *bz = &g->bz;
	uint64_t end;

	if (bzimage_parse(g->image, g->image_size, g->path, bz))
		return -1;
	end = X86_KERNEL_ADDR + bz->init_size;
	if (end > ram_below_4g) {
		pr_err("guest memory too small: the kernel needs %llu MiB from 1 MiB up; raise -m",
		       (unsigned long long)(bz->init_size / MiB + 1));
		return -1;
	}
	if (!bzimage_cmdline_fits(bz, cmdline_len))
		return -1;
	if (g->initrd &&
	    x86_place_initrd(ram_below_4g, end, bz->initrd_addr_max,
			     g->initrd_size, &g->initrd_addr))
		return -1;
	g->mode = X86_BOOT_LINUX64;
	return 0;
}

int x86_load_bzimage(struct vm *vm, const struct arch_guest *g,
		     const char *cmdline, uint64_t rsdp)
{
	const struct bzimage *bz = &g->bz;
	struct boot_params *zp;
	size_t len = strlen(cmdline);

	/* --mmio-cmdline may have made it longer than what was checked. */
	if (!bzimage_cmdline_fits(bz, len))
		return -1;
	zp = guest_mem_ptr(&vm->mem, X86_ZERO_PAGE, sizeof(*zp));
	if (!zp || !guest_mem_load(&vm->mem, X86_KERNEL_ADDR, bz->kernel,
				   bz->kernel_size) ||
	    !guest_mem_write(&vm->mem, X86_CMDLINE_ADDR, cmdline, len + 1) ||
	    (g->initrd && !guest_mem_load(&vm->mem, g->initrd_addr, g->initrd,
					  g->initrd_size))) {
		pr_err("guest memory does not hold the kernel it was checked for");
		return -1;
	}
	memset(zp, 0, sizeof(*zp));
	memcpy((uint8_t *)zp + HDR_OFFSET, (const uint8_t *)g->image + HDR_OFFSET,
	       bz->header_end - HDR_OFFSET);
	zp->hdr.type_of_loader = LOADER_TYPE_UNKNOWN;
	zp->hdr.loadflags |= CAN_USE_HEAP;
	zp->hdr.heap_end_ptr = 0xfe00;
	zp->hdr.cmd_line_ptr = X86_CMDLINE_ADDR;
	zp->acpi_rsdp_addr = rsdp;
	zero_page_set_e820(zp, vm);
	if (g->initrd)
		zero_page_set_initrd(zp, g);
	vm->arch->mode = X86_BOOT_LINUX64;
	vm->arch->entry = X86_KERNEL_ADDR + ENTRY_64_OFFSET;
	vm->arch->boot_info = X86_ZERO_PAGE;
	return 0;
}
