/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The virtio device model, independent of the transport: feature
 * negotiation, device status and reset, the queues' configuration, config
 * space, and the path from a guest kick (an ioeventfd served on the
 * device's I/O thread, or a notify exit with --no-ioeventfd) to the
 * device's queue handler and back to an interrupt.
 *
 * A device (blk, net, ...) fills a virtio_device_ops. A transport (mmio,
 * pci, or a test's own) wraps a device that is already made: it fills a
 * virtio_transport, attaches it (virtio_device_attach), and turns the
 * driver's register accesses into the calls below. The core calls back
 * only through the virtio_transport_ops it was given: it knows no
 * transport, and which one a device gets is the machine builder's choice.
 */
#ifndef LKVM_VIRTIO_DEVICE_H
#define LKVM_VIRTIO_DEVICE_H

#include <linux/virtio_config.h>
#define VIRTIO_RING_NO_LEGACY	/* its struct virtq is not ours */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "lkvm/iothread.h"
#include "lkvm/virtio/poll.h"
#include "lkvm/virtio/ring.h"

#define VIRTIO_MAX_QUEUES	64

struct vm;
struct virtio_device;

struct virtio_queue {
	struct virtio_device *vdev;
	uint16_t index;
	uint16_t max_size;

	/* What the driver programmed; guarded by vdev->lock. */
	uint16_t size;
	bool enabled;
	uint64_t desc_gpa;
	uint64_t avail_gpa;
	uint64_t used_gpa;
	uint16_t msix_vector;

	/*
	 * The live ring, served by the device's I/O thread (or a vCPU with
	 * --no-ioeventfd); `lock` guards it against the serving thread and a
	 * concurrent reset.
	 */
	pthread_mutex_t lock;
	bool live;
	struct virtq ring;
	/*
	 * The ioeventfd: made, and added to the queue's I/O thread, when
	 * the queue first starts; bound to the notify address while it is
	 * live; closed only once the threads have stopped, so that an epoll
	 * event the thread already holds never reads another file's
	 * descriptor.
	 */
	int kick_fd;
	bool kick_watched;
	struct io_source kick;
	/* Serves the kicks: the device's, unless the device gives each
	 * queue (pair) its own. Set before the driver can start the queue. */
	struct iothread *iothread;
	struct virtio_queue_poll poll;	/* under lock */

	/* Counters, read at exit. */
	uint64_t kicks_eventfd;		/* notifies that never left the kernel */
	uint64_t kicks_exit;		/* notifies that exited to a vCPU thread */
	uint64_t interrupts;
	uint64_t requests;
};

struct virtio_device_ops {
	const char *name;		/* "blk", ... */
	uint32_t device_id;		/* VIRTIO_ID_* */
	/* Serve the queue, under q->lock: virtio_queue_serve() with a handler. */
	void (*queue_kick)(struct virtio_device *vdev, struct virtio_queue *q);
	/* Optional: a config write landed in vdev->config. */
	void (*config_written)(struct virtio_device *vdev, unsigned int offset,
			       unsigned int len);
	/*
	 * Optional: q stops (a reset, the queue disabled, the VM's end),
	 * under q->lock. Every request the device still has in flight on q
	 * must be finished or abandoned by the time it returns: nothing may
	 * be pushed to the ring after it.
	 */
	void (*queue_stop)(struct virtio_device *vdev, struct virtio_queue *q);
	/* Optional: the driver reset the device. */
	void (*reset)(struct virtio_device *vdev);
	/* Optional: DRIVER_OK, features final; called under vdev->lock. */
	void (*driver_ok)(struct virtio_device *vdev);
	/* Optional: the device's own --stats fields, "key":value,... */
	void (*write_stats)(struct virtio_device *vdev, FILE *f);
};

struct virtio_transport;

struct virtio_transport_ops {
	/* Bind q->kick_fd to the queue's notify address (KVM_IOEVENTFD). */
	int (*kick_attach)(struct virtio_transport *t, struct virtio_queue *q);
	void (*kick_detach)(struct virtio_transport *t, struct virtio_queue *q);
	/* Interrupt the driver: used buffers in q, or a config change. */
	void (*signal_queue)(struct virtio_transport *t, struct virtio_queue *q);
	void (*signal_config)(struct virtio_transport *t);
};

/*
 * What a device meets its driver through. A transport embeds it in its own
 * state (container_of() gets that back in the ops); it lives as long as
 * the device.
 */
struct virtio_transport {
	const struct virtio_transport_ops *ops;
};

/*
 * One device. Register state (status, features, queue configuration) is
 * written by vCPU threads through the transport under `lock`; the queues
 * have their own locks, so a kick never waits for a register access of
 * another queue. The config space and its generation have `config_lock`,
 * taken after `lock` and the queue locks: a device changes its config
 * while serving a queue (under that queue's lock) and at reset (under
 * `lock`). config_written runs under it and may take only the device's
 * own innermost locks (not config_lock again: no virtio_config_* there).
 */
struct virtio_device {
	struct vm *vm;
	const struct virtio_device_ops *ops;
	void *priv;
	struct virtio_transport *transport;	/* set once, before the VM runs */
	struct iothread *iothread;
	bool use_ioeventfd;
	struct virtio_poll_config poll_cfg;	/* fixed once created */

	pthread_mutex_t lock;
	uint64_t host_features;		/* offered */
	uint64_t guest_features;	/* accepted by the driver */
	uint8_t status;
	pthread_mutex_t config_lock;
	uint32_t config_generation;	/* also read atomically */
	uint8_t *config;		/* device-specific config space */
	uint32_t config_size;
	bool driver_seen;		/* the driver ever set DRIVER */
	unsigned int times_broken;	/* NEEDS_RESET raised (atomic) */

	unsigned int nr_queues;
	struct virtio_queue queues[VIRTIO_MAX_QUEUES];
};

/* Set up vdev; the device then fills host_features and config. */
int virtio_device_init(struct virtio_device *vdev, struct vm *vm,
		       const struct virtio_device_ops *ops, void *priv,
		       unsigned int nr_queues, uint16_t queue_size,
		       struct iothread *iothread, bool use_ioeventfd);

/*
 * Put the device on its transport; the transport calls it once it has made
 * its registers, before any vCPU runs.
 */
void virtio_device_attach(struct virtio_device *vdev,
			  struct virtio_transport *t);

/*
 * Where a small device (rng, console, balloon, 9p) is served: notifies
 * through ioeventfds or vCPU exits, and shared I/O threads (NULL: a thread
 * of its own).
 */
struct virtio_device_options {
	bool use_ioeventfd;
	struct iothread_pool *pool;
};

/*
 * A small device's life, in three steps around its own set-up (config,
 * features): virtio_device_setup() makes its I/O thread (*own, named
 * thread_name, unless it uses the pool's, whose threads its queues are
 * then dealt) and initialises vdev; virtio_device_go() starts *own (the
 * machine builder puts the device on a transport after);
 * virtio_device_teardown() stops both (pool threads have stopped before)
 * and can be called twice, or after a failed set-up. Each returns -1
 * (with a message) or 0.
 */
int virtio_device_setup(struct virtio_device *vdev, struct vm *vm,
			const struct virtio_device_ops *ops, void *priv,
			unsigned int nr_queues, uint16_t queue_size,
			const struct virtio_device_options *opts,
			const char *thread_name, struct iothread **own);
int virtio_device_go(struct iothread *own);
void virtio_device_teardown(struct virtio_device *vdev, struct iothread **own,
			    bool *stopped);

/* Transport entry points, called with vdev->lock NOT held. */
uint8_t virtio_get_status(struct virtio_device *vdev);
void virtio_set_status(struct virtio_device *vdev, uint8_t status);
uint32_t virtio_get_host_features(struct virtio_device *vdev, unsigned int word);
void virtio_set_guest_features(struct virtio_device *vdev, unsigned int word,
			       uint32_t value);
void virtio_config_read(struct virtio_device *vdev, unsigned int offset,
			void *data, unsigned int len);
void virtio_config_write(struct virtio_device *vdev, unsigned int offset,
			 const void *data, unsigned int len);
uint32_t virtio_config_generation(struct virtio_device *vdev);
/*
 * Device side: change config bytes the driver reads; the generation moves
 * if they differ, so that a driver reading across the change reads again.
 */
bool virtio_config_update(struct virtio_device *vdev, unsigned int offset,
			  const void *data, unsigned int len);
/* The same, and a config-change interrupt for a driver that is running. */
void virtio_config_changed(struct virtio_device *vdev, unsigned int offset,
			   const void *data, unsigned int len);
/* The driver (un)readied a queue; caller holds vdev->lock. */
void virtio_queue_set_enabled(struct virtio_device *vdev,
			      struct virtio_queue *q, bool enable);
/*
 * The queue registers every modern transport has, where they sit in its
 * register file: a ring address's high half is 4 bytes after its low one.
 * virtio/queue_regs.c keeps their rules (see there) for all transports.
 */
struct virtio_queue_regs {
	unsigned int size;
	unsigned int desc;
	unsigned int driver;		/* the available ring */
	unsigned int device;		/* the used ring */
};

/* Queue `index` (the driver's selector), or NULL past the last. */
struct virtio_queue *virtio_queue_at(struct virtio_device *vdev,
				     unsigned int index);
/* One of those registers (0 for another offset, or no queue). */
uint32_t virtio_queue_reg_read(const struct virtio_queue_regs *regs,
			       struct virtio_queue *q, unsigned int off);
/* A driver's write to one of them; caller holds vdev->lock. */
void virtio_queue_reg_write(const struct virtio_queue_regs *regs,
			    struct virtio_queue *q, unsigned int off,
			    uint32_t val);
/* A notify the vCPU saw itself (no ioeventfd): serve it right here. */
void virtio_queue_notify(struct virtio_device *vdev, unsigned int index);

/* Device side: after pushing, publish and interrupt if the driver wants. */
void virtio_queue_publish(struct virtio_device *vdev, struct virtio_queue *q);

/*
 * What a device's handler did with one chain: used it (*written bytes
 * into its device-writable part; the core pushes it), held it (the core
 * puts it back, and serving stops until the device serves the queue
 * again, say when its backend has room), or took it to finish later (an
 * asynchronous request: the device pushes its head itself, under q->lock,
 * and publishes; its buffers stay the guest's RAM the whole time).
 */
enum virtio_chain_result {
	VIRTIO_CHAIN_USED,
	VIRTIO_CHAIN_HELD,
	VIRTIO_CHAIN_ASYNC,
};
typedef enum virtio_chain_result (*virtio_chain_fn)(struct virtio_queue *q,
						    const struct virtq_chain *c,
						    void *opaque,
						    uint32_t *written);

/*
 * The one serve loop: with guest notifications off, every available chain
 * to handle(), used entries published once per pass (one interrupt at
 * most), then notifications on and the ring looked at once more, so that
 * a chain posted in between is served, not left waiting for a kick that
 * will not come. A broken ring marks the device NEEDS_RESET. Caller holds
 * q->lock. False when a chain was held or the ring broke.
 *
 * On the queue's I/O thread, a pass ends after VIRTIO_SERVE_BUDGET_CHAINS
 * chains or VIRTIO_SERVE_BUDGET_BYTES bytes (as vhost-net's weights), so
 * that no queue starves another on a shared thread: the thread comes back
 * to it on its next turn, kicks still off. A queue in poll mode (see
 * lkvm/virtio/poll.h) ends with kicks off, and the thread polls it.
 */
#define VIRTIO_SERVE_BUDGET_CHAINS	256
#define VIRTIO_SERVE_BUDGET_BYTES	(512 * 1024)

bool virtio_queue_serve(struct virtio_device *vdev, struct virtio_queue *q,
			virtio_chain_fn handle, void *opaque);
/* The driver broke the rules on q: set NEEDS_RESET and tell it. */
void virtio_device_broken(struct virtio_device *vdev, struct virtio_queue *q,
			  const char *why);
bool virtio_has_feature(const struct virtio_device *vdev, unsigned int bit);

/* Stop every queue and close their eventfds (VMM teardown, threads stopped). */
void virtio_device_stop(struct virtio_device *vdev);

/* The device's polling settings; before the driver can start a queue. */
void virtio_device_set_poll(struct virtio_device *vdev,
			    const struct virtio_poll_config *cfg);
/* Let queue `index` poll (devices poll queues the driver fills, not RX). */
void virtio_queue_allow_poll(struct virtio_device *vdev, unsigned int index);
/* --stats: the queues' counters, "queues":[...]. */
void virtio_device_write_queue_stats(const struct virtio_device *vdev,
				     FILE *f);

#endif
