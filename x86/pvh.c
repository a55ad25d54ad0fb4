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

static int pvh_load_segments(struct vm *vm, const uint8_t *data,
			     const struct elf_kernel *elf, uint64_t *end)
{
	unsigned int i;

	*end = 0;
	for (i = 0; i < elf->nr_segments; i++) {
		const struct elf_segment *s = &elf->segments[i];
		uint8_t *dst = guest_mem_ptr(&vm->mem, s->paddr, s->memsz);

		if (!dst || s->paddr < X86_BIOS_END) {
			pr_err("kernel '%s': a segment at %#llx (%llu KiB) is outside guest RAM; raise -m",
			       vm->cfg->kernel, (unsigned long long)s->paddr,
			       (unsigned long long)(s->memsz / KiB));
			return -1;
		}
		memcpy(dst, data + s->offset, s->filesz);
		memset(dst + s->filesz, 0, s->memsz - s->filesz);
		*end = MAX(*end, s->paddr + s->memsz);
	}
	return 0;
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

int x86_load_pvh(struct vm *vm, const void *data, size_t size,
		 const char *cmdline, const void *initrd, size_t initrd_size,
		 uint64_t rsdp)
{
	struct hvm_start_info si = {
		.magic = HVM_START_MAGIC,
		.version = 1,
		.cmdline_paddr = X86_CMDLINE_ADDR,
		.rsdp_paddr = rsdp,
		.memmap_paddr = X86_PVH_START_INFO + PVH_MEMMAP_OFFSET,
	};
	size_t len = strlen(cmdline);
	struct elf_kernel elf;
	uint64_t kernel_end;

	if (elf_parse_pvh(data, size, vm->cfg->kernel, &elf) ||
	    pvh_load_segments(vm, data, &elf, &kernel_end))
		return -1;
	if (len >= X86_CMDLINE_MAX) {
		pr_err("kernel command line is too long (%zu bytes)", len);
		return -1;
	}
	guest_mem_write(&vm->mem, X86_CMDLINE_ADDR, cmdline, len + 1);
	si.memmap_entries = pvh_write_memmap(vm, si.memmap_paddr);
	if (initrd) {
		struct hvm_modlist_entry mod = { .size = initrd_size };

		if (x86_place_initrd(vm->arch->ram_below_4g, kernel_end,
				     X86_4G - 1, initrd_size, &mod.paddr) ||
		    !guest_mem_write(&vm->mem, mod.paddr, initrd, initrd_size))
			return -1;
		si.nr_modules = 1;
		si.modlist_paddr = X86_PVH_START_INFO + PVH_MODLIST_OFFSET;
		guest_mem_write(&vm->mem, si.modlist_paddr, &mod, sizeof(mod));
	}
	guest_mem_write(&vm->mem, X86_PVH_START_INFO, &si, sizeof(si));
	vm->arch->mode = X86_BOOT_PVH;
	vm->arch->entry = elf.pvh_entry;
	vm->arch->boot_info = X86_PVH_START_INFO;
	return 0;
}
