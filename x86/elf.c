// SPDX-License-Identifier: GPL-2.0
/*
 * ELF kernels with a PVH entry: what a kernel build leaves as vmlinux
 * (CONFIG_PVH=y) and what the guest kit links. Every offset and size in
 * the file is checked against the file before it is used.
 */
#include <elf.h>
#include <string.h>

#include "lkvm/util.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/pvh.h"

bool elf_is_elf(const void *data, size_t size)
{
	return size >= EI_NIDENT && !memcmp(data, ELFMAG, SELFMAG);
}

/* One program header, whichever the class, widened to 64 bits. */
struct phdr {
	uint32_t type;
	uint64_t offset, paddr, filesz, memsz;
};

struct elf_file {
	const uint8_t *data;
	size_t size;
	const char *path;
	bool is64;
	uint64_t phoff;
	unsigned int phnum;
};

static bool file_range_ok(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return range_within(off, len, 0, f->size);
}

static int elf_read_header(struct elf_file *f)
{
	const uint8_t *id = f->data;
	unsigned int phentsize;

	if (id[EI_DATA] != ELFDATA2LSB ||
	    (id[EI_CLASS] != ELFCLASS64 && id[EI_CLASS] != ELFCLASS32)) {
		pr_err("kernel '%s' is not a little-endian ELF32/ELF64 file", f->path);
		return -1;
	}
	f->is64 = id[EI_CLASS] == ELFCLASS64;
	if (f->is64) {
		Elf64_Ehdr eh;

		if (f->size < sizeof(eh))
			goto truncated;
		memcpy(&eh, f->data, sizeof(eh));
		if (eh.e_machine != EM_X86_64 || eh.e_type != ET_EXEC)
			goto not_x86;
		f->phoff = eh.e_phoff;
		f->phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
	} else {
		Elf32_Ehdr eh;

		if (f->size < sizeof(eh))
			goto truncated;
		memcpy(&eh, f->data, sizeof(eh));
		if ((eh.e_machine != EM_386 && eh.e_machine != EM_X86_64) ||
		    eh.e_type != ET_EXEC)
			goto not_x86;
		f->phoff = eh.e_phoff;
		f->phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
	}
	if (phentsize != (f->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) ||
	    !f->phnum ||
	    !file_range_ok(f, f->phoff, (uint64_t)f->phnum * phentsize))
		goto truncated;
	return 0;
truncated:
	pr_err("kernel '%s' is a truncated or corrupt ELF file", f->path);
	return -1;
not_x86:
	pr_err("kernel '%s' is not an x86 executable ELF file", f->path);
	return -1;
}

static void elf_phdr(const struct elf_file *f, unsigned int i, struct phdr *p)
{
	if (f->is64) {
		Elf64_Phdr ph;

		memcpy(&ph, f->data + f->phoff + i * sizeof(ph), sizeof(ph));
		*p = (struct phdr) { ph.p_type, ph.p_offset, ph.p_paddr,
				     ph.p_filesz, ph.p_memsz };
	} else {
		Elf32_Phdr ph;

		memcpy(&ph, f->data + f->phoff + i * sizeof(ph), sizeof(ph));
		*p = (struct phdr) { ph.p_type, ph.p_offset, ph.p_paddr,
				     ph.p_filesz, ph.p_memsz };
	}
}

/* Walk the notes of one PT_NOTE segment for Xen's PHYS32_ENTRY. */
static bool elf_find_pvh_note(const struct elf_file *f, const struct phdr *p,
			      uint32_t *entry)
{
	uint64_t pos = p->offset, end = p->offset + p->filesz;

	while (pos + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;	/* same layout as Elf32_Nhdr */
		uint64_t name, desc, next;

		memcpy(&nh, f->data + pos, sizeof(nh));
		name = pos + sizeof(nh);
		desc = name + ALIGN_UP((uint64_t)nh.n_namesz, 4);
		next = desc + ALIGN_UP((uint64_t)nh.n_descsz, 4);
		if (next > end || next <= pos)
			return false;
		if (nh.n_type == XEN_ELFNOTE_PHYS32_ENTRY && nh.n_namesz == 4 &&
		    !memcmp(f->data + name, "Xen", 4) &&
		    (nh.n_descsz == 4 || nh.n_descsz == 8)) {
			uint64_t v = 0;

			memcpy(&v, f->data + desc, nh.n_descsz);
			if (v >> 32)
				return false;
			*entry = (uint32_t)v;
			return true;
		}
		pos = next;
	}
	return false;
}

static int elf_add_segment(struct elf_file *f, struct elf_kernel *elf,
			   const struct phdr *p)
{
	if (!p->memsz)
		return 0;
	if (elf->nr_segments == ELF_MAX_SEGMENTS) {
		pr_err("kernel '%s' has more than %d loadable segments",
		       f->path, ELF_MAX_SEGMENTS);
		return -1;
	}
	if (p->filesz > p->memsz || !file_range_ok(f, p->offset, p->filesz)) {
		pr_err("kernel '%s': a loadable segment lies outside the file",
		       f->path);
		return -1;
	}
	elf->segments[elf->nr_segments++] = (struct elf_segment) {
		.paddr = p->paddr, .offset = p->offset,
		.filesz = p->filesz, .memsz = p->memsz,
	};
	return 0;
}

/* The entry must be code the file has: not beyond it, not in zeroed memory. */
static bool elf_entry_loaded(const struct elf_kernel *elf)
{
	unsigned int i;

	for (i = 0; i < elf->nr_segments; i++) {
		const struct elf_segment *s = &elf->segments[i];

		if (elf->pvh_entry >= s->paddr &&
		    elf->pvh_entry - s->paddr < s->filesz)
			return true;
	}
	return false;
}

int elf_parse_pvh(const void *data, size_t size, const char *path,
		  struct elf_kernel *elf)
{
	struct elf_file f = { .data = data, .size = size, .path = path };
	bool found = false;
	unsigned int i;

	memset(elf, 0, sizeof(*elf));
	if (!elf_is_elf(data, size) || elf_read_header(&f))
		return -1;
	for (i = 0; i < f.phnum; i++) {
		struct phdr p;

		elf_phdr(&f, i, &p);
		if (p.type == PT_LOAD && elf_add_segment(&f, elf, &p))
			return -1;
		if (p.type == PT_NOTE && !found &&
		    file_range_ok(&f, p.offset, p.filesz))
			found = elf_find_pvh_note(&f, &p, &elf->pvh_entry);
	}
	if (!found) {
		pr_err("kernel '%s' is an ELF file without a PVH entry note (Linux needs CONFIG_PVH=y)",
		       path);
		return -1;
	}
	if (!elf->nr_segments) {
		pr_err("kernel '%s' has no loadable segment", path);
		return -1;
	}
	if (!elf_entry_loaded(elf)) {
		pr_err("kernel '%s': the PVH entry point %#x is not in what a segment loads from the file",
		       path, elf->pvh_entry);
		return -1;
	}
	return 0;
}
