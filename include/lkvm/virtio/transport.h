/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtio transports, as the code that builds the machine sees them.
 * Each wraps one virtio_device that is already made (its queues, features
 * and config space set) in the registers a guest driver finds it by, and
 * attaches itself to it (virtio_device_attach). Which transport a device
 * gets is the builder's choice (core/devices.c, from --virtio-transport);
 * the device core and the devices include nothing of this.
 */
#ifndef LKVM_VIRTIO_TRANSPORT_H
#define LKVM_VIRTIO_TRANSPORT_H

#include <stdbool.h>

struct vm;
struct virtio_device;

/*
 * On PCI bus 0: modern (virtio 1.x, a memory BAR, MSI-X), or legacy
 * (transitional: the 0.9.5 registers in an I/O BAR, INTx). Its IDs and
 * class code follow the device's type.
 */
int virtio_pci_create(struct vm *vm, struct virtio_device *vdev, bool legacy);

/* On the next virtio-mmio slot, which the firmware tables announce. */
int virtio_mmio_create(struct vm *vm, struct virtio_device *vdev);

#endif
