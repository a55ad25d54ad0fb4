// SPDX-License-Identifier: GPL-2.0
/*
 * Raw firmware images (-f), as QEMU's -bios: the image is mapped so that it
 * ends at 4 GiB, read-only where KVM allows, and copied so that it also
 * ends at 1 MiB, where real-mode code at the reset vector (F000:FFF0)
 * finds it after the first far jump. The boot vCPU keeps KVM's reset state.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "lkvm/util.h"
#include "lkvm/vm.h"
#include "lkvm/x86/boot.h"
#include "lkvm/x86/layout.h"

#define FIRMWARE_SLOT	8	/* after the RAM slots */

static int firmware_map_high(struct vm *vm, const void *image, size_t size)
{
	struct kvm_userspace_memory_region region = {
		.slot = FIRMWARE_SLOT,
		.guest_phys_addr = X86_4G - size,
		.memory_size = size,
	};
	void *rom;

	rom = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rom == MAP_FAILED) {
		pr_err("cannot map the firmware: %s", strerror(errno));
		return -1;
	}
	memcpy(rom, image, size);
	region.userspace_addr = (uintptr_t)rom;
	/* Writes to ROM then exit as MMIO and are dropped by the bus. */
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_READONLY_MEM) > 0)
		region.flags = KVM_MEM_READONLY;
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		pr_err("cannot map the firmware at 4 GiB: %s", strerror(errno));
		munmap(rom, size);
		return -1;
	}
	/* The mapping stays until the process exits, like guest RAM. */
	return 0;
}

int x86_check_firmware(const struct arch_guest *g, uint64_t ram_below_4g)
{
	if (!g->image_size || g->image_size > X86_FIRMWARE_MAX ||
	    g->image_size % 4096) {
		pr_err("firmware '%s' is %zu bytes; it must be a multiple of 4 KiB, at most %llu KiB",
		       g->path, g->image_size,
		       (unsigned long long)(X86_FIRMWARE_MAX / KiB));
		return -1;
	}
	if (ram_below_4g < X86_BIOS_END) {
		pr_err("guest RAM too small for the firmware");
		return -1;
	}
	return 0;
}

int x86_load_firmware(struct vm *vm, const struct arch_guest *g)
{
	if (!guest_mem_load(&vm->mem, X86_BIOS_END - g->image_size, g->image,
			    g->image_size)) {
		pr_err("guest RAM too small for the firmware");
		return -1;
	}
	if (firmware_map_high(vm, g->image, g->image_size))
		return -1;
	vm->arch->mode = X86_BOOT_FIRMWARE;
	return 0;
}
