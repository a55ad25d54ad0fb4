// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-9p: one queue of requests, each a chain holding a 9P T-message
 * in its readable part and room for the R-message in its writable part,
 * served in order by the share's 9P server (fs/p9.c) on the device's I/O
 * thread. The message is gathered into one buffer and the reply
 * scattered back: Linux's zero-copy reads and writes put the payload in
 * extra buffers after a short header, which the flat copy handles the
 * same way as any other split.
 */
#include <endian.h>
#include <linux/virtio_9p.h>
#include <linux/virtio_ids.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/iothread.h"
#include "lkvm/p9.h"
#include "lkvm/util.h"
#include "lkvm/virtio/9p.h"
#include "lkvm/vm.h"

#define P9_QUEUE_SIZE		128

/*
 * Created by the main thread; the server and both buffers belong to
 * whoever serves the queue (the device's I/O thread, a pool's, or a vCPU
 * with --no-ioeventfd), under the queue's lock.
 */
struct virtio_9p {
	struct virtio_device vdev;
	struct iothread *iothread;	/* NULL when on a pool's */
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

static void p9_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	virtio_queue_serve(vdev, q, p9_chain, vdev->priv);
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
	size_t tag_len = strlen(tag);

	if (!p || tag_len > VIRTIO_9P_TAG_MAX) {
		close(root_fd);
		return NULL;
	}
	p9_server_init(&p->server, root_fd, ro);
	p->config.tag_len = htole16(tag_len);
	memcpy(p->config.tag, tag, tag_len);
	p->req = malloc(P9_MAX_MSIZE);
	p->reply = malloc(P9_MAX_MSIZE);
	if (!p->req || !p->reply) {
		pr_err("virtio-9p: no memory for the '%s' share's buffers", tag);
		goto fail;
	}
	if (virtio_device_setup(&p->vdev, vm, &p9_ops, p, 1, P9_QUEUE_SIZE,
				opts, "9p-io", &p->iothread))
		goto fail;
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
	p9_server_exit(&p->server);
	free(p->req);
	free(p->reply);
	p->req = p->reply = NULL;
}

struct virtio_device *virtio_9p_device(struct virtio_9p *p)
{
	return &p->vdev;
}
