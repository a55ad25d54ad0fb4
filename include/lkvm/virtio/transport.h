/* SPDX-License-Identifier: GPL-2.0 */
/* The virtio transports: how a virtio_device appears to the guest. */
#ifndef LKVM_VIRTIO_TRANSPORT_H
#define LKVM_VIRTIO_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct virtio_transport_ops;
struct virtio_device;

enum virtio_transport {
	VIRTIO_TRANSPORT_PCI,		/* modern virtio-pci (default) */
	VIRTIO_TRANSPORT_PCI_LEGACY,	/* transitional, I/O BAR */
	VIRTIO_TRANSPORT_MMIO,		/* virtio-mmio version 2 */
};

/* Put vdev on a virtio-mmio slot the firmware tables will announce. */
int virtio_mmio_create(struct vm *vm, struct virtio_device *vdev);

/*
 * Put vdev on the chosen transport (pci_class: its PCI class code), or on
 * `custom` with custom_priv when given (benchmarks drive a device from a
 * host thread through a transport of their own).
 */
int virtio_transport_attach(struct vm *vm, struct virtio_device *vdev,
			    enum virtio_transport transport, uint32_t pci_class,
			    const struct virtio_transport_ops *custom,
			    void *custom_priv);

/* Put vdev on PCI bus 0: modern, or legacy (I/O BAR, INTx). */
int virtio_pci_create(struct vm *vm, struct virtio_device *vdev, bool legacy,
		      uint32_t class_code);

#endif
