// SPDX-License-Identifier: GPL-2.0
/*
 * Port 0x80, the POST code port. Linux writes to it as an I/O delay, so it
 * must be cheap and silent; firmware writes progress codes, which we keep
 * so that a stuck guest can be diagnosed.
 */
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/vm.h"

static void post_read(struct bus_dev *dev, uint64_t offset, void *data,
		      unsigned int len)
{
	uint8_t *last = dev->priv;

	memset(data, 0, len);
	*(uint8_t *)data = __atomic_load_n(last, __ATOMIC_RELAXED);
}

static void post_write(struct bus_dev *dev, uint64_t offset, const void *data,
		       unsigned int len)
{
	__atomic_store_n((uint8_t *)dev->priv, *(const uint8_t *)data,
			 __ATOMIC_RELAXED);
}

static const struct bus_ops post_ops = {
	.read = post_read,
	.write = post_write,
};

int post_init(struct vm *vm, uint16_t port)
{
	struct {
		struct bus_dev dev;
		uint8_t last_code;
	} *post = vm_zalloc(vm, sizeof(*post));

	if (!post)
		return -1;
	post->dev = (struct bus_dev) {
		.name = "post", .ops = &post_ops, .priv = &post->last_code,
	};
	return bus_register(&vm->pio, port, 1, &post->dev);
}
