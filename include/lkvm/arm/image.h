/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 kernel Image and where it, its device tree and its initrd go
 * in guest RAM, per Linux's Documentation/arch/arm64/booting.rst.
 */
#ifndef LKVM_ARM_IMAGE_H
#define LKVM_ARM_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the 64-byte header at the start of an Image says. */
struct arm64_image {
	uint64_t text_offset;	/* from a 2 MiB-aligned base */
	uint64_t image_size;	/* bytes from the load address, BSS included */
	unsigned int page_kib;	/* 4, 16 or 64; 0 when it does not say */
	bool anywhere;		/* any 2 MiB-aligned base, not DRAM's start */
};

/*
 * Check an Image of `size` bytes; -1 with a one-line message naming
 * `path` and what the file is instead (a gzip'd or EFI zboot image, an
 * ELF vmlinux, an x86 bzImage, a big-endian kernel, a truncated one).
 */
int arm64_image_parse(const void *data, size_t size, const char *path,
		      struct arm64_image *img);

/* Guest-physical addresses of the boot payload, all inside RAM. */
struct arm64_boot_layout {
	uint64_t kernel;	/* load address: the entry point */
	uint64_t dtb;		/* 8-byte aligned (2 MiB here), dtb_max bytes */
	uint64_t initrd;	/* 0 when there is none */
};

/*
 * Place a kernel of file_size bytes, a device tree of at most dtb_max
 * bytes and an initrd of initrd_size bytes (0: none) in RAM at ram_base
 * (2 MiB-aligned) of ram_size bytes: the kernel at the bottom, the initrd
 * and the tree at the top, out of the way of the kernel's BSS and of
 * the memory it reserves first. -1 with a message when they do not fit.
 */
int arm64_boot_layout(const struct arm64_image *img, uint64_t file_size,
		      uint64_t ram_base, uint64_t ram_size, uint64_t dtb_max,
		      uint64_t initrd_size, struct arm64_boot_layout *out);

#endif
