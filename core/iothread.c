// SPDX-License-Identifier: GPL-2.0
/*
 * I/O thread event loops. Each runs epoll_wait on its sources and calls
 * their handlers; a private eventfd stops it. Sources come and go with
 * epoll_ctl, which is thread-safe, so a vCPU thread (a driver enabling a
 * queue) can register an ioeventfd while the loop runs.
 *
 * While some poller is active the loop does not sleep: each turn it calls
 * every active poller, then collects whatever events are ready without
 * waiting. A poller leaves when its window passes with no work; when none
 * is left the loop sleeps in epoll_wait again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lkvm/iothread.h"
#include "lkvm/seccomp.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define IOTHREAD_MAX_EVENTS	32
/*
 * While pollers keep the thread awake it still looks at its fds, without
 * waiting, this often: a syscall each turn would cost more than the
 * polling it interleaves with.
 */
#define IOTHREAD_SPIN_EPOLL_NS	5000
/*
 * And this often it asks whether it was preempted meanwhile: then another
 * thread wanted its CPU (a vCPU, perhaps the very one whose requests it
 * waits for), and spinning on takes the CPU from it; the pollers' windows
 * end at once. KVM's halt polling stops for the same reason
 * (single_task_running()).
 */
#define IOTHREAD_SPIN_YIELD_NS	50000

/*
 * The loop, its stop source and its pollers belong to the thread; name
 * and id are fixed; the CPU times are written by the thread as it ends
 * and read after the join. `next` links the VM's list (main thread).
 */
struct iothread {
	struct vm *vm;
	char name[16];
	unsigned int id;
	int epfd;
	struct io_source stop;
	pthread_t thread;
	pthread_t self;			/* set by the thread as it starts */
	bool self_set;			/* atomic: self is valid */
	bool running;
	bool stopping;
	struct io_poller *pollers;	/* active ones */
	uint64_t epoll_ns;		/* last look at the fds while spinning */
	uint64_t yield_ns;		/* last look at nivcsw while spinning */
	bool baselined;			/* nivcsw read since the spin began */
	long nivcsw;			/* preemptions seen so far */
	uint64_t spin_yields;		/* spins ended for a preemption */
	uint64_t user_us, sys_us;	/* CPU time, once the thread ended */
	enum seccomp_class seccomp;	/* set before the thread starts */
	struct iothread *next;
};

static void iothread_stop_handler(struct io_source *src, uint32_t events)
{
	struct iothread *t = src->opaque;
	uint64_t v;

	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("%s: stop eventfd: %s", t->name, strerror(errno));
	t->stopping = true;
}

static void iothread_register(struct vm *vm, struct iothread *t)
{
	struct iothread **pp = &vm->iothreads;

	while (*pp) {
		t->id++;
		pp = &(*pp)->next;
	}
	*pp = t;
}

struct iothread *iothread_create(struct vm *vm, const char *name)
{
	struct iothread *t = vm_zalloc(vm, sizeof(*t));

	if (!t)
		return NULL;
	t->vm = vm;
	t->seccomp = SECCOMP_IO;
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
	iothread_register(vm, t);
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

void iothread_poll_start(struct iothread *t, struct io_poller *p,
			 uint64_t window_ns)
{
	p->window_ns = window_ns;
	p->deadline_ns = now_ns() + window_ns;
	if (p->active)
		return;
	p->active = true;
	p->next = t->pollers;
	t->pollers = p;
}

/* Has p's window passed without work, and has it agreed to stop? */
static bool iothread_poller_done(struct io_poller *p, uint64_t now)
{
	if (now < p->deadline_ns)
		return false;
	if (!p->stop(p))
		return true;
	/* work came in as it stopped: once more, then a fresh window */
	p->deadline_ns = now + p->window_ns;
	return false;
}

/*
 * One turn over the active pollers. A poller's handler time does not
 * count against its window: the deadline is set after it returns.
 * True while some poller wants the thread awake; *now is the time then.
 */
static bool iothread_run_pollers(struct iothread *t, uint64_t *now_out)
{
	struct io_poller **pp = &t->pollers, *p;
	uint64_t now = now_ns();

	while ((p = *pp)) {
		enum io_poll_result r = p->poll(p);
		bool done = false;

		if (r == IO_POLL_WORK) {
			now = now_ns();
			p->deadline_ns = now + p->window_ns;
		} else {
			done = r == IO_POLL_GONE || iothread_poller_done(p, now);
		}
		if (done) {
			p->active = false;
			*pp = p->next;
		} else {
			pp = &p->next;
		}
	}
	*now_out = now;
	return t->pollers;
}

/*
 * Was the thread preempted since it last looked? Then every poller's
 * window ends now (each still turns its kicks back on in stop()).
 */
static void iothread_check_preempted(struct iothread *t, uint64_t now)
{
	struct io_poller *p;
	struct rusage ru;
	long before = t->nivcsw;

	if (t->baselined && now - t->yield_ns < IOTHREAD_SPIN_YIELD_NS)
		return;
	t->yield_ns = now;
	if (getrusage(RUSAGE_THREAD, &ru))
		return;
	t->nivcsw = ru.ru_nivcsw;
	/* what came before this spin is no news */
	if (!t->baselined) {
		t->baselined = true;
		return;
	}
	if (ru.ru_nivcsw == before)
		return;
	t->spin_yields++;
	for (p = t->pollers; p; p = p->next)
		p->deadline_ns = now;
}

/* Should a spinning thread skip this turn's look at its fds? */
static bool iothread_skip_epoll(struct iothread *t, bool spin, uint64_t now)
{
	if (!spin)
		return false;
	if (now - t->epoll_ns < IOTHREAD_SPIN_EPOLL_NS) {
		cpu_relax();
		return true;
	}
	t->epoll_ns = now;
	iothread_check_preempted(t, now);
	return false;
}

static void iothread_account_cpu(struct iothread *t)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return;
	t->user_us = ru.ru_utime.tv_sec * 1000000ULL + ru.ru_utime.tv_usec;
	t->sys_us = ru.ru_stime.tv_sec * 1000000ULL + ru.ru_stime.tv_usec;
}

static void *iothread_loop(void *arg)
{
	struct iothread *t = arg;
	struct epoll_event ev[IOTHREAD_MAX_EVENTS];

	pthread_setname_np(pthread_self(), t->name);
	if (seccomp_confine(t->seccomp)) {
		vm_request_exit(t->vm, EXIT_VMM_ERROR,
				"%s: cannot confine its thread", t->name);
		return NULL;
	}
	t->self = pthread_self();
	__atomic_store_n(&t->self_set, true, __ATOMIC_RELEASE);
	while (!t->stopping) {
		uint64_t now;
		bool spin = iothread_run_pollers(t, &now);
		int i, n;

		if (iothread_skip_epoll(t, spin, now))
			continue;
		if (!spin)
			t->baselined = false;
		n = epoll_wait(t->epfd, ev, IOTHREAD_MAX_EVENTS, spin ? 0 : -1);
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
	iothread_account_cpu(t);
	return NULL;
}

void iothread_set_seccomp(struct iothread *t, enum seccomp_class cls)
{
	t->seccomp = cls;
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
	__atomic_store_n(&t->self_set, false, __ATOMIC_RELEASE);
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
	t->stop.fd = t->epfd = -1;
}

bool iothread_is_current(const struct iothread *t)
{
	/* only the thread itself can find its own id here */
	return t && __atomic_load_n(&t->self_set, __ATOMIC_ACQUIRE) &&
	       pthread_equal(pthread_self(), t->self);
}

unsigned int iothread_id(const struct iothread *t)
{
	return t->id;
}

uint64_t iothread_spin_yields(const struct iothread *t)
{
	return t->spin_yields;
}

void iothreads_write_stats(struct vm *vm, FILE *f)
{
	const struct iothread *t;

	fprintf(f, "\"iothreads\":[");
	for (t = vm->iothreads; t; t = t->next)
		fprintf(f, "%s{\"id\":%u,\"name\":\"%s\",\"user_ms\":%.3f,"
			"\"sys_ms\":%.3f,\"spin_yields\":%llu}",
			t->id ? "," : "", t->id, t->name, t->user_us / 1e3,
			t->sys_us / 1e3, (unsigned long long)t->spin_yields);
	fprintf(f, "]");
}

int iothread_pool_create(struct iothread_pool *pool, struct vm *vm,
			 unsigned int nr)
{
	unsigned int i;

	memset(pool, 0, sizeof(*pool));
	for (i = 0; i < nr && i < IOTHREAD_POOL_MAX; i++) {
		char name[16];

		snprintf(name, sizeof(name), "io%u", i);
		pool->threads[i] = iothread_create(vm, name);
		if (!pool->threads[i])
			return -1;
		pool->nr++;
	}
	return 0;
}

int iothread_pool_start(struct iothread_pool *pool)
{
	unsigned int i;

	for (i = 0; i < pool->nr; i++)
		if (iothread_start(pool->threads[i]))
			return -1;
	return 0;
}

void iothread_pool_stop(struct iothread_pool *pool)
{
	unsigned int i;

	for (i = 0; i < pool->nr; i++)
		iothread_stop(pool->threads[i]);
}

void iothread_pool_destroy(struct iothread_pool *pool)
{
	unsigned int i;

	for (i = 0; i < pool->nr; i++)
		iothread_destroy(pool->threads[i]);
	pool->nr = 0;
}

struct iothread *iothread_pool_next(struct iothread_pool *pool)
{
	struct iothread *t;

	if (!pool || !pool->nr)
		return NULL;
	t = pool->threads[pool->next % pool->nr];
	pool->next++;
	return t;
}
