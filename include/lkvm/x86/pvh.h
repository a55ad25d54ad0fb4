/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PVH boot ABI (Xen's hvm_start_info, version 1), which Linux and other
 * kernels accept through the XEN_ELFNOTE_PHYS32_ENTRY note: the loader
 * passes this structure's address in EBX.
 */
#ifndef LKVM_X86_PVH_H
#define LKVM_X86_PVH_H

#include <stdint.h>

#define XEN_ELFNOTE_PHYS32_ENTRY	18
#define HVM_START_MAGIC			0x336ec578

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;		/* version 1 */
	uint32_t memmap_entries;	/* version 1 */
	uint32_t reserved;
};

struct hvm_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr;
	uint64_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

#endif
