/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio-console (--console virtio): the guest's hvc0 on lkvm's terminal,
 * one port, no multiport. Output goes to the same console queue as the
 * UART's; typed input goes to this device instead of the UART.
 */
#ifndef LKVM_VIRTIO_CONSOLE_H
#define LKVM_VIRTIO_CONSOLE_H

#include "lkvm/virtio/device.h"

struct vm;
struct virtio_console;

struct virtio_console *virtio_console_create(struct vm *vm,
					     const struct virtio_device_options *opts);
void virtio_console_destroy(struct virtio_console *con);
struct virtio_device *virtio_console_device(struct virtio_console *con);

#endif
