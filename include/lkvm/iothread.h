/* SPDX-License-Identifier: GPL-2.0 */
/*
 * I/O threads: event loops, each on its own thread, that wait (epoll) on
 * the file descriptors of the queues they serve: ioeventfds for guest
 * kicks, backend fds, timers. A device adds its sources to a thread; one
 * thread can serve queues of several devices.
 */
#ifndef LKVM_IOTHREAD_H
#define LKVM_IOTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

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

struct iothread;

struct iothread *iothread_create(struct vm *vm, const char *name);
int iothread_start(struct iothread *t);
/* Stop and join the thread; its sources are left registered but idle. */
void iothread_stop(struct iothread *t);
void iothread_destroy(struct iothread *t);

/* Add or remove a source; safe from any thread, also while running. */
int iothread_add(struct iothread *t, struct io_source *src, uint32_t events);
void iothread_del(struct iothread *t, struct io_source *src);

/* Is the caller this I/O thread? */
bool iothread_is_current(const struct iothread *t);

#endif
