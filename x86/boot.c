// SPDX-License-Identifier: GPL-2.0
/*
 * arch_load_guest() for x86: firmware tables first (the loaders pass the
 * RSDP's address on), then the kernel in whichever format it is, or the
 * firmware image, which owns low memory itself and gets no tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lkvm/arch.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/acpi.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"
#include "lkvm/x86/mptable.h"

static int x86_build_tables(struct vm *vm, uint64_t *rsdp)
{
	struct acpi_config acpi = {
		.nr_cpus = vm->nr_vcpus,
		.pvpanic = 1,
		.nr_mmio_devs = vm->nr_mmio_devs,
	};
	void *acpi_buf = guest_mem_ptr(&vm->mem, X86_ACPI_ADDR, X86_ACPI_SIZE);
	void *mp_buf = guest_mem_ptr(&vm->mem, X86_MPTABLE_ADDR, X86_MPTABLE_SIZE);

	unsigned int i;

	for (i = 0; i < vm->nr_mmio_devs && i < ACPI_MAX_MMIO_DEVS; i++)
		acpi.mmio_devs[i] = (struct acpi_mmio_dev) {
			.base = vm->mmio_devs[i].base,
			.size = vm->mmio_devs[i].size,
			.gsi = vm->mmio_devs[i].gsi,
		};
	if (!acpi_buf || !mp_buf) {
		pr_err("guest RAM too small for the firmware tables");
		return -1;
	}
	if (acpi_build_tables(acpi_buf, X86_ACPI_SIZE, X86_ACPI_ADDR, &acpi,
			      rsdp)) {
		pr_err("ACPI tables do not fit in %llu KiB",
		       (unsigned long long)(X86_ACPI_SIZE / KiB));
		return -1;
	}
	if (mptable_build(mp_buf, X86_MPTABLE_SIZE, X86_MPTABLE_ADDR,
			  vm->nr_vcpus) < 0) {
		pr_err("MP table does not fit in %llu KiB",
		       (unsigned long long)(X86_MPTABLE_SIZE / KiB));
		return -1;
	}
	return 0;
}

/*
 * --mmio-cmdline: also name the virtio-mmio devices on the kernel command
 * line (virtio_mmio.device=SIZE@BASE:GSI), for kernels built with
 * CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES but without ACPI. Only on request: a
 * kernel that has both would see every device twice.
 */
static char *x86_kernel_params(struct vm *vm)
{
	const struct vm_config *cfg = vm->cfg;
	const char *base = cfg->params ? cfg->params : arch_default_params;
	size_t len = strlen(base) + 1, used;
	unsigned int i;
	char *params;

	if (cfg->mmio_cmdline)
		len += vm->nr_mmio_devs * 64;
	params = malloc(len);
	if (!params) {
		pr_err("out of memory");
		return NULL;
	}
	used = snprintf(params, len, "%s", base);
	for (i = 0; cfg->mmio_cmdline && i < vm->nr_mmio_devs; i++)
		used += snprintf(params + used, len - used,
				 " virtio_mmio.device=%uK@%#llx:%u",
				 vm->mmio_devs[i].size / 1024,
				 (unsigned long long)vm->mmio_devs[i].base,
				 vm->mmio_devs[i].gsi);
	return params;
}

static int x86_kernel_open(struct arch_guest *g,
			   const struct vm_config *cfg, uint64_t ram_below_4g)
{
	const char *params = cfg->params ? cfg->params : arch_default_params;

	if (map_file(cfg->kernel, "kernel", &g->image_file))
		return -1;
	g->image = g->image_file.data;
	g->image_size = g->image_file.size;
	if (cfg->initrd) {
		if (map_file(cfg->initrd, "initrd", &g->initrd_file))
			return -1;
		g->initrd = g->initrd_file.data;
		g->initrd_size = g->initrd_file.size;
	}
	if (elf_is_elf(g->image, g->image_size))
		return x86_check_pvh(g, ram_below_4g, strlen(params));
	return x86_check_bzimage(g, ram_below_4g, strlen(params));
}

static int x86_firmware_open(struct arch_guest *g, const char *path,
			     uint64_t ram_below_4g)
{
	g->mode = X86_BOOT_FIRMWARE;
	if (map_file(path, "firmware", &g->image_file))
		return -1;
	g->image = g->image_file.data;
	g->image_size = g->image_file.size;
	return x86_check_firmware(g, ram_below_4g);
}

struct arch_guest *arch_guest_open(const struct vm_config *cfg)
{
	struct arch_guest *g = calloc(1, sizeof(*g));
	uint64_t below_4g = MIN(cfg->mem_mib * MiB, X86_MMIO_HOLE_START);
	int ret;

	if (!g) {
		pr_err("out of memory");
		return NULL;
	}
	g->path = cfg->firmware ? cfg->firmware : cfg->kernel;
	if (cfg->irqchip != VM_IRQCHIP_DEFAULT || cfg->dump_dtb) {
		pr_err(cfg->dump_dtb ?
		       "--dump-dtb: an x86 VM is described by ACPI tables, not a device tree" :
		       "--irqchip chooses arm64's GIC; an x86 VM has the PC's PIC and IOAPIC");
		free(g);
		return NULL;
	}
	if (cfg->firmware)
		ret = x86_firmware_open(g, cfg->firmware, below_4g);
	else
		ret = x86_kernel_open(g, cfg, below_4g);
	if (ret) {
		arch_guest_close(g);
		return NULL;
	}
	return g;
}

void arch_guest_close(struct arch_guest *g)
{
	if (!g)
		return;
	unmap_file(&g->image_file);
	unmap_file(&g->initrd_file);
	free(g);
}

static int x86_load_kernel(struct vm *vm, const struct arch_guest *g,
			   uint64_t rsdp)
{
	char *params = x86_kernel_params(vm);
	int ret;

	if (!params)
		return -1;
	if (g->mode == X86_BOOT_PVH)
		ret = x86_load_pvh(vm, g, params, rsdp);
	else
		ret = x86_load_bzimage(vm, g, params, rsdp);
	free(params);
	return ret;
}

int arch_load_guest(struct vm *vm, const struct arch_guest *g)
{
	uint64_t rsdp;

	if (g->mode == X86_BOOT_FIRMWARE)
		return x86_load_firmware(vm, g);
	if (x86_build_tables(vm, &rsdp))
		return -1;
	return x86_load_kernel(vm, g, rsdp);
}
