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

static int x86_load_kernel(struct vm *vm, uint64_t rsdp)
{
	const struct vm_config *cfg = vm->cfg;
	void *kernel = NULL, *initrd = NULL;
	size_t kernel_size, initrd_size = 0;
	char *params = x86_kernel_params(vm);
	int ret = -1;

	if (!params)
		return -1;

	if (read_file(cfg->kernel, "kernel", &kernel, &kernel_size))
		return -1;
	if (cfg->initrd &&
	    read_file(cfg->initrd, "initrd", &initrd, &initrd_size))
		goto out;
	if (elf_is_elf(kernel, kernel_size))
		ret = x86_load_pvh(vm, kernel, kernel_size, params, initrd,
				   initrd_size, rsdp);
	else
		ret = x86_load_bzimage(vm, kernel, kernel_size, params, initrd,
				       initrd_size, rsdp);
out:
	free(params);
	free(initrd);
	free(kernel);
	return ret;
}

int arch_load_guest(struct vm *vm)
{
	uint64_t rsdp;

	if (vm->cfg->firmware)
		return x86_load_firmware(vm, vm->cfg->firmware);
	if (x86_build_tables(vm, &rsdp))
		return -1;
	return x86_load_kernel(vm, rsdp);
}
