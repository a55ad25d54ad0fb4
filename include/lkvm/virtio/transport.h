/* SPDX-License-Identifier: GPL-2.0 */
/* The virtio transports: how a virtio_device appears to the guest. */
#ifndef LKVM_VIRTIO_TRANSPORT_H
#define LKVM_VIRTIO_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct virtio_transport_ops;
struct virtio_device;
struct virtio_device_ops;

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

/*
 * Where a small device (rng, console, balloon) sits and who serves it:
 * the CLI's choice of transport, notifies through ioeventfds or vCPU
 * exits, and shared I/O threads (NULL: a thread of its own).
 */
struct iothread;
struct iothread_pool;
struct virtio_device_options {
	enum virtio_transport transport;
	bool use_ioeventfd;
	struct iothread_pool *pool;
};

/*
 * A small device's life, in three steps around its own set-up (config,
 * features): virtio_device_setup() makes its I/O thread (*own, named
 * thread_name, unless it uses the pool's, whose threads its queues are
 * then dealt) and initialises vdev; virtio_device_go() puts it on its
 * transport and starts *own; virtio_device_teardown() stops both (pool
 * threads have stopped before) and can be called twice, or after a failed
 * set-up. Each returns -1 (with a message) or 0.
 */
int virtio_device_setup(struct virtio_device *vdev, struct vm *vm,
			const struct virtio_device_ops *ops, void *priv,
			unsigned int nr_queues, uint16_t queue_size,
			const struct virtio_device_options *opts,
			const char *thread_name, struct iothread **own);
int virtio_device_go(struct virtio_device *vdev,
		     const struct virtio_device_options *opts,
		     uint32_t pci_class, struct iothread *own);
void virtio_device_teardown(struct virtio_device *vdev, struct iothread **own,
			    bool *stopped);

/* Put vdev on PCI bus 0: modern, or legacy (I/O BAR, INTx). */
int virtio_pci_create(struct vm *vm, struct virtio_device *vdev, bool legacy,
		      uint32_t class_code);

#endif
