// SPDX-License-Identifier: GPL-2.0
/*
 * I/O thread pollers (core/iothread.c): a poller runs on every turn while
 * it finds work and until its window passes without any, then stop()
 * ends it (or keeps it when work raced in); a thread that polls still
 * serves its file descriptors; and a spinning thread that gets preempted
 * (another thread wants its CPU) ends its windows at once instead of
 * taking the CPU for the rest of them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/iothread.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define MS	1000000ULL

struct fixture {
	struct vm vm;
	struct vm_config cfg;
	struct iothread *t;
	struct io_source start;		/* writing it starts the poller */
	struct io_source other;		/* a second fd: served while polling */
	struct io_poller p;
	uint64_t window_ns;
	/* the poller's script and record, read once the thread stopped */
	unsigned int work_left;		/* polls that find work */
	unsigned int keep_left;		/* stops that say "work raced in" */
	unsigned int polls, stops, others;
	uint64_t started_ns, stopped_ns;
};

static enum io_poll_result fake_poll(struct io_poller *p)
{
	struct fixture *f = p->opaque;

	__atomic_add_fetch(&f->polls, 1, __ATOMIC_RELAXED);
	if (f->work_left) {
		f->work_left--;
		return IO_POLL_WORK;
	}
	return IO_POLL_IDLE;
}

static bool fake_stop(struct io_poller *p)
{
	struct fixture *f = p->opaque;

	__atomic_store_n(&f->stopped_ns, now_ns(), __ATOMIC_RELEASE);
	__atomic_add_fetch(&f->stops, 1, __ATOMIC_RELAXED);
	if (f->keep_left) {
		f->keep_left--;
		return true;
	}
	return false;
}

static void drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		fail_msg("read: %s", strerror(errno));
}

static void start_handler(struct io_source *src, uint32_t events)
{
	struct fixture *f = src->opaque;

	drain(src->fd);
	f->started_ns = now_ns();
	iothread_poll_start(f->t, &f->p, f->window_ns);
}

static void other_handler(struct io_source *src, uint32_t events)
{
	struct fixture *f = src->opaque;

	drain(src->fd);
	__atomic_add_fetch(&f->others, 1, __ATOMIC_RELAXED);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->cfg.nr_cpus = 1;
	assert_int_equal(vm_init(&f->vm, &f->cfg), 0);
	f->t = iothread_create(&f->vm, "test-io");
	assert_non_null(f->t);
	f->start = (struct io_source) {
		.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
		.handler = start_handler, .opaque = f,
	};
	f->other = (struct io_source) {
		.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
		.handler = other_handler, .opaque = f,
	};
	f->p = (struct io_poller) {
		.poll = fake_poll, .stop = fake_stop, .opaque = f,
	};
	assert_int_equal(iothread_add(f->t, &f->start, EPOLLIN), 0);
	assert_int_equal(iothread_add(f->t, &f->other, EPOLLIN), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	iothread_destroy(f->t);
	close(f->start.fd);
	close(f->other.fd);
	vm_destroy(&f->vm);
	free(f);
	return 0;
}

static void kick(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

/* Wait (bounded) until the poller has stopped `n` times. */
static void wait_stops(struct fixture *f, unsigned int n, uint64_t max_ns)
{
	uint64_t end = now_ns() + max_ns;

	while (__atomic_load_n(&f->stops, __ATOMIC_ACQUIRE) < n) {
		assert_true(now_ns() < end);
		usleep(1000);
	}
}

static void test_window_runs_out_after_the_last_work(void **state)
{
	struct fixture *f = *state;

	f->window_ns = 20 * MS;
	f->work_left = 5;
	assert_int_equal(iothread_start(f->t), 0);
	kick(f->start.fd);
	wait_stops(f, 1, 5000 * MS);
	usleep(50000);
	iothread_stop(f->t);
	/* polled until the window passed (unless another thread took the
	 * CPU meanwhile: a loaded host), stopped once */
	assert_int_equal(f->stops, 1);
	assert_true(f->polls > 5);
	assert_true(f->stopped_ns - f->started_ns >= 20 * MS ||
		    iothread_spin_yields(f->t) > 0);
}

static void test_work_at_stop_keeps_polling(void **state)
{
	struct fixture *f = *state;

	f->window_ns = 1 * MS;
	f->keep_left = 2;
	assert_int_equal(iothread_start(f->t), 0);
	kick(f->start.fd);
	wait_stops(f, 3, 5000 * MS);
	usleep(20000);
	iothread_stop(f->t);
	/* two stops said "work came in": a fresh window each, then done */
	assert_int_equal(f->stops, 3);
	assert_true(f->stopped_ns - f->started_ns >= 3 * MS ||
		    iothread_spin_yields(f->t) > 0);
}

static void test_fds_served_while_polling(void **state)
{
	struct fixture *f = *state;
	unsigned int i;

	f->window_ns = 10000 * MS;	/* polls all through, unless preempted */
	assert_int_equal(iothread_start(f->t), 0);
	kick(f->start.fd);
	for (i = 0; i < 5; i++) {
		uint64_t end = now_ns() + 2000 * MS;

		kick(f->other.fd);
		while (__atomic_load_n(&f->others, __ATOMIC_ACQUIRE) < i + 1) {
			assert_true(now_ns() < end);
			usleep(200);
		}
	}
	iothread_stop(f->t);
}

static void *hog(void *arg)
{
	bool *stop = arg;

	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/*
 * The thread and a busy thread on one CPU: the spin ends at its first
 * preemption, long before its 10 s window.
 */
static void test_preempted_spin_ends(void **state)
{
	struct fixture *f = *state;
	cpu_set_t one, all;
	bool stop = false;
	pthread_t h;

	f->window_ns = 10000 * MS;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	/* both threads inherit the one CPU */
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(iothread_start(f->t), 0);
	assert_int_equal(pthread_create(&h, NULL, hog, &stop), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	usleep(20000);
	kick(f->start.fd);
	wait_stops(f, 1, 3000 * MS);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	pthread_join(h, NULL);
	iothread_stop(f->t);
	assert_true(f->stopped_ns - f->started_ns < 2000 * MS);
	assert_true(iothread_spin_yields(f->t) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_window_runs_out_after_the_last_work, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_work_at_stop_keeps_polling,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fds_served_while_polling,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_preempted_spin_ends,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
