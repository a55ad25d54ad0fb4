/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --virtio-transport: which transport the machine builder wraps every
 * virtio device in. Only the user's choice, for the configuration (vm.h)
 * and the arch's default (arch.h); the transports themselves are
 * lkvm/virtio/transport.h.
 */
#ifndef LKVM_VIRTIO_TRANSPORT_KIND_H
#define LKVM_VIRTIO_TRANSPORT_KIND_H

enum virtio_transport_kind {
	VIRTIO_TRANSPORT_PCI,		/* modern virtio-pci */
	VIRTIO_TRANSPORT_PCI_LEGACY,	/* transitional, I/O BAR */
	VIRTIO_TRANSPORT_MMIO,		/* virtio-mmio version 2 */
};

#endif
