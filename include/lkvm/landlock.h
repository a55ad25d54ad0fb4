/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Landlock confinement, on top of each thread's seccomp filter: once the
 * VM is set up, lkvm can open nothing but what it was given and what run
 * time needs (the --9p shares as shared, the images as opened, the
 * control socket's directory, the --stats file, /proc/self/status and
 * statm, /etc/resolv.conf for -n user, the files the kernel doctor reads
 * at exit), make no TCP connection or listener but -n user's, signal no
 * process and reach no abstract socket outside itself where the kernel's
 * Landlock can say so. A bug that hands a thread to the guest leaves it
 * with that and no more.
 *
 * Landlock confines the calling thread, so each thread confines itself
 * as it starts, from seccomp_confine(), with the rules made so far: the
 * slirp thread starts while lkvm opens its inputs, so it has at least
 * those of landlock_prepare() (all it needs), and maybe more; the others
 * start after landlock_allow_vm(), the main thread last. (Threads share
 * their memory: one policy for all is as much as per-thread rules
 * would hold.) Each rule's rights follow
 * the kernel's Landlock ABI; a kernel without Landlock is said once at
 * -v, and lkvm runs under seccomp alone.
 */
#ifndef LKVM_LANDLOCK_H
#define LKVM_LANDLOCK_H

#include "lkvm/vm.h"

/*
 * Before the first thread starts: the ruleset, with what the slirp
 * thread needs. Nothing done for --no-landlock or without Landlock.
 * 0, or -1 after a one-line message.
 */
int landlock_prepare(const struct vm_config *cfg);

/*
 * Once the inputs are open (share_fds: the --9p roots, as in struct
 * vm_inputs) and the name is claimed (control_sock: the VM's socket, or
 * NULL): the rest of what run time needs. The --stats file must exist.
 * 0, or -1 after a one-line message.
 */
int landlock_allow_vm(const struct vm_config *cfg, const int *share_fds,
		      const char *control_sock);

/*
 * Confine the calling thread (named `who` in a message) to the rules
 * made so far; 0 and nothing done when landlock_prepare() made none.
 */
int landlock_confine(const char *who);

/* The kernel's Landlock ABI in use: 0 when lkvm is not confining. */
int landlock_abi(void);

#endif
