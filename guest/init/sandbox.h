/* SPDX-License-Identifier: GPL-2.0 */
/* lkvm sandbox inside /init (see sandbox.c). */
#ifndef LKVM_GUEST_INIT_SANDBOX_H
#define LKVM_GUEST_INIT_SANDBOX_H

#include <stdbool.h>

/* The VM's status when the sandbox cannot be set up (a mount failed). */
#define SANDBOX_SETUP_FAILED	125

/*
 * In /init (PID 1), after the modules: when lkvm made this a sandbox,
 * mount the host's root and working directory, chroot and chdir there,
 * set the command's environment and put its argv (at most max - 1
 * words) in argv. -1: not a sandbox; 0: entered; else the VM's status.
 */
int sandbox_enter(char **argv, int max);
bool sandbox_active(void);
/* In the command's process, just before exec: the caller's ids. */
void sandbox_become_user(void);

#endif
