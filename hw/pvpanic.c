// SPDX-License-Identifier: GPL-2.0
/*
 * pvpanic I/O port (ACPI HID QEMU0001, Linux's pvpanic-mmio driver): the
 * guest reads the events we support and writes PANICKED when it panics,
 * which ends the VM with EXIT_GUEST_PANIC.
 */
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/vm.h"

#define PVPANIC_PANICKED	0x01
#define PVPANIC_CRASH_LOADED	0x02

static void pvpanic_read(struct bus_dev *dev, uint64_t offset, void *data,
			 unsigned int len)
{
	memset(data, 0, len);
	*(uint8_t *)data = PVPANIC_PANICKED | PVPANIC_CRASH_LOADED;
}

static void pvpanic_write(struct bus_dev *dev, uint64_t offset,
			  const void *data, unsigned int len)
{
	uint8_t events = *(const uint8_t *)data;

	if (events & PVPANIC_PANICKED)
		vm_request_exit(dev->priv, EXIT_GUEST_PANIC, "guest panicked");
	else if (events & PVPANIC_CRASH_LOADED)
		vm_request_exit(dev->priv, EXIT_GUEST_PANIC,
				"guest panicked (crash kernel loaded)");
}

static const struct bus_ops pvpanic_ops = {
	.read = pvpanic_read,
	.write = pvpanic_write,
};

int pvpanic_init(struct vm *vm, uint16_t port)
{
	struct bus_dev *dev = vm_zalloc(vm, sizeof(*dev));

	if (!dev)
		return -1;
	*dev = (struct bus_dev) {
		.name = "pvpanic", .ops = &pvpanic_ops, .priv = vm,
	};
	return bus_register(&vm->pio, port, 1, dev);
}
