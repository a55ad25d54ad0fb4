/* SPDX-License-Identifier: GPL-2.0 */
/*
 * seccomp-bpf confinement, per thread class. Every filter is built once,
 * before the first thread starts (seccomp_prepare()); each thread then
 * installs its own class's filter itself (seccomp_confine()), so that a
 * thread inherits nothing from the thread that made it, and the main
 * thread confines itself last, once every other thread exists. A syscall
 * outside a thread's list ends lkvm with EXIT_SECCOMP and one line on
 * stderr naming the thread class and the syscall.
 */
#ifndef LKVM_SECCOMP_H
#define LKVM_SECCOMP_H

#include <stdbool.h>

/* 128 + SIGSYS: what a shell shows for a process SIGSYS killed. */
#define EXIT_SECCOMP		159

enum seccomp_class {
	SECCOMP_MAIN,		/* main loop and teardown */
	SECCOMP_VCPU,		/* KVM_RUN and the exits it dispatches */
	SECCOMP_IO,		/* I/O threads: queues, disks, backends */
	SECCOMP_P9,		/* a virtio-9p device's thread: its files */
	SECCOMP_SLIRP,		/* libslirp's thread: host sockets */
	SECCOMP_CONSOLE,	/* the console's writer: stdout alone */
	SECCOMP_NR_CLASSES,
};

/*
 * Build every class's filter and install the SIGSYS handler; from then
 * on seccomp_confine() confines. 0, or -1 with the reason printed.
 */
int seccomp_prepare(void);

/*
 * Confine the calling thread to its class's list; 0 and nothing done
 * when seccomp_prepare() was never called (unit tests, --no-seccomp).
 * The thread's Landlock rules (landlock_confine()) come first, always.
 */
int seccomp_confine(enum seccomp_class cls);

/* The class's name as the death message gives it ("I/O", "vCPU"...). */
const char *seccomp_class_name(enum seccomp_class cls);

#endif
