// SPDX-License-Identifier: GPL-2.0
/*
 * virtio-console with one port (virtio 1.x, 5.3): receiveq (0) gets what
 * the user types, transmitq (1) carries the guest's output into the
 * console queue the UART also writes to.
 *
 * Output waits as on a real line: a chain that does not fit in the
 * console queue is held (Linux's hvc write waits for its buffer) until
 * the console's writer has room again, then the transmit queue's I/O
 * thread serves it. Only output that could never fit (a chain larger
 * than the whole queue) is cut and counted, as the UART counts overruns.
 * Input typed while the driver has no receive buffer waits in a 4 KiB
 * buffer; what overflows it is dropped and counted. VIRTIO_CONSOLE_F_EMERG_WRITE:
 * a byte written to emerg_wr goes out at once, before any queue works.
 */
#include <errno.h>
#include <linux/virtio_console.h>
#include <linux/virtio_ids.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/virtio/console.h"
#include "lkvm/vm.h"

#define CON_QUEUE_SIZE		64
#define CON_IN_BUF		4096
#define CON_RXQ			0
#define CON_TXQ			1
/* More segments than this in one output chain are written piece by piece. */
#define CON_TX_IOV		64

/*
 * Created by the main thread. The queues are served under their locks by
 * their I/O threads (a vCPU with --no-ioeventfd); the receive queue also
 * by the main thread when input arrives.
 */
struct virtio_console {
	struct virtio_device vdev;
	struct virtio_console_config config;
	struct iothread *iothread;	/* NULL when on a pool's */
	bool stopped;

	/*
	 * Room again: the console's writer thread signals room_fd, and the
	 * transmit queue's I/O thread serves what was held (tx_held, under
	 * that queue's lock).
	 */
	int room_fd;
	struct io_source room_src;
	bool room_watched;
	bool room_listening;
	bool tx_held;

	/*
	 * Typed input the driver has no buffer for yet: added by the main
	 * thread, taken by whoever serves the receive queue; in_lock is
	 * taken after that queue's lock.
	 */
	pthread_mutex_t in_lock;
	uint8_t in[CON_IN_BUF];
	size_t in_head, in_count;
	uint64_t in_dropped;		/* under in_lock */
	uint64_t out_held;		/* under the transmit queue's lock */
	uint64_t out_cut;		/* likewise: chains too big to hold */
};

static enum virtio_chain_result con_rx_handle(struct virtio_queue *q,
					      const struct virtq_chain *c,
					      void *opaque, uint32_t *written)
{
	struct virtio_console *con = opaque;
	unsigned int i;

	pthread_mutex_lock(&con->in_lock);
	if (!con->in_count) {
		pthread_mutex_unlock(&con->in_lock);
		return VIRTIO_CHAIN_HELD;	/* kept for the next input */
	}
	for (i = 0; i < c->nr_in && con->in_count; i++) {
		uint8_t *dst = c->in[i].hva;
		size_t room = c->in[i].len;

		while (room && con->in_count) {
			size_t n = MIN(MIN(room, con->in_count),
				       CON_IN_BUF - con->in_head);

			memcpy(dst, con->in + con->in_head, n);
			dst += n;
			room -= n;
			*written += n;
			con->in_head = (con->in_head + n) % CON_IN_BUF;
			con->in_count -= n;
		}
	}
	pthread_mutex_unlock(&con->in_lock);
	return VIRTIO_CHAIN_USED;
}

/*
 * A chain larger than the console queue could never be held until it
 * fits: written as far as it fits, the console counting what it drops.
 */
static void con_tx_cut(struct virtio_console *con, const struct virtq_chain *c)
{
	unsigned int i;
	bool full;

	con->out_cut++;
	for (i = 0; i < c->nr_out; i++)
		console_write(c->out[i].hva, c->out[i].len, &full);
}

static enum virtio_chain_result con_tx_handle(struct virtio_queue *q,
					      const struct virtq_chain *c,
					      void *opaque, uint32_t *written)
{
	struct virtio_console *con = opaque;
	struct iovec iov[CON_TX_IOV];
	unsigned int i;

	if (c->out_len > console_queue_size() || c->nr_out > CON_TX_IOV) {
		con_tx_cut(con, c);
		return VIRTIO_CHAIN_USED;
	}
	for (i = 0; i < c->nr_out; i++)
		iov[i] = (struct iovec) { c->out[i].hva, c->out[i].len };
	if (!console_write_whole(iov, c->nr_out)) {
		con->tx_held = true;
		con->out_held++;
		return VIRTIO_CHAIN_HELD;
	}
	return VIRTIO_CHAIN_USED;
}

static void con_queue_kick(struct virtio_device *vdev, struct virtio_queue *q)
{
	struct virtio_console *con = vdev->priv;

	if (q->index == CON_RXQ) {
		virtio_queue_serve(vdev, q, con_rx_handle, con);
	} else {
		con->tx_held = false;
		virtio_queue_serve(vdev, q, con_tx_handle, con);
	}
}

/* The writer thread: the console queue has room again. */
static void con_room(void *opaque)
{
	struct virtio_console *con = opaque;

	if (eventfd_write(con->room_fd, 1) && errno != EAGAIN)
		pr_warn_once("virtio-console: cannot wake its I/O thread: %s",
			     strerror(errno));
}

/* The transmit queue's I/O thread: serve what waited for room. */
static void con_room_ready(struct io_source *src, uint32_t events)
{
	struct virtio_console *con = src->opaque;
	struct virtio_queue *q = &con->vdev.queues[CON_TXQ];
	eventfd_t n;

	if (eventfd_read(con->room_fd, &n))
		return;
	pthread_mutex_lock(&q->lock);
	if (q->live && con->tx_held)
		con_queue_kick(&con->vdev, q);
	pthread_mutex_unlock(&q->lock);
}

/* Input waits for the driver's buffers; what does not fit is counted. */
static void con_queue_input(struct virtio_console *con, const uint8_t *buf,
			    size_t len)
{
	size_t i;

	pthread_mutex_lock(&con->in_lock);
	for (i = 0; i < len && con->in_count < CON_IN_BUF; i++, con->in_count++)
		con->in[(con->in_head + con->in_count) % CON_IN_BUF] = buf[i];
	con->in_dropped += len - i;
	pthread_mutex_unlock(&con->in_lock);
}

/* The main thread: what the user typed. */
static size_t con_input(void *opaque, const uint8_t *buf, size_t len)
{
	struct virtio_console *con = opaque;
	struct virtio_queue *q = &con->vdev.queues[CON_RXQ];

	con_queue_input(con, buf, len);
	pthread_mutex_lock(&q->lock);
	if (q->live)
		virtio_queue_serve(&con->vdev, q, con_rx_handle, con);
	pthread_mutex_unlock(&q->lock);
	return len;
}

/*
 * lkvm debug --sysrq: Linux's hvc console takes Ctrl-O then the key as
 * Magic SysRq (a serial line would send a BREAK).
 */
static void con_break(void *opaque)
{
	static const uint8_t ctrl_o = 0x0f;

	con_queue_input(opaque, &ctrl_o, 1);
}

/* Under config_lock: emerg_wr is the one field the driver may write. */
static void con_config_written(struct virtio_device *vdev, unsigned int offset,
			       unsigned int len)
{
	struct virtio_console *con = vdev->priv;
	unsigned int emerg = offsetof(struct virtio_console_config, emerg_wr);
	uint8_t c = con->config.emerg_wr & 0xff;
	bool full;

	if (offset <= emerg && emerg < offset + len &&
	    virtio_has_feature(vdev, VIRTIO_CONSOLE_F_EMERG_WRITE))
		console_write(&c, 1, &full);
	con->config.cols = con->config.rows = 0;
	con->config.max_nr_ports = 1;
	con->config.emerg_wr = 0;
}

static void con_reset(struct virtio_device *vdev)
{
	struct virtio_console *con = vdev->priv;

	pthread_mutex_lock(&con->in_lock);
	con->in_head = con->in_count = 0;
	pthread_mutex_unlock(&con->in_lock);
}

static void con_write_stats(struct virtio_device *vdev, FILE *f)
{
	struct virtio_console *con = vdev->priv;

	fprintf(f, "\"input_dropped\":%llu,\"output_held\":%llu,"
		"\"output_cut\":%llu", (unsigned long long)con->in_dropped,
		(unsigned long long)con->out_held,
		(unsigned long long)con->out_cut);
}

static const struct virtio_device_ops con_ops = {
	.name = "console",
	.device_id = VIRTIO_ID_CONSOLE,
	.queue_kick = con_queue_kick,
	.config_written = con_config_written,
	.reset = con_reset,
	.write_stats = con_write_stats,
};

static int con_setup_room(struct virtio_console *con)
{
	struct virtio_queue *q = &con->vdev.queues[CON_TXQ];

	con->room_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (con->room_fd < 0) {
		pr_err("virtio-console: eventfd: %s", strerror(errno));
		return -1;
	}
	con->room_src = (struct io_source) {
		.fd = con->room_fd, .handler = con_room_ready, .opaque = con,
	};
	if (iothread_add(q->iothread, &con->room_src, EPOLLIN))
		return -1;
	con->room_watched = true;
	if (console_add_room_notify(con_room, con)) {
		pr_err("virtio-console: the console has no room for another listener");
		return -1;
	}
	con->room_listening = true;
	return 0;
}

struct virtio_console *virtio_console_create(struct vm *vm,
					     const struct virtio_device_options *opts)
{
	struct virtio_console *con = vm_zalloc(vm, sizeof(*con));

	if (!con)
		return NULL;
	con->room_fd = -1;
	pthread_mutex_init(&con->in_lock, NULL);
	if (virtio_device_setup(&con->vdev, vm, &con_ops, con, 2,
				CON_QUEUE_SIZE, opts, "console-io",
				&con->iothread))
		goto fail;
	con->vdev.host_features |= 1ULL << VIRTIO_CONSOLE_F_EMERG_WRITE;
	con->config.max_nr_ports = 1;
	con->vdev.config = (uint8_t *)&con->config;
	con->vdev.config_size = sizeof(con->config);
	if (con_setup_room(con) ||
	    virtio_device_go(con->iothread))
		goto fail;
	console_set_sink(con_input, con_break, con);
	return con;
fail:
	virtio_console_destroy(con);
	return NULL;
}

void virtio_console_destroy(struct virtio_console *con)
{
	if (!con || con->stopped)
		return;
	console_set_sink(NULL, NULL, NULL);
	/* after this no writer call is running, so the eventfd may go */
	if (con->room_listening)
		console_del_room_notify(con_room, con);
	virtio_device_teardown(&con->vdev, &con->iothread, &con->stopped);
	if (con->room_watched)
		iothread_del(con->vdev.queues[CON_TXQ].iothread, &con->room_src);
	if (con->room_fd >= 0)
		close(con->room_fd);
	con->room_fd = -1;
}

struct virtio_device *virtio_console_device(struct virtio_console *con)
{
	return &con->vdev;
}
