// SPDX-License-Identifier: GPL-2.0
/*
 * The guest's view of memory (e820 for bzImage, the PVH memmap) and where
 * an initrd goes. Low RAM stops at the EBDA; the BIOS area that holds the
 * ACPI and MP tables is reserved; the 32-bit hole is simply not listed.
 */
#include "lkvm/util.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"

unsigned int x86_memory_map(uint64_t below_4g, uint64_t above_4g,
			    struct x86_mem_range map[X86_MAX_E820])
{
	unsigned int n = 0;

	map[n++] = (struct x86_mem_range) { 0, X86_EBDA_ADDR, E820_RAM };
	map[n++] = (struct x86_mem_range) {
		X86_EBDA_ADDR, X86_LOW_RAM_END - X86_EBDA_ADDR, E820_RESERVED,
	};
	map[n++] = (struct x86_mem_range) {
		X86_ACPI_ADDR, X86_BIOS_END - X86_ACPI_ADDR, E820_RESERVED,
	};
	if (below_4g > X86_BIOS_END)
		map[n++] = (struct x86_mem_range) {
			X86_BIOS_END, below_4g - X86_BIOS_END, E820_RAM,
		};
	if (above_4g)
		map[n++] = (struct x86_mem_range) { X86_4G, above_4g, E820_RAM };
	return n;
}

int x86_place_initrd(uint64_t ram_below_4g, uint64_t kernel_end,
		     uint64_t limit, uint64_t size, uint64_t *addr)
{
	uint64_t top = MIN(ram_below_4g, limit + 1);

	if (size > top || ALIGN_DOWN(top - size, 4096) < kernel_end) {
		pr_err("initrd (%llu MiB) does not fit in guest memory after the kernel; raise -m",
		       (unsigned long long)(size / MiB + 1));
		return -1;
	}
	*addr = ALIGN_DOWN(top - size, 4096);
	return 0;
}
