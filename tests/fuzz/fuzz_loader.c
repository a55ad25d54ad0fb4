// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness for the x86 kernel loaders (make fuzz-loader): the
 * input's tail is a kernel image (bzImage, or ELF with a PVH note), its
 * head picks the guest's RAM, vCPUs and virtio-mmio slots, the command
 * line and an initrd size. The image and initrd go through files (memfds)
 * into arch_guest_open() and arch_load_guest(), as `lkvm run -k -i` does,
 * on a fake VM whose RAM (1-64 MiB, MAP_NORESERVE) is made per input.
 *
 * Either the image is refused with exactly one message, or it loads
 * silently and then: everything lies inside guest RAM where the boot
 * protocol says, the bytes in guest memory are the file's, the initrd is
 * above the kernel and below its limits, and the entry point is inside
 * what was loaded from the file. map_file() puts a guard page after the
 * file's last page, so a parser reading past the end faults.
 */
#include <asm/bootparam.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/pvh.h"
#include "../unit/fake_vm.h"
#include "fuzz_common.h"

#define CHECK(cond)	do { if (!(cond)) __builtin_trap(); } while (0)

#define INITRD_MAX	(4 * MiB + 64)
#define CMDLINE_LONG	(X86_CMDLINE_MAX + 8)
#define BZ_ENTRY	(X86_KERNEL_ADDR + 0x200)

static int kernel_fd = -1, initrd_fd = -1;
static char kernel_path[32], initrd_path[32];
static uint8_t *pattern;	/* the initrd's bytes */
static char *cmdline;		/* CMDLINE_LONG + 1 */
static char log_buf[65536];

static void setup_once(void)
{
	size_t i;

	if (pattern)
		return;
	kernel_fd = memfd_create("kernel", MFD_CLOEXEC);
	initrd_fd = memfd_create("initrd", MFD_CLOEXEC);
	CHECK(kernel_fd >= 0 && initrd_fd >= 0);
	snprintf(kernel_path, sizeof(kernel_path), "/proc/self/fd/%d",
		 kernel_fd);
	snprintf(initrd_path, sizeof(initrd_path), "/proc/self/fd/%d",
		 initrd_fd);
	pattern = malloc(INITRD_MAX);
	cmdline = malloc(CMDLINE_LONG + 1);
	CHECK(pattern && cmdline);
	for (i = 0; i < INITRD_MAX; i++)
		pattern[i] = i * 31 + i / 4096;
}

static void put_file(int fd, const void *data, size_t size)
{
	CHECK(!ftruncate(fd, 0));
	CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
}

/* NULL (the default line), one from the input, or a long one. */
static const char *pick_cmdline(struct input *in, unsigned int mode)
{
	size_t len, i;

	switch (mode) {
	case 0:
		return NULL;
	case 1:
		len = take8(in);
		for (i = 0; i < len; i++)
			cmdline[i] = take8(in) | 1;	/* no NUL inside */
		break;
	case 2:
		/* around every limit: 2 KiB, 64 KiB and just past it */
		len = take16(in) + take8(in) % 8;
		memset(cmdline, 'x', len);
		break;
	default:
		len = 0;
	}
	cmdline[len] = '\0';
	return cmdline;
}

/* ---- what a successful load must look like ---- */

static bool guest_has(struct vm *vm, uint64_t gpa, const void *data,
		      uint64_t len)
{
	const void *p = guest_mem_ptr(&vm->mem, gpa, len);

	return p && !memcmp(p, data, len);
}

static bool guest_zero(struct vm *vm, uint64_t gpa, uint64_t len)
{
	const uint8_t *p = guest_mem_ptr(&vm->mem, gpa, len);
	uint64_t i;

	if (!p)
		return false;
	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * The line as given, NUL-terminated within the limit; --mmio-cmdline may
 * have added the devices after it. Returns its length.
 */
static size_t check_cmdline(struct vm *vm, const char *params, bool exact)
{
	const char *p = guest_mem_ptr(&vm->mem, X86_CMDLINE_ADDR,
				      X86_CMDLINE_MAX);
	size_t len, base = strlen(params);

	CHECK(p);
	len = strnlen(p, X86_CMDLINE_MAX);
	CHECK(len < X86_CMDLINE_MAX);
	CHECK(len >= base && !memcmp(p, params, base));
	CHECK(!exact || len == base);
	return len;
}

/* Page aligned, above the kernel, below RAM's end and the limit. */
static void check_initrd(struct vm *vm, const struct arch_guest *g,
			 uint64_t kernel_end, uint64_t limit)
{
	uint64_t a = g->initrd_addr, end = a + g->initrd_size;

	CHECK(!(a % 4096));
	CHECK(a >= kernel_end && end >= a);
	CHECK(end <= vm->arch->ram_below_4g && end <= limit + 1);
	CHECK(guest_has(vm, a, pattern, g->initrd_size));
}

static void check_bzimage(struct vm *vm, const struct arch_guest *g,
			  const char *params, bool exact)
{
	const struct bzimage *bz = &g->bz;
	const struct boot_params *zp;
	uint64_t kernel_end = X86_KERNEL_ADDR + bz->init_size;

	CHECK(vm->arch->mode == X86_BOOT_LINUX64);
	CHECK(vm->arch->boot_info == X86_ZERO_PAGE);
	CHECK(vm->arch->entry == BZ_ENTRY);
	/* the 64-bit entry is in the protected-mode code the file has */
	CHECK(vm->arch->entry < X86_KERNEL_ADDR + bz->kernel_size);
	CHECK(bz->kernel == (const uint8_t *)g->image + bz->setup_size);
	CHECK(bz->setup_size + bz->kernel_size == g->image_size);
	CHECK(bz->kernel_size <= bz->init_size);
	CHECK(kernel_end <= vm->arch->ram_below_4g);
	CHECK(guest_has(vm, X86_KERNEL_ADDR, bz->kernel, bz->kernel_size));
	CHECK(check_cmdline(vm, params, exact) <= bz->cmdline_size);
	zp = guest_mem_ptr(&vm->mem, X86_ZERO_PAGE, sizeof(*zp));
	CHECK(zp);
	CHECK(zp->hdr.cmd_line_ptr == X86_CMDLINE_ADDR);
	CHECK(zp->e820_entries && zp->e820_entries <= X86_MAX_E820);
	/* without one, the file's own header fields stand (as in QEMU) */
	if (!g->initrd)
		return;
	CHECK(zp->hdr.ramdisk_image == g->initrd_addr);
	CHECK(zp->hdr.ramdisk_size == g->initrd_size);
	check_initrd(vm, g, kernel_end, bz->initrd_addr_max);
}

/* Does a later segment write over [from, to)? Then its bytes are its. */
static bool overwritten(const struct elf_kernel *elf, unsigned int i)
{
	const struct elf_segment *s = &elf->segments[i];
	unsigned int j;

	for (j = i + 1; j < elf->nr_segments; j++) {
		const struct elf_segment *t = &elf->segments[j];

		if (t->paddr < s->paddr + s->memsz &&
		    s->paddr < t->paddr + t->memsz)
			return true;
	}
	return false;
}

static void check_pvh(struct vm *vm, const struct arch_guest *g,
		      const char *params, bool exact)
{
	const struct elf_kernel *elf = &g->elf;
	const uint8_t *image = g->image;
	struct hvm_start_info si;
	struct hvm_modlist_entry mod;
	uint64_t kernel_end = 0;
	bool entry_loaded = false;
	unsigned int i;

	CHECK(vm->arch->mode == X86_BOOT_PVH);
	CHECK(vm->arch->boot_info == X86_PVH_START_INFO);
	CHECK(vm->arch->entry == elf->pvh_entry);
	CHECK(elf->nr_segments && elf->nr_segments <= ELF_MAX_SEGMENTS);
	for (i = 0; i < elf->nr_segments; i++) {
		const struct elf_segment *s = &elf->segments[i];

		CHECK(s->paddr >= X86_BIOS_END && s->filesz <= s->memsz);
		CHECK(s->paddr + s->memsz <= vm->arch->ram_below_4g);
		CHECK(s->offset + s->filesz <= g->image_size);
		kernel_end = MAX(kernel_end, s->paddr + s->memsz);
		if (elf->pvh_entry >= s->paddr &&
		    elf->pvh_entry < s->paddr + s->filesz)
			entry_loaded = true;
		if (overwritten(elf, i))
			continue;
		CHECK(guest_has(vm, s->paddr, image + s->offset, s->filesz));
		CHECK(guest_zero(vm, s->paddr + s->filesz,
				 s->memsz - s->filesz));
	}
	CHECK(entry_loaded);
	check_cmdline(vm, params, exact);
	CHECK(guest_mem_read(&vm->mem, X86_PVH_START_INFO, &si, sizeof(si)));
	CHECK(si.magic == HVM_START_MAGIC && si.version == 1);
	CHECK(si.cmdline_paddr == X86_CMDLINE_ADDR);
	CHECK(si.memmap_entries && si.memmap_entries <= X86_MAX_E820);
	CHECK(si.nr_modules == (g->initrd ? 1 : 0));
	if (!g->initrd)
		return;
	CHECK(guest_mem_read(&vm->mem, si.modlist_paddr, &mod, sizeof(mod)));
	CHECK(mod.paddr == g->initrd_addr && mod.size == g->initrd_size);
	check_initrd(vm, g, kernel_end, X86_4G - 1);
}

/* ---- one VM per input ---- */

static unsigned int count_lines(size_t len)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		n += log_buf[i] == '\n';
	return n;
}

static void vm_setup(struct fake_vm *f, uint64_t mem_mib, uint8_t b)
{
	struct arch_vm *arch;
	unsigned int i, nr_mmio = (b >> 3) % 10;

	CHECK(!fake_vm_init(f, mem_mib, 1 + b % 8));
	arch = vm_zalloc(&f->vm, sizeof(*arch));
	CHECK(arch);
	arch->ram_below_4g = MIN(mem_mib * MiB, X86_MMIO_HOLE_START);
	f->vm.arch = arch;
	for (i = 0; i < nr_mmio; i++) {
		struct vm_mmio_dev *d = &f->vm.mmio_devs[f->vm.nr_mmio_devs];

		if (arch_mmio_dev_slot(i, &d->base, &d->size, &d->gsi))
			break;
		f->vm.nr_mmio_devs++;
	}
}

/* The guest in; what the loaders say of it, and what they left. */
static unsigned int load(struct fake_vm *f, struct input *in, uint8_t flags)
{
	struct vm_config *cfg = &f->cfg;
	const char *params = cfg->params ? cfg->params : arch_default_params;
	bool exact = !cfg->mmio_cmdline || !f->vm.nr_mmio_devs;
	struct arch_guest *g;
	size_t initrd_size;
	int ret;

	if (flags & 1) {
		initrd_size = (size_t)take16(in) * 64 + take8(in) % 64;
		put_file(initrd_fd, pattern, initrd_size);
		cfg->initrd = initrd_path;
	}
	put_file(kernel_fd, in->p, in->n);
	cfg->kernel = kernel_path;
	g = arch_guest_open(cfg);
	if (!g)
		return 1;
	ret = arch_load_guest(&f->vm, g);
	if (!ret && g->mode == X86_BOOT_PVH)
		check_pvh(&f->vm, g, params, exact);
	else if (!ret)
		check_bzimage(&f->vm, g, params, exact);
	arch_guest_close(g);
	return ret ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .p = data, .n = size };
	uint8_t flags = take8(&in), mem = take8(&in), cpus = take8(&in);
	FILE *saved_stderr = stderr, *log;
	static struct fake_vm f;
	unsigned int errors;

	setup_once();
	vm_setup(&f, 1 + mem % 64, cpus);
	f.cfg.params = pick_cmdline(&in, (flags >> 1) & 3);
	f.cfg.mmio_cmdline = flags & 8;
	/* lkvm's messages (fprintf(stderr)) are counted, not printed. */
	log = fmemopen(log_buf, sizeof(log_buf), "w");
	CHECK(log);
	stderr = log;
	errors = load(&f, &in, flags);
	stderr = saved_stderr;
	fflush(log);
	/* a refusal says why, once; a load says nothing */
	CHECK(count_lines(ftell(log)) == errors);
	fclose(log);
	fake_vm_destroy(&f);
	return 0;
}
