// SPDX-License-Identifier: GPL-2.0
/*
 * The transport-independent virtio device: status and feature negotiation,
 * queue start and reset, config space, and the kick -> serve -> interrupt
 * path. Lock order: vdev->lock, then a queue's lock. The queue handler runs
 * under the queue's lock only, so it may not take vdev->lock; it reports a
 * broken driver with an atomic update of the status instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "lkvm/util.h"
#include "lkvm/virtio/device.h"
#include "lkvm/vm.h"

#ifndef VIRTIO_F_VERSION_1
#define VIRTIO_F_VERSION_1	32
#endif

/* What every device gets from the core; devices add their own bits. */
#define VIRTIO_CORE_FEATURES	((1ULL << VIRTIO_F_VERSION_1) |		\
				 (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |	\
				 (1ULL << VIRTIO_RING_F_EVENT_IDX))

void virtio_device_attach(struct virtio_device *vdev,
			  struct virtio_transport *t)
{
	vdev->transport = t;
}

static void signal_config(struct virtio_device *vdev)
{
	vdev->transport->ops->signal_config(vdev->transport);
}

/*
 * The queue's ioeventfd fired. The fd is the queue's for the device's
 * whole life, so an event the loop got just before the queue stopped
 * reads nothing worse than this queue's own count.
 */
static void virtio_kick_handler(struct io_source *src, uint32_t events)
{
	struct virtio_queue *q = src->opaque;
	uint64_t count;

	if (read(src->fd, &count, sizeof(count)) != sizeof(count))
		return;
	pthread_mutex_lock(&q->lock);
	q->kicks_eventfd += count;
	if (q->live) {
		virtio_poll_kicked(q->vdev, q, count);
		q->vdev->ops->queue_kick(q->vdev, q);
	}
	pthread_mutex_unlock(&q->lock);
}

int virtio_device_init(struct virtio_device *vdev, struct vm *vm,
		       const struct virtio_device_ops *ops, void *priv,
		       unsigned int nr_queues, uint16_t queue_size,
		       struct iothread *iothread, bool use_ioeventfd)
{
	unsigned int i;

	if (!nr_queues || nr_queues > VIRTIO_MAX_QUEUES)
		return -1;
	memset(vdev, 0, sizeof(*vdev));
	vdev->vm = vm;
	vdev->ops = ops;
	vdev->priv = priv;
	vdev->iothread = iothread;
	vdev->use_ioeventfd = use_ioeventfd;
	vdev->nr_queues = nr_queues;
	vdev->host_features = VIRTIO_CORE_FEATURES;
	pthread_mutex_init(&vdev->lock, NULL);
	pthread_mutex_init(&vdev->config_lock, NULL);
	for (i = 0; i < nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		q->vdev = vdev;
		q->index = i;
		q->max_size = queue_size;
		q->size = queue_size;
		q->kick_fd = -1;
		q->iothread = iothread;
		q->msix_vector = 0xffff;	/* VIRTIO_MSI_NO_VECTOR */
		pthread_mutex_init(&q->lock, NULL);
		virtio_poll_init(q);
	}
	return 0;
}

void virtio_device_set_poll(struct virtio_device *vdev,
			    const struct virtio_poll_config *cfg)
{
	vdev->poll_cfg = *cfg;
}

void virtio_queue_allow_poll(struct virtio_device *vdev, unsigned int index)
{
	if (index < vdev->nr_queues)
		vdev->queues[index].poll.allowed = true;
}

bool virtio_has_feature(const struct virtio_device *vdev, unsigned int bit)
{
	return vdev->guest_features & (1ULL << bit);
}

/* Caller holds q->lock. */
static void virtio_queue_stop(struct virtio_device *vdev,
			      struct virtio_queue *q)
{
	if (!q->live)
		return;
	q->live = false;
	if (vdev->use_ioeventfd) {
		uint64_t count;

		vdev->transport->ops->kick_detach(vdev->transport, q);
		/* Kicks KVM signalled that the loop had not read yet. */
		if (read(q->kick_fd, &count, sizeof(count)) == sizeof(count))
			q->kicks_eventfd += count;
	}
	if (vdev->ops->queue_stop)
		vdev->ops->queue_stop(vdev, q);
	virtio_poll_reset(vdev, q);
	virtq_exit(&q->ring);
}

/*
 * The queue's ioeventfd, watched by its thread from the first start on.
 * Caller holds q->lock.
 */
static int virtio_queue_watch(struct virtio_device *vdev,
			      struct virtio_queue *q)
{
	if (q->kick_fd < 0) {
		q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->kick_fd < 0) {
			pr_err("virtio-%s: eventfd: %s", vdev->ops->name,
			       strerror(errno));
			return -1;
		}
		q->kick = (struct io_source) {
			.fd = q->kick_fd, .handler = virtio_kick_handler,
			.opaque = q,
		};
	}
	if (!q->kick_watched && iothread_add(q->iothread, &q->kick, EPOLLIN))
		return -1;
	q->kick_watched = true;
	return 0;
}

/* Caller holds q->lock. Returns -1 when the driver's queue is unusable. */
static int virtio_queue_start(struct virtio_device *vdev,
			      struct virtio_queue *q)
{
	if (virtq_init(&q->ring, &vdev->vm->mem, q->size, q->desc_gpa,
		       q->avail_gpa, q->used_gpa,
		       virtio_has_feature(vdev, VIRTIO_RING_F_EVENT_IDX),
		       virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC))) {
		pr_warn_ratelimited("virtio-%s: queue %u: %s",
				    vdev->ops->name, q->index,
				    virtq_error_name(q->ring.error));
		return -1;
	}
	if (vdev->use_ioeventfd &&
	    (virtio_queue_watch(vdev, q) ||
	     vdev->transport->ops->kick_attach(vdev->transport, q))) {
		virtq_exit(&q->ring);
		return -1;
	}
	q->live = true;
	/*
	 * A driver may make buffers available, and kick, before DRIVER_OK
	 * (virtio 3.1.1): serve whatever is already there.
	 */
	vdev->ops->queue_kick(vdev, q);
	return 0;
}

/* Caller holds vdev->lock. */
static void virtio_start_queues(struct virtio_device *vdev)
{
	unsigned int i;

	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];
		int ret = 0;

		if (!q->enabled)
			continue;
		pthread_mutex_lock(&q->lock);
		if (!q->live)
			ret = virtio_queue_start(vdev, q);
		pthread_mutex_unlock(&q->lock);
		if (ret) {
			__atomic_fetch_or(&vdev->status,
					  VIRTIO_CONFIG_S_NEEDS_RESET,
					  __ATOMIC_SEQ_CST);
			signal_config(vdev);
		}
	}
}

void virtio_queue_set_enabled(struct virtio_device *vdev,
			      struct virtio_queue *q, bool enable)
{
	int ret = 0;

	pthread_mutex_lock(&q->lock);
	if (!enable) {
		virtio_queue_stop(vdev, q);
		q->enabled = false;
	} else if (!q->enabled) {
		q->enabled = true;
		/* Enabled after DRIVER_OK: start serving it now. */
		if (virtio_get_status(vdev) & VIRTIO_CONFIG_S_DRIVER_OK)
			ret = virtio_queue_start(vdev, q);
	}
	pthread_mutex_unlock(&q->lock);
	if (ret) {
		__atomic_fetch_or(&vdev->status, VIRTIO_CONFIG_S_NEEDS_RESET,
				  __ATOMIC_SEQ_CST);
		signal_config(vdev);
	}
}

/* Caller holds vdev->lock. */
static void virtio_reset(struct virtio_device *vdev)
{
	unsigned int i;

	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		pthread_mutex_lock(&q->lock);
		virtio_queue_stop(vdev, q);
		q->enabled = false;
		q->size = q->max_size;
		q->desc_gpa = q->avail_gpa = q->used_gpa = 0;
		q->msix_vector = 0xffff;
		pthread_mutex_unlock(&q->lock);
	}
	vdev->guest_features = 0;
	__atomic_store_n(&vdev->status, 0, __ATOMIC_SEQ_CST);
	if (vdev->ops->reset)
		vdev->ops->reset(vdev);
}

void virtio_device_stop(struct virtio_device *vdev)
{
	unsigned int i;

	pthread_mutex_lock(&vdev->lock);
	for (i = 0; i < vdev->nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		pthread_mutex_lock(&q->lock);
		virtio_queue_stop(vdev, q);
		if (q->kick_watched)
			iothread_del(q->iothread, &q->kick);
		q->kick_watched = false;
		if (q->kick_fd >= 0)
			close(q->kick_fd);
		q->kick_fd = -1;
		pthread_mutex_unlock(&q->lock);
	}
	pthread_mutex_unlock(&vdev->lock);
}

uint8_t virtio_get_status(struct virtio_device *vdev)
{
	return __atomic_load_n(&vdev->status, __ATOMIC_SEQ_CST);
}

/* FEATURES_OK only for a subset of what we offered, VERSION_1 included. */
static bool virtio_features_acceptable(const struct virtio_device *vdev)
{
	return !(vdev->guest_features & ~vdev->host_features) &&
	       virtio_has_feature(vdev, VIRTIO_F_VERSION_1);
}

void virtio_set_status(struct virtio_device *vdev, uint8_t status)
{
	bool refused = false;
	uint8_t old;

	pthread_mutex_lock(&vdev->lock);
	if (!status) {
		virtio_reset(vdev);
		pthread_mutex_unlock(&vdev->lock);
		return;
	}
	old = virtio_get_status(vdev);
	if ((status & VIRTIO_CONFIG_S_FEATURES_OK) &&
	    !(old & VIRTIO_CONFIG_S_FEATURES_OK) &&
	    !virtio_features_acceptable(vdev))
		status &= ~VIRTIO_CONFIG_S_FEATURES_OK;
	/*
	 * Bits go only by a reset (virtio 2.1.2): a driver that clears
	 * FEATURES_OK under live queues gets it kept. NEEDS_RESET is the
	 * device's to set, and it sticks until reset.
	 */
	status = (status & ~VIRTIO_CONFIG_S_NEEDS_RESET) | old;
	/* A modern driver must have had its features accepted first. */
	if ((status & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    !(old & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    virtio_has_feature(vdev, VIRTIO_F_VERSION_1) &&
	    !(status & VIRTIO_CONFIG_S_FEATURES_OK)) {
		status &= ~VIRTIO_CONFIG_S_DRIVER_OK;
		refused = true;
	}
	if (status & VIRTIO_CONFIG_S_DRIVER)
		vdev->driver_seen = true;
	__atomic_store_n(&vdev->status, status, __ATOMIC_SEQ_CST);
	if ((status & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    !(old & VIRTIO_CONFIG_S_DRIVER_OK)) {
		if (vdev->ops->driver_ok)
			vdev->ops->driver_ok(vdev);
		virtio_start_queues(vdev);
	}
	pthread_mutex_unlock(&vdev->lock);
	if (refused)
		virtio_device_broken(vdev, NULL, "DRIVER_OK without FEATURES_OK");
}

uint32_t virtio_get_host_features(struct virtio_device *vdev, unsigned int word)
{
	return word < 2 ? (uint32_t)(vdev->host_features >> (32 * word)) : 0;
}

void virtio_set_guest_features(struct virtio_device *vdev, unsigned int word,
			       uint32_t value)
{
	uint64_t mask, v;

	if (word >= 2)
		return;
	pthread_mutex_lock(&vdev->lock);
	/*
	 * Features are frozen once FEATURES_OK is set, and for a legacy
	 * driver (which has no FEATURES_OK) once DRIVER_OK is: a device's
	 * queues may not change roles under it.
	 */
	if (!(virtio_get_status(vdev) & (VIRTIO_CONFIG_S_FEATURES_OK |
					 VIRTIO_CONFIG_S_DRIVER_OK))) {
		mask = 0xffffffffULL << (32 * word);
		v = (uint64_t)value << (32 * word);
		vdev->guest_features = (vdev->guest_features & ~mask) | v;
	}
	pthread_mutex_unlock(&vdev->lock);
}

void virtio_config_read(struct virtio_device *vdev, unsigned int offset,
			void *data, unsigned int len)
{
	memset(data, 0, len);
	pthread_mutex_lock(&vdev->config_lock);
	if (range_within(offset, len, 0, vdev->config_size))
		memcpy(data, vdev->config + offset, len);
	pthread_mutex_unlock(&vdev->config_lock);
}

void virtio_config_write(struct virtio_device *vdev, unsigned int offset,
			 const void *data, unsigned int len)
{
	pthread_mutex_lock(&vdev->config_lock);
	if (vdev->ops->config_written &&
	    range_within(offset, len, 0, vdev->config_size)) {
		memcpy(vdev->config + offset, data, len);
		vdev->ops->config_written(vdev, offset, len);
	}
	pthread_mutex_unlock(&vdev->config_lock);
}

uint32_t virtio_config_generation(struct virtio_device *vdev)
{
	return __atomic_load_n(&vdev->config_generation, __ATOMIC_ACQUIRE);
}

bool virtio_config_update(struct virtio_device *vdev, unsigned int offset,
			  const void *data, unsigned int len)
{
	bool changed = false;

	pthread_mutex_lock(&vdev->config_lock);
	if (range_within(offset, len, 0, vdev->config_size) &&
	    memcmp(vdev->config + offset, data, len)) {
		memcpy(vdev->config + offset, data, len);
		__atomic_fetch_add(&vdev->config_generation, 1,
				   __ATOMIC_RELEASE);
		changed = true;
	}
	pthread_mutex_unlock(&vdev->config_lock);
	return changed;
}

void virtio_config_changed(struct virtio_device *vdev, unsigned int offset,
			   const void *data, unsigned int len)
{
	if (virtio_config_update(vdev, offset, data, len) &&
	    (virtio_get_status(vdev) & VIRTIO_CONFIG_S_DRIVER_OK))
		signal_config(vdev);
}

void virtio_queue_notify(struct virtio_device *vdev, unsigned int index)
{
	struct virtio_queue *q;

	if (index >= vdev->nr_queues)
		return;
	q = &vdev->queues[index];
	pthread_mutex_lock(&q->lock);
	q->kicks_exit++;
	if (q->live)
		vdev->ops->queue_kick(vdev, q);
	pthread_mutex_unlock(&q->lock);
}

void virtio_queue_publish(struct virtio_device *vdev, struct virtio_queue *q)
{
	if (virtq_publish(&q->ring)) {
		q->interrupts++;
		vdev->transport->ops->signal_queue(vdev->transport, q);
	}
}

/* Has this pass used up its turn (on the queue's own thread only)? */
static bool serve_budget_spent(bool on_thread, unsigned int *chains,
			       uint64_t *bytes, const struct virtq_chain *c,
			       uint32_t written)
{
	if (!on_thread)
		return false;
	*bytes += (uint64_t)c->out_len + written;
	return ++*chains >= VIRTIO_SERVE_BUDGET_CHAINS ||
	       *bytes >= VIRTIO_SERVE_BUDGET_BYTES;
}

bool virtio_queue_serve(struct virtio_device *vdev, struct virtio_queue *q,
			virtio_chain_fn handle, void *opaque)
{
	bool on_thread = iothread_is_current(q->iothread);
	unsigned int chains = 0, served = 0;
	uint64_t bytes = 0;
	struct virtq_chain c;
	uint32_t written;
	int ret;

	q->poll.polled = false;
	do {
		virtq_enable_notify(&q->ring, false);
		while ((ret = virtq_pop(&q->ring, &c)) > 0) {
			enum virtio_chain_result r;

			written = 0;
			r = handle(q, &c, opaque, &written);
			if (r == VIRTIO_CHAIN_HELD) {
				virtq_unpop(&q->ring, 1);
				virtio_queue_publish(vdev, q);
				return false;
			}
			q->requests++;
			served++;
			if (r == VIRTIO_CHAIN_USED)
				virtq_push(&q->ring, c.head, written);
			else
				written = c.in_len;	/* what it will move */
			if (serve_budget_spent(on_thread, &chains, &bytes, &c,
					       written)) {
				virtio_queue_publish(vdev, q);
				virtio_poll_keep(vdev, q, true, served);
				return true;
			}
		}
		virtio_queue_publish(vdev, q);
		if (ret < 0) {
			virtio_device_broken(vdev, q,
					     virtq_error_name(q->ring.error));
			return false;
		}
		if (virtio_poll_keep(vdev, q, false, served))
			return true;
		served = 0;
		virtq_enable_notify(&q->ring, true);
	} while (virtq_has_avail(&q->ring));
	return true;
}

void virtio_device_broken(struct virtio_device *vdev, struct virtio_queue *q,
			  const char *why)
{
	uint8_t old = __atomic_fetch_or(&vdev->status,
					VIRTIO_CONFIG_S_NEEDS_RESET,
					__ATOMIC_SEQ_CST);

	if (old & VIRTIO_CONFIG_S_NEEDS_RESET)
		return;
	/* A guest can break and reset a device at will: say it once. */
	if (!__atomic_fetch_add(&vdev->times_broken, 1, __ATOMIC_RELAXED))
		pr_warn("virtio-%s: queue %u: %s: device needs a reset (later occurrences only in --stats)",
			vdev->ops->name, q ? q->index : 0, why);
	else
		pr_debug("virtio-%s: queue %u: %s: device needs a reset",
			 vdev->ops->name, q ? q->index : 0, why);
	signal_config(vdev);
}

void virtio_device_write_queue_stats(const struct virtio_device *vdev,
				     FILE *f)
{
	unsigned int i;

	fprintf(f, "\"queues\":[");
	for (i = 0; i < vdev->nr_queues; i++) {
		const struct virtio_queue *q = &vdev->queues[i];

		fprintf(f, "%s{\"kicks_eventfd\":%llu,\"kicks_exit\":%llu,"
			"\"interrupts\":%llu,\"requests\":%llu,",
			i ? "," : "", (unsigned long long)q->kicks_eventfd,
			(unsigned long long)q->kicks_exit,
			(unsigned long long)q->interrupts,
			(unsigned long long)q->requests);
		if (q->iothread && vdev->use_ioeventfd)
			fprintf(f, "\"iothread\":%u,", iothread_id(q->iothread));
		virtio_poll_write_stats(vdev, q, f);
		fputc('}', f);
	}
	fprintf(f, "]");
}

int virtio_device_setup(struct virtio_device *vdev, struct vm *vm,
			const struct virtio_device_ops *ops, void *priv,
			unsigned int nr_queues, uint16_t queue_size,
			const struct virtio_device_options *opts,
			const char *thread_name, struct iothread **own)
{
	unsigned int i;

	*own = NULL;
	if (!opts->pool) {
		*own = iothread_create(vm, thread_name);
		if (!*own)
			return -1;
	}
	if (virtio_device_init(vdev, vm, ops, priv, nr_queues, queue_size,
			       *own, opts->use_ioeventfd))
		return -1;
	for (i = 0; opts->pool && i < nr_queues; i++)
		vdev->queues[i].iothread = iothread_pool_next(opts->pool);
	return 0;
}

int virtio_device_go(struct iothread *own)
{
	return own ? iothread_start(own) : 0;
}

void virtio_device_teardown(struct virtio_device *vdev, struct iothread **own,
			    bool *stopped)
{
	if (*stopped)
		return;
	iothread_stop(*own);
	/* a device whose set-up failed has no queues to stop */
	if (vdev->ops)
		virtio_device_stop(vdev);
	iothread_destroy(*own);
	*own = NULL;
	*stopped = true;
}
