// SPDX-License-Identifier: GPL-2.0
/*
 * The arm64 Image header and the boot payload's placement, from Linux's
 * Documentation/arch/arm64/booting.rst. The header is 64 bytes of
 * little-endian fields: two instructions, text_offset, image_size, flags,
 * three reserved words, the magic "ARM\x64" at 0x38 and a PE offset.
 */
#include <string.h>

#include "lkvm/arm/image.h"
#include "lkvm/util.h"

#define IMAGE_HDR_SIZE		64
#define IMAGE_MAGIC_OFFSET	0x38
#define IMAGE_MAGIC		"ARM\x64"
#define IMAGE_FLAG_BE		(1u << 0)
#define IMAGE_FLAG_PAGE_SHIFT	1
#define IMAGE_FLAG_PAGE_MASK	3u
#define IMAGE_FLAG_ANYWHERE	(1u << 3)
/* Before Linux 3.17 image_size was 0 and text_offset this, unannounced. */
#define IMAGE_OLD_TEXT_OFFSET	0x80000
/* No kernel's text, data and BSS come near this; past it is corruption. */
#define IMAGE_MAX_SIZE		(4ULL << 30)
#define SZ_2M			(2ULL << 20)
#define SZ_64K			(64ULL << 10)

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* What a file that is not an Image is, for the one-line error. */
static const char *image_impostor(const uint8_t *d, size_t size)
{
	if (size >= 2 && d[0] == 0x1f && d[1] == 0x8b)
		return "is gzip-compressed: lkvm boots the uncompressed Image (gunzip it)";
	if (size >= 8 && !memcmp(d, "MZ", 2) && !memcmp(d + 4, "zimg", 4))
		return "is an EFI zboot image: lkvm boots the uncompressed Image (arch/arm64/boot/Image)";
	if (size >= 4 && !memcmp(d, "\177ELF", 4))
		return "is an ELF vmlinux: lkvm boots arm64's Image (arch/arm64/boot/Image)";
	if (size >= 0x206 && !memcmp(d + 0x202, "HdrS", 4))
		return "is an x86 bzImage, not an arm64 Image";
	if (size < IMAGE_HDR_SIZE)
		return "is too short to be an arm64 Image";
	return "is not an arm64 Image (no \"ARM\\x64\" magic at 0x38)";
}

int arm64_image_parse(const void *data, size_t size, const char *path,
		      struct arm64_image *img)
{
	const uint8_t *d = data;
	uint64_t flags;

	if (size < IMAGE_HDR_SIZE ||
	    memcmp(d + IMAGE_MAGIC_OFFSET, IMAGE_MAGIC, 4)) {
		pr_err("kernel '%s' %s", path, image_impostor(d, size));
		return -1;
	}
	img->text_offset = get_le64(d + 8);
	img->image_size = get_le64(d + 16);
	flags = get_le64(d + 24);
	if (!img->image_size) {
		/* a pre-3.17 kernel: its BSS size is unknown, the file's is not */
		img->text_offset = IMAGE_OLD_TEXT_OFFSET;
		img->image_size = size;
		flags = 0;
	}
	if (flags & IMAGE_FLAG_BE) {
		pr_err("kernel '%s' is a big-endian Image; lkvm runs little-endian guests",
		       path);
		return -1;
	}
	if (img->image_size < size || img->image_size > IMAGE_MAX_SIZE ||
	    img->text_offset % 4096 ||
	    img->text_offset >= SZ_2M) {
		pr_err("kernel '%s' has a corrupt Image header (text_offset %#llx, image_size %#llx, file %zu bytes)",
		       path, (unsigned long long)img->text_offset,
		       (unsigned long long)img->image_size, size);
		return -1;
	}
	img->page_kib = (unsigned int[]){ 0, 4, 16, 64 }
		[(flags >> IMAGE_FLAG_PAGE_SHIFT) & IMAGE_FLAG_PAGE_MASK];
	img->anywhere = flags & IMAGE_FLAG_ANYWHERE;
	return 0;
}

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v & ~(a - 1);
}

int arm64_boot_layout(const struct arm64_image *img, uint64_t file_size,
		      uint64_t ram_base, uint64_t ram_size, uint64_t dtb_max,
		      uint64_t initrd_size, struct arm64_boot_layout *out)
{
	uint64_t ram_end = ram_base + ram_size;
	uint64_t kernel_end = ram_base + img->text_offset +
			      MAX(img->image_size, file_size);

	out->kernel = ram_base + img->text_offset;
	/* booting.rst: a tree of at most 2 MiB, in a 2 MiB block of its own */
	out->dtb = dtb_max <= SZ_2M && ram_size >= SZ_2M ?
		   align_down(ram_end - SZ_2M, SZ_2M) : 0;
	out->initrd = 0;
	if (out->dtb && initrd_size && initrd_size <= out->dtb - ram_base)
		out->initrd = align_down(out->dtb - initrd_size, SZ_64K);
	if (!out->dtb || kernel_end > (initrd_size ? out->initrd : out->dtb) ||
	    (initrd_size && !out->initrd)) {
		pr_err("the kernel (%llu MiB with its BSS)%s and the device tree do not fit in %llu MiB of RAM: give -m more",
		       (unsigned long long)((kernel_end - ram_base + (1 << 20) - 1) >> 20),
		       initrd_size ? ", the initrd" : "",
		       (unsigned long long)(ram_size >> 20));
		return -1;
	}
	return 0;
}
