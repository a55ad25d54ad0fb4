// SPDX-License-Identifier: GPL-2.0
/*
 * Guest console on the host terminal. The terminal state is saved once and
 * restored by console_restore(), which runs from atexit, from the fatal
 * signal handler and from the normal shutdown path, so that no exit leaves
 * the user's terminal in raw mode.
 *
 * Output is queued, never written by the thread that produced it: a reader
 * that stops (a paused terminal, a pipe nobody drains) would otherwise
 * stop the vCPU inside its port write, and a stopped vCPU cannot be joined
 * at shutdown. A writer thread drains the queue with blocking writes; the
 * UART sees a full queue as a busy transmitter, as QEMU's does, and bytes
 * sent to it anyway are dropped and counted, as a real UART overruns.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/seccomp.h"
#include "lkvm/util.h"

#define ESCAPE_CHAR	0x01	/* Ctrl-a */
#define OUT_QUEUE	(64 * 1024)
/* The transmitter is free again once this much of the queue is. */
#define OUT_ROOM_AGAIN	(OUT_QUEUE / 4)
/* One write at most: progress a flush can see, even with a slow reader. */
#define OUT_CHUNK	4096

/*
 * The output queue: filled by any thread through console_write(), drained
 * by the writer thread; `lock` guards every field. The writer never holds
 * it while writing, nor while it tells the room listeners (the UART's
 * lock is held around console_write()).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t more;		/* bytes queued: the writer wakes */
	pthread_cond_t progress;	/* bytes written: a flush looks again */
	uint8_t buf[OUT_QUEUE];
	size_t head, count;
	uint64_t written, dropped;
	bool writer_started;
	bool stop;			/* console_stop(): the writer ends */
	bool writer_exited;
	pthread_t writer;
	bool closed;			/* the reader is gone: discard */
	bool want_room;
} out = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.more = PTHREAD_COND_INITIALIZER,
	.progress = PTHREAD_COND_INITIALIZER,
};

/*
 * Who hears that the queue has room again (the UART, virtio-console).
 * The writer calls them holding `lock`, which is taken before theirs
 * (the UART's lock) and never under out.lock: so once a listener is
 * removed, no call to it is still running.
 */
#define ROOM_LISTENERS	2
static struct {
	pthread_mutex_t lock;
	console_room_fn fn[ROOM_LISTENERS];
	void *opaque[ROOM_LISTENERS];
} room = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void room_notify(void)
{
	unsigned int i;

	pthread_mutex_lock(&room.lock);
	for (i = 0; i < ROOM_LISTENERS; i++)
		if (room.fn[i])
			room.fn[i](room.opaque[i]);
	pthread_mutex_unlock(&room.lock);
}

/*
 * Owned by the main thread (init, input, restore); the writer thread uses
 * out_fd, which is constant.
 */
static struct {
	int in_fd;
	int out_fd;
	bool is_tty;
	bool raw;
	bool escape;
	struct termios saved;
	console_sink_fn sink;
	console_break_fn brk;
	void *opaque;
} con = { .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO };

/* Waits, without spinning, for an O_NONBLOCK out_fd to take more. */
static void writer_wait_writable(void)
{
	struct pollfd pfd = { .fd = con.out_fd, .events = POLLOUT };

	poll(&pfd, 1, 1000);
}

/* Writes from the queue's head; returns bytes written, -1 when closed. */
static ssize_t writer_write_some(const uint8_t *p, size_t len)
{
	ssize_t n = write(con.out_fd, p, len);

	if (n > 0)
		return n;
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0 && errno == EAGAIN) {
		writer_wait_writable();
		return 0;
	}
	return -1;
}

/* Caller holds out.lock; returns whether the UART should hear of room. */
static bool writer_consume(ssize_t n)
{
	if (n < 0) {
		out.closed = true;	/* the guest keeps running, unheard */
		out.dropped += out.count;
		n = out.count;
	} else {
		out.written += n;
	}
	out.head = (out.head + n) % OUT_QUEUE;
	out.count -= n;
	pthread_cond_broadcast(&out.progress);
	if (!out.want_room || OUT_QUEUE - out.count < OUT_ROOM_AGAIN)
		return false;
	out.want_room = false;
	return true;
}

/*
 * console_stop() wakes a writer blocked in write() or poll() with this
 * signal: its handler does nothing, and without SA_RESTART the call fails
 * with EINTR, after which the writer sees `stop`. The writer takes it and
 * nothing else (vCPUs are kicked with SIGUSR1).
 */
#define WRITER_WAKE_SIGNAL	SIGUSR2

static void writer_wake_handler(int sig)
{
}

static void *writer_thread(void *arg)
{
	sigset_t wake;

	sigemptyset(&wake);
	sigaddset(&wake, WRITER_WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	pthread_mutex_lock(&out.lock);
	if (seccomp_confine(SECCOMP_CONSOLE)) {
		/* Unconfined output would be worse than none. */
		out.closed = true;
		out.dropped += out.count;
		out.count = 0;
		out.stop = true;
	}
	for (;;) {
		size_t len;
		ssize_t n;

		while (!out.count && !out.stop)
			pthread_cond_wait(&out.more, &out.lock);
		if (out.stop)
			break;
		/* The contiguous part; the rest comes next turn. */
		len = MIN(MIN(out.count, OUT_QUEUE - out.head), (size_t)OUT_CHUNK);
		pthread_mutex_unlock(&out.lock);
		n = writer_write_some(out.buf + out.head, len);
		pthread_mutex_lock(&out.lock);
		if (writer_consume(n)) {
			pthread_mutex_unlock(&out.lock);
			room_notify();
			pthread_mutex_lock(&out.lock);
		}
	}
	out.writer_exited = true;
	pthread_cond_broadcast(&out.progress);
	pthread_mutex_unlock(&out.lock);
	return NULL;
}

/* The writer runs from console_init() to console_stop(). */
static void console_start_writer(void)
{
	struct sigaction sa = { .sa_handler = writer_wake_handler };
	sigset_t all, old;

	pthread_mutex_lock(&out.lock);
	if (out.writer_started) {
		pthread_mutex_unlock(&out.lock);
		return;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(WRITER_WAKE_SIGNAL, &sa, NULL);
	/* Signals are the main thread's business, but for its wake-up. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	out.stop = false;
	out.writer_exited = false;
	if (pthread_create(&out.writer, NULL, writer_thread, NULL)) {
		pr_warn("console: no writer thread: guest output is lost");
		out.closed = true;
	} else {
		pthread_setname_np(out.writer, "lkvm-console");
		out.writer_started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&out.lock);
}

size_t console_write(const void *buf, size_t len, bool *full)
{
	const uint8_t *p = buf;
	size_t room, i;

	pthread_mutex_lock(&out.lock);
	if (out.closed) {
		out.dropped += len;
		*full = false;
		pthread_mutex_unlock(&out.lock);
		return len;
	}
	room = OUT_QUEUE - out.count;
	if (len > room) {
		out.dropped += len - room;
		len = room;
	}
	for (i = 0; i < len; i++)
		out.buf[(out.head + out.count + i) % OUT_QUEUE] = p[i];
	out.count += len;
	if (len)
		pthread_cond_signal(&out.more);
	*full = out.count == OUT_QUEUE;
	if (*full)
		out.want_room = true;
	pthread_mutex_unlock(&out.lock);
	return len;
}

bool console_write_whole(const struct iovec *iov, unsigned int n)
{
	size_t total = 0, done = 0, i;
	unsigned int k;

	for (k = 0; k < n; k++)
		total += iov[k].iov_len;
	pthread_mutex_lock(&out.lock);
	if (out.closed) {
		out.dropped += total;
		pthread_mutex_unlock(&out.lock);
		return true;
	}
	if (total > OUT_QUEUE - out.count) {
		out.want_room = true;
		pthread_mutex_unlock(&out.lock);
		return false;
	}
	for (k = 0; k < n; k++) {
		const uint8_t *p = iov[k].iov_base;

		for (i = 0; i < iov[k].iov_len; i++, done++)
			out.buf[(out.head + out.count + done) % OUT_QUEUE] = p[i];
	}
	out.count += total;
	if (total)
		pthread_cond_signal(&out.more);
	pthread_mutex_unlock(&out.lock);
	return true;
}

size_t console_queue_size(void)
{
	return OUT_QUEUE;
}

int console_add_room_notify(console_room_fn fn, void *opaque)
{
	unsigned int i;
	int ret = -1;

	pthread_mutex_lock(&room.lock);
	/* a device made again (a new VM in this process) takes its old slot */
	for (i = 0; i < ROOM_LISTENERS && ret; i++) {
		if (room.fn[i] == fn) {
			room.opaque[i] = opaque;
			ret = 0;
		}
	}
	for (i = 0; i < ROOM_LISTENERS && ret; i++) {
		if (!room.fn[i]) {
			room.fn[i] = fn;
			room.opaque[i] = opaque;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&room.lock);
	return ret;
}

void console_del_room_notify(console_room_fn fn, void *opaque)
{
	unsigned int i;

	pthread_mutex_lock(&room.lock);
	for (i = 0; i < ROOM_LISTENERS; i++) {
		if (room.fn[i] == fn && room.opaque[i] == opaque) {
			room.fn[i] = NULL;
			room.opaque[i] = NULL;
		}
	}
	pthread_mutex_unlock(&room.lock);
}

bool console_flush(unsigned int stall_ms)
{
	bool empty;

	pthread_mutex_lock(&out.lock);
	while (out.count && out.writer_started) {
		uint64_t before = out.written;
		struct timespec ts;

		cond_deadline_in(&ts, stall_ms);
		while (out.count && out.written == before)
			if (pthread_cond_timedwait(&out.progress, &out.lock,
						   &ts) == ETIMEDOUT)
				break;
		if (out.written == before && out.count)
			break;	/* the reader stopped: give up, not hang */
	}
	empty = !out.count;
	pthread_mutex_unlock(&out.lock);
	return empty;
}

void console_stop(void)
{
	struct timespec ts;
	int i;

	pthread_mutex_lock(&out.lock);
	if (!out.writer_started) {
		pthread_mutex_unlock(&out.lock);
		return;
	}
	out.stop = true;
	pthread_cond_signal(&out.more);
	/*
	 * Again and again: a signal that lands just before the writer enters
	 * write() is lost. A writer that never answers is left behind.
	 */
	for (i = 0; i < 100 && !out.writer_exited; i++) {
		pthread_kill(out.writer, WRITER_WAKE_SIGNAL);
		cond_deadline_in(&ts, 10);
		pthread_cond_timedwait(&out.progress, &out.lock, &ts);
	}
	out.writer_started = false;
	if (!out.writer_exited) {
		pthread_detach(out.writer);
		pthread_mutex_unlock(&out.lock);
		return;
	}
	pthread_mutex_unlock(&out.lock);
	pthread_join(out.writer, NULL);
}

void console_output_stats(uint64_t *written, uint64_t *dropped,
			  size_t *queued)
{
	pthread_mutex_lock(&out.lock);
	*written = out.written;
	*dropped = out.dropped;
	*queued = out.count;
	pthread_mutex_unlock(&out.lock);
}

void console_restore(void)
{
	if (con.raw) {
		tcsetattr(con.in_fd, TCSAFLUSH, &con.saved);
		con.raw = false;
	}
}

static void console_fatal_signal(int sig)
{
	console_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void console_install_fatal_handlers(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(fatal); i++)
		signal(fatal[i], console_fatal_signal);
}

int console_init(void)
{
	struct termios raw;

	/* A reader that went away must not kill the VMM with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	console_start_writer();
	con.is_tty = isatty(con.in_fd);
	if (!con.is_tty)
		return 0;
	if (tcgetattr(con.in_fd, &con.saved) < 0) {
		con.is_tty = false;
		return 0;
	}
	raw = con.saved;
	/* Output too: the guest sends its own \r\n, lkvm's messages end in one. */
	cfmakeraw(&raw);
	if (tcsetattr(con.in_fd, TCSAFLUSH, &raw) < 0) {
		pr_warn("cannot put the terminal in raw mode: %s",
			strerror(errno));
		return 0;
	}
	con.raw = true;
	atexit(console_restore);
	console_install_fatal_handlers();
	return 0;
}

bool console_is_tty(void)
{
	return con.is_tty;
}

void console_set_sink(console_sink_fn sink, console_break_fn brk,
		      void *opaque)
{
	con.sink = sink;
	con.brk = brk;
	con.opaque = opaque;
}

int console_send_sysrq(char key)
{
	uint8_t c = key;

	if (!con.sink || !con.brk)
		return -1;
	con.brk(con.opaque);
	con.sink(con.opaque, &c, 1);
	return 0;
}

int console_input_fd(void)
{
	return con.in_fd;
}

static void console_feed(const uint8_t *buf, size_t len)
{
	if (con.sink && len)
		con.sink(con.opaque, buf, len);
}

/* Strip the escape sequences out of terminal input. */
static int console_filter_tty(uint8_t *buf, size_t len)
{
	size_t i, out = 0;

	for (i = 0; i < len; i++) {
		uint8_t c = buf[i];

		if (con.escape) {
			con.escape = false;
			if (c == 'x' || c == 'X')
				return 1;
			if (c != ESCAPE_CHAR)
				buf[out++] = ESCAPE_CHAR;
		} else if (c == ESCAPE_CHAR) {
			con.escape = true;
			continue;
		}
		buf[out++] = c;
	}
	console_feed(buf, out);
	return 0;
}

int console_read_input(void)
{
	uint8_t buf[256];
	ssize_t n;

	n = read(con.in_fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	if (con.raw)
		return console_filter_tty(buf, n);
	console_feed(buf, n);
	return 0;
}
