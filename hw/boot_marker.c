// SPDX-License-Identifier: GPL-2.0
/*
 * Boot-marker port: the guest's init writes any byte here as it starts,
 * so that the boot profile can say when the kernel handed over to user
 * space whatever the kernel's log level. Write-only (reads see all-ones,
 * as the bus gives a device without a read).
 */
#include "lkvm/boot_profile.h"
#include "lkvm/bus.h"
#include "lkvm/vm.h"

static void boot_marker_write(struct bus_dev *dev, uint64_t offset,
			      const void *data, unsigned int len)
{
	boot_mark(dev->priv, BOOT_INIT_START);
}

static const struct bus_ops boot_marker_ops = {
	.write = boot_marker_write,
};

int boot_marker_init(struct vm *vm, struct bus *bus, uint64_t base)
{
	struct bus_dev *dev = vm_zalloc(vm, sizeof(*dev));

	if (!dev)
		return -1;
	*dev = (struct bus_dev) {
		.name = "boot-marker", .ops = &boot_marker_ops, .priv = vm,
	};
	return bus_register(bus, base, 1, dev);
}
