// SPDX-License-Identifier: GPL-2.0
/*
 * I/O thread event loops. Each runs epoll_wait on its sources and calls
 * their handlers; a private eventfd stops it. Sources come and go with
 * epoll_ctl, which is thread-safe, so a vCPU thread (a driver enabling a
 * queue) can register an ioeventfd while the loop runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define IOTHREAD_MAX_EVENTS	32

/* The loop and its stop source belong to the thread; the rest is fixed. */
struct iothread {
	struct vm *vm;
	char name[16];
	int epfd;
	struct io_source stop;
	pthread_t thread;
	bool running;
	bool stopping;
};

static void iothread_stop_handler(struct io_source *src, uint32_t events)
{
	struct iothread *t = src->opaque;
	uint64_t v;

	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("%s: stop eventfd: %s", t->name, strerror(errno));
	t->stopping = true;
}

struct iothread *iothread_create(struct vm *vm, const char *name)
{
	struct iothread *t = calloc(1, sizeof(*t));

	if (!t) {
		pr_err("out of memory");
		return NULL;
	}
	t->vm = vm;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	t->stop.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->stop.handler = iothread_stop_handler;
	t->stop.opaque = t;
	if (t->epfd < 0 || t->stop.fd < 0 ||
	    iothread_add(t, &t->stop, EPOLLIN)) {
		pr_err("cannot create I/O thread %s: %s", name, strerror(errno));
		iothread_destroy(t);
		return NULL;
	}
	return t;
}

int iothread_add(struct iothread *t, struct io_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, src->fd, &ev) < 0) {
		pr_err("%s: cannot watch fd %d: %s", t->name, src->fd,
		       strerror(errno));
		return -1;
	}
	return 0;
}

void iothread_del(struct iothread *t, struct io_source *src)
{
	if (epoll_ctl(t->epfd, EPOLL_CTL_DEL, src->fd, NULL) < 0 &&
	    errno != ENOENT && errno != EBADF)
		pr_warn("%s: cannot unwatch fd %d: %s", t->name, src->fd,
			strerror(errno));
}

static void *iothread_loop(void *arg)
{
	struct iothread *t = arg;
	struct epoll_event ev[IOTHREAD_MAX_EVENTS];

	pthread_setname_np(pthread_self(), t->name);
	while (!t->stopping) {
		int i, n = epoll_wait(t->epfd, ev, IOTHREAD_MAX_EVENTS, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			vm_request_exit(t->vm, EXIT_VMM_ERROR, "%s: epoll_wait: %s",
					t->name, strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			struct io_source *src = ev[i].data.ptr;

			src->handler(src, ev[i].events);
		}
	}
	return NULL;
}

int iothread_start(struct iothread *t)
{
	int err = pthread_create(&t->thread, NULL, iothread_loop, t);

	if (err) {
		pr_err("cannot start I/O thread %s: %s", t->name, strerror(err));
		return -1;
	}
	t->running = true;
	return 0;
}

void iothread_stop(struct iothread *t)
{
	uint64_t one = 1;

	if (!t || !t->running)
		return;
	if (write(t->stop.fd, &one, sizeof(one)) < 0)
		pr_warn("%s: cannot stop: %s", t->name, strerror(errno));
	pthread_join(t->thread, NULL);
	t->running = false;
}

void iothread_destroy(struct iothread *t)
{
	if (!t)
		return;
	iothread_stop(t);
	if (t->stop.fd >= 0)
		close(t->stop.fd);
	if (t->epfd >= 0)
		close(t->epfd);
	free(t);
}

bool iothread_is_current(const struct iothread *t)
{
	return t->running && pthread_equal(pthread_self(), t->thread);
}
