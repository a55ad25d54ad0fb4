/* SPDX-License-Identifier: GPL-2.0 */
/*
 * I/O threads: event loops, each on its own thread, that wait (epoll) on
 * the file descriptors of the queues they serve: ioeventfds for guest
 * kicks, backend fds, timers. A device adds its sources to a thread; one
 * thread can serve queues of several devices (--iothreads N: a pool that
 * every device's queues are dealt round-robin to).
 *
 * A thread can also poll: work it looks for itself while it stays awake,
 * with nothing to wake it (a virtqueue whose guest kicks are switched
 * off). It sleeps only when no poller wants it awake, so an idle VM costs
 * no CPU however its queues are set.
 */
#ifndef LKVM_IOTHREAD_H
#define LKVM_IOTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lkvm/seccomp.h"

struct vm;
struct io_source;

/* Called on the I/O thread with the epoll events that fired. */
typedef void (*io_handler_fn)(struct io_source *src, uint32_t events);

/* Owned by whoever registers it; must outlive its registration. */
struct io_source {
	int fd;
	io_handler_fn handler;
	void *opaque;
};

enum io_poll_result {
	IO_POLL_IDLE,		/* nothing to do this time */
	IO_POLL_WORK,		/* found work and did it */
	IO_POLL_GONE,		/* stop polling me (without stop()) */
};

/*
 * Work a thread polls for. Its owner starts it from the thread itself
 * (iothread_poll_start(), say from a kick handler); the thread then calls
 * poll() on every turn of its loop, without sleeping, until window_ns has
 * passed since poll() last found work, and then calls stop(), which must
 * make sure a later piece of work wakes the thread (guest kicks back on),
 * and returns true if work came in while it did so: the thread then keeps
 * polling. Everything below is the thread's own.
 */
struct io_poller {
	enum io_poll_result (*poll)(struct io_poller *p);
	bool (*stop)(struct io_poller *p);
	void *opaque;
	uint64_t window_ns;
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC */
	bool active;
	struct io_poller *next;		/* the thread's active pollers */
};

/*
 * The thread's loop and stop source are the thread's own; name and the
 * CPU times (written by the thread as it ends, read after the join) are
 * fixed or read once it has stopped. The VM keeps every thread made for
 * it on its list (main thread only) until vm_destroy(), for --stats.
 */
struct iothread;

struct iothread *iothread_create(struct vm *vm, const char *name);
/*
 * Before iothread_start(): the seccomp class the thread confines itself
 * to (SECCOMP_IO unless told otherwise).
 */
void iothread_set_seccomp(struct iothread *t, enum seccomp_class cls);
int iothread_start(struct iothread *t);
/* Stop and join the thread; its sources are left registered but idle. */
void iothread_stop(struct iothread *t);
/* Stop it, close its descriptors; the memory stays with the VM. */
void iothread_destroy(struct iothread *t);

/* Add or remove a source; safe from any thread, also while running. */
int iothread_add(struct iothread *t, struct io_source *src, uint32_t events);
void iothread_del(struct iothread *t, struct io_source *src);

/*
 * From the thread itself: poll p until window_ns passes without work
 * (0: once more, on the next turn, before the thread may sleep). On an
 * active poller, sets a new window from now.
 */
void iothread_poll_start(struct iothread *t, struct io_poller *p,
			 uint64_t window_ns);

/* Is the caller this I/O thread? */
bool iothread_is_current(const struct iothread *t);
/* A number, unique in its VM, for --stats. */
unsigned int iothread_id(const struct iothread *t);
/* How many spins a preemption ended (read once the thread stopped). */
uint64_t iothread_spin_yields(const struct iothread *t);

/* --stats: "iothreads":[...] for every thread the VM made. */
void iothreads_write_stats(struct vm *vm, FILE *f);

/*
 * --iothreads N: N threads that serve every queue of the VM, handed out
 * round-robin. Made, started and stopped by the main thread.
 */
#define IOTHREAD_POOL_MAX	64
struct iothread_pool {
	unsigned int nr;
	unsigned int next;
	struct iothread *threads[IOTHREAD_POOL_MAX];
};

int iothread_pool_create(struct iothread_pool *pool, struct vm *vm,
			 unsigned int nr);
int iothread_pool_start(struct iothread_pool *pool);
void iothread_pool_stop(struct iothread_pool *pool);
/* Once the devices no longer use them: their descriptors closed. */
void iothread_pool_destroy(struct iothread_pool *pool);
/* The next thread in turn (main thread, while devices are made). */
struct iothread *iothread_pool_next(struct iothread_pool *pool);

#endif
