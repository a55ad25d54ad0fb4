/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86 guest loading: the kernel image formats lkvm understands (bzImage per
 * the Linux boot protocol, ELF with a PVH entry note, raw firmware), the
 * memory map handed to the guest, and the arch state that tells the vCPU
 * code how to enter the guest. The parsers are pure functions on a file's
 * bytes so that unit tests can feed them malformed images.
 */
#ifndef LKVM_X86_BOOT_H
#define LKVM_X86_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lkvm/file_map.h"

struct vm;
struct kvm_cpuid2;

enum x86_boot_mode {
	X86_BOOT_LINUX64,	/* bzImage, 64-bit boot protocol */
	X86_BOOT_PVH,		/* ELF PVH entry: 32-bit, paging off */
	X86_BOOT_FIRMWARE,	/* reset vector, real mode */
};

/* Owned by the main thread; read-only once the vCPUs exist. */
struct arch_vm {
	enum x86_boot_mode mode;
	uint64_t entry;		/* guest RIP at start */
	uint64_t boot_info;	/* RSI (zero page) or EBX (start_info) */
	uint64_t ram_below_4g;
	uint64_t ram_above_4g;
	struct kvm_cpuid2 *cpuid;	/* KVM_GET_SUPPORTED_CPUID */
};

/* What the bzImage setup header says, checked and decoded. */
struct bzimage {
	uint16_t protocol;		/* boot protocol version, e.g. 0x020f */
	size_t setup_size;		/* real-mode part incl. boot sector */
	size_t header_end;		/* end of the setup header in the file */
	const uint8_t *kernel;		/* protected-mode part */
	size_t kernel_size;
	uint32_t initrd_addr_max;
	uint32_t cmdline_size;		/* max length without the NUL */
	uint32_t init_size;		/* memory the kernel needs from load */
	uint32_t payload_offset;	/* compressed payload, from kernel */
	uint32_t payload_length;
	uint16_t xloadflags;
};

/* Decode a bzImage; -1 with a one-line message naming `path` if invalid. */
int bzimage_parse(const void *data, size_t size, const char *path,
		  struct bzimage *bz);

#define ELF_MAX_SEGMENTS	16

struct elf_segment {
	uint64_t paddr;
	uint64_t offset;
	uint64_t filesz;
	uint64_t memsz;
};

struct elf_kernel {
	uint32_t pvh_entry;		/* XEN_ELFNOTE_PHYS32_ENTRY */
	unsigned int nr_segments;
	struct elf_segment segments[ELF_MAX_SEGMENTS];
};

bool elf_is_elf(const void *data, size_t size);
/* Decode an ELF with a PVH note; -1 with a message naming `path`. */
int elf_parse_pvh(const void *data, size_t size, const char *path,
		  struct elf_kernel *elf);

#define E820_RAM	1
#define E820_RESERVED	2
#define X86_MAX_E820	8

struct x86_mem_range {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/* The guest's memory map for the given RAM split; returns the count. */
unsigned int x86_memory_map(uint64_t below_4g, uint64_t above_4g,
			    struct x86_mem_range map[X86_MAX_E820]);

/*
 * The guest the user gave (-k/-i or -f), read, decoded and placed in guest
 * memory before any VM exists, so that a bad image or one too big for -m
 * is reported before /dev/kvm is opened. Made and freed by the main
 * thread (arch_guest_open/close), read-only in between.
 */
struct arch_guest {
	enum x86_boot_mode mode;
	const char *path;		/* kernel or firmware, for messages */
	struct mapped_file image_file;	/* the kernel or firmware file */
	struct mapped_file initrd_file;
	const void *image;		/* image_file's bytes */
	size_t image_size;
	const void *initrd;		/* initrd_file's, NULL without one */
	size_t initrd_size;
	uint64_t initrd_addr;		/* where it goes in guest memory */
	struct bzimage bz;		/* X86_BOOT_LINUX64 */
	struct elf_kernel elf;		/* X86_BOOT_PVH */
};

/*
 * The checks, per format: the image decodes, it and the initrd fit below
 * ram_below_4g, the command line fits the kernel's limit. -1 + message.
 */
int x86_check_bzimage(struct arch_guest *g, uint64_t ram_below_4g,
		      size_t cmdline_len);
int x86_check_pvh(struct arch_guest *g, uint64_t ram_below_4g,
		  size_t cmdline_len);
int x86_check_firmware(const struct arch_guest *g, uint64_t ram_below_4g);

/* Loaders: each fills vm->arch (mode, entry, boot_info) on success. */
int x86_load_bzimage(struct vm *vm, const struct arch_guest *g,
		     const char *cmdline, uint64_t rsdp);
int x86_load_pvh(struct vm *vm, const struct arch_guest *g,
		 const char *cmdline, uint64_t rsdp);
int x86_load_firmware(struct vm *vm, const struct arch_guest *g);

/* Highest 4 KiB-aligned address for an initrd of `size` below `limit`. */
int x86_place_initrd(uint64_t ram_below_4g, uint64_t kernel_end,
		     uint64_t limit, uint64_t size, uint64_t *addr);

#endif
