// SPDX-License-Identifier: GPL-2.0
/*
 * Debug-exit port, for CI: a guest writes one byte (any access width; the
 * low byte counts) and lkvm exits with that byte as its status. Unlike
 * QEMU's isa-debug-exit the value is not shifted, so status 0 is a pass.
 */
#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/vm.h"

static void debug_exit_write(struct bus_dev *dev, uint64_t offset,
			     const void *data, unsigned int len)
{
	vm_guest_exit(dev->priv, *(const uint8_t *)data);
}

static const struct bus_ops debug_exit_ops = {
	.write = debug_exit_write,
};

int debug_exit_init(struct vm *vm, struct bus *bus, uint64_t base)
{
	struct bus_dev *dev = vm_zalloc(vm, sizeof(*dev));

	if (!dev)
		return -1;
	*dev = (struct bus_dev) {
		.name = "debug-exit", .ops = &debug_exit_ops, .priv = vm,
	};
	return bus_register(bus, base, 1, dev);
}
