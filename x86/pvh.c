// SPDX-License-Identifier: GPL-2.0
/*
 * PVH boot: load an ELF kernel's segments at their physical addresses and
 * hand it an hvm_start_info (command line, initrd as module 0, memory map,
 * RSDP). The kernel is entered in 32-bit protected mode with paging off.
 */
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/pvh.h"

#define PVH_MEMMAP_OFFSET	0x100
#define PVH_MODLIST_OFFSET	0x200

/* Every segment inside RAM below 4 GiB, above the BIOS area. */
static int pvh_check_segments(const struct arch_guest *g,
			      uint64_t ram_below_4g, uint64_t *end)
{
	unsigned int i;

	*end = 0;
	for (i = 0; i < g->elf.nr_segments; i++) {
		const struct elf_segment *s = &g->elf.segments[i];

		if (s->paddr < X86_BIOS_END || s->memsz > ram_below_4g ||
		    s->paddr > ram_below_4g - s->memsz) {
			pr_err("kernel '%s': a segment at %#llx (%llu KiB) is outside guest RAM; raise -m",
			       g->path, (unsigned long long)s->paddr,
			       (unsigned long long)(s->memsz / KiB));
			return -1;
		}
		*end = MAX(*end, s->paddr + s->memsz);
	}
	return 0;
}

static int pvh_load_segments(struct vm *vm, const struct arch_guest *g)
{
	const uint8_t *data = g->image;
	unsigned int i;

	for (i = 0; i < g->elf.nr_segments; i++) {
		const struct elf_segment *s = &g->elf.segments[i];

		if (!guest_mem_load(&vm->mem, s->paddr, data + s->offset,
				    s->filesz) ||
		    !guest_mem_load(&vm->mem, s->paddr + s->filesz, NULL,
				    s->memsz - s->filesz)) {
			pr_err("guest memory does not hold the kernel it was checked for");
			return -1;
		}
	}
	return 0;
}

static bool pvh_cmdline_fits(size_t len)
{
	if (len < X86_CMDLINE_MAX)
		return true;
	pr_err("kernel command line is too long (%zu bytes)", len);
	return false;
}

static uint32_t pvh_write_memmap(struct vm *vm, uint64_t gpa)
{
	struct hvm_memmap_table_entry e[X86_MAX_E820];
	struct x86_mem_range map[X86_MAX_E820];
	unsigned int i, n;

	n = x86_memory_map(vm->arch->ram_below_4g, vm->arch->ram_above_4g, map);
	for (i = 0; i < n; i++)
		e[i] = (struct hvm_memmap_table_entry) {
			.addr = map[i].addr, .size = map[i].size,
			.type = map[i].type,
		};
	guest_mem_write(&vm->mem, gpa, e, n * sizeof(e[0]));
	return n;
}

int x86_check_pvh(struct arch_guest *g, uint64_t ram_below_4g,
		  size_t cmdline_len)
{
	uint64_t kernel_end;

	if (elf_parse_pvh(g->image, g->image_size, g->path, &g->elf) ||
	    pvh_check_segments(g, ram_below_4g, &kernel_end) ||
	    !pvh_cmdline_fits(cmdline_len))
		return -1;
	if (g->initrd &&
	    x86_place_initrd(ram_below_4g, kernel_end, X86_4G - 1,
			     g->initrd_size, &g->initrd_addr))
		return -1;
	g->mode = X86_BOOT_PVH;
	return 0;
}

int x86_load_pvh(struct vm *vm, const struct arch_guest *g,
		 const char *cmdline, uint64_t rsdp)
{
	struct hvm_start_info si = {
		.magic = HVM_START_MAGIC,
		.version = 1,
		.cmdline_paddr = X86_CMDLINE_ADDR,
		.rsdp_paddr = rsdp,
		.memmap_paddr = X86_PVH_START_INFO + PVH_MEMMAP_OFFSET,
	};
	size_t len = strlen(cmdline);

	/* --mmio-cmdline may have made it longer than what was checked. */
	if (!pvh_cmdline_fits(len) || pvh_load_segments(vm, g))
		return -1;
	guest_mem_write(&vm->mem, X86_CMDLINE_ADDR, cmdline, len + 1);
	si.memmap_entries = pvh_write_memmap(vm, si.memmap_paddr);
	if (g->initrd) {
		struct hvm_modlist_entry mod = {
			.paddr = g->initrd_addr, .size = g->initrd_size,
		};

		if (!guest_mem_load(&vm->mem, mod.paddr, g->initrd,
				    g->initrd_size))
			return -1;
		si.nr_modules = 1;
		si.modlist_paddr = X86_PVH_START_INFO + PVH_MODLIST_OFFSET;
		guest_mem_write(&vm->mem, si.modlist_paddr, &mod, sizeof(mod));
	}
	guest_mem_write(&vm->mem, X86_PVH_START_INFO, &si, sizeof(si));
	vm->arch->mode = X86_BOOT_PVH;
	vm->arch->entry = g->elf.pvh_entry;
	vm->arch->boot_info = X86_PVH_START_INFO;
	return 0;
}
