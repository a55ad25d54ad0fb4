// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-9p: one queue of requests, each a chain holding a 9P T-message
 * in its readable part and room for the R-message in its writable part,
 * served in order by the share's 9P server (fs/p9.c) on the device's I/O
 * thread. The message is gathered into one buffer and the reply
 * scattered back: Linux's zero-copy reads and writes put the payload in
 * extra buffers after a short header, which the flat copy handles the
 * same way as any other split.
 *
 * That thread is the device's own whatever --iothreads says, and the
 * only one whose seccomp filter lets it work on files (SECCOMP_P9): a
 * kick that reaches a vCPU thread (--no-ioeventfd, a driver starting
 * the queue) is handed to it, never served there.
 */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_9p.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lkvm/iothread.h"
#include "lkvm/p9.h"
#include "lkvm/util.h"
#include "lkvm/virtio/9p.h"
#include "lkvm/vm.h"

#define P9_QUEUE_SIZE		128

/*
 * Created by the main thread; the server and both buffers belong to the
 * device's own I/O thread, which serves the queue under its lock.
 */
struct virtio_9p {
	struct virtio_device vdev;
	struct iothread *iothread;
	struct io_source handoff;	/* an eventfd: kicks for the thread */
	bool stopped;
	struct __attribute__((packed)) {
		uint16_t tag_len;
		char tag[VIRTIO_9P_TAG_MAX];
	} config;
	struct p9_server server;
	uint8_t *req;			/* P9_MAX_MSIZE each */
	uint8_t *reply;
	uint64_t unanswerable;		/* chains with no room for a reply */
};

static enum virtio_chain_result p9_chain(struct virtio_queue *q,
					 const struct virtq_chain *c,
					 void *opaque, uint32_t *written)
{
	struct virtio_9p *p = opaque;
	size_t len = MIN((size_t)c->out_len, (size_t)P9_MAX_MSIZE);
	size_t n;

	virtq_chain_read(c, 0, p->req, len);
	n = p9_handle(&p->server, p->req, len, p->reply,
		      MIN((size_t)c->in_len, (size_t)P9_MAX_MSIZE));
	if (!n) {
		p->unanswerable++;
		virtio_device_broken(&p->vdev, q, "a request with no room for a reply");
		return VIRTIO_CHAIN_USED;
	}
	*written = virtq_chain_write(c, p->reply, n);
	return VIRTIO_CHAIN_USED;
}

/* Caller holds q->lock. */
static void p9_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_9p *p = vdev->priv;
	uint64_t one = 1;

	if (iothread_is_current(p->iothread)) {
		virtio_queue_serve(vdev, q, p9_chain, p);
		return;
	}
	if (write(p->handoff.fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn_once("virtio-9p: cannot hand a kick to its thread: %s",
			     strerror(errno));
}

/* On the device's thread: a kick another thread took. */
static void p9_handoff(struct io_source *src, uint32_t events)
{
	struct virtio_9p *p = src->opaque;
	struct virtio_queue *q = &p->vdev.queues[0];
	uint64_t count;

	if (read(src->fd, &count, sizeof(count)) != sizeof(count))
		return;
	pthread_mutex_lock(&q->lock);
	if (q->live)
		virtio_queue_serve(&p->vdev, q, p9_chain, p);
	pthread_mutex_unlock(&q->lock);
}

/* A reset ends the driver's session: its fids go with it. */
static void p9_queue_stop(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_9p *p = vdev->priv;

	p9_server_reset(&p->server);
}

static void p9_write_stats(struct virtio_device *vdev, FILE *f)
{
	struct virtio_9p *p = vdev->priv;

	fprintf(f, "\"tag\":\"%.*s\",\"read_only\":%s,\"errors\":%llu,"
		"\"unanswerable\":%llu", (int)le16toh(p->config.tag_len),
		p->config.tag, p->server.ro ? "true" : "false",
		(unsigned long long)p->server.errors,
		(unsigned long long)p->unanswerable);
}

static const struct virtio_device_ops p9_ops = {
	.name = "9p",
	.device_id = VIRTIO_ID_9P,
	.queue_kick = p9_queue_kick,
	.queue_stop = p9_queue_stop,
	.write_stats = p9_write_stats,
};

struct virtio_9p *virtio_9p_create(struct vm *vm,
				   const struct virtio_device_options *opts,
				   int root_fd, const char *tag, bool ro)
{
	struct virtio_9p *p = vm_zalloc(vm, sizeof(*p));
	struct virtio_device_options own = *opts;
	size_t tag_len = strlen(tag);

	if (!p || tag_len > VIRTIO_9P_TAG_MAX) {
		close(root_fd);
		return NULL;
	}
	own.pool = NULL;	/* a thread of its own, never a pool's */
	p->handoff = (struct io_source) {
		.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
		.handler = p9_handoff, .opaque = p,
	};
	p9_server_init(&p->server, root_fd, ro);
	p->config.tag_len = htole16(tag_len);
	memcpy(p->config.tag, tag, tag_len);
	p->req = malloc(P9_MAX_MSIZE);
	p->reply = malloc(P9_MAX_MSIZE);
	if (!p->req || !p->reply) {
		pr_err("virtio-9p: no memory for the '%s' share's buffers", tag);
		goto fail;
	}
	if (p->handoff.fd < 0) {
		pr_err("virtio-9p: eventfd: %s", strerror(errno));
		goto fail;
	}
	if (virtio_device_setup(&p->vdev, vm, &p9_ops, p, 1, P9_QUEUE_SIZE,
				&own, "9p-io", &p->iothread) ||
	    iothread_add(p->iothread, &p->handoff, EPOLLIN))
		goto fail;
	iothread_set_seccomp(p->iothread, SECCOMP_P9);
	p->vdev.host_features |= 1ull << VIRTIO_9P_MOUNT_TAG;
	p->vdev.config = (uint8_t *)&p->config;
	p->vdev.config_size = sizeof(p->config.tag_len) + tag_len;
	if (virtio_device_go(p->iothread))
		goto fail;
	return p;
fail:
	virtio_9p_destroy(p);
	return NULL;
}

void virtio_9p_destroy(struct virtio_9p *p)
{
	if (!p)
		return;
	virtio_device_teardown(&p->vdev, &p->iothread, &p->stopped);
	if (p->handoff.fd >= 0)
		close(p->handoff.fd);
	p->handoff.fd = -1;
	p9_server_exit(&p->server);
	free(p->req);
	free(p->reply);
	p->req = p->reply = NULL;
}

struct virtio_device *virtio_9p_device(struct virtio_9p *p)
{
	return &p->vdev;
}
