/* SPDX-License-Identifier: GPL-2.0 */
/* lkvm sandbox: a VM over the host's own files (core/sandbox.c). */
#ifndef LKVM_SANDBOX_H
#define LKVM_SANDBOX_H

#include "lkvm/vm.h"

#define SANDBOX_ROOT_TAG	"lkvm-root"	/* the host's /, read-only */
#define SANDBOX_CWD_TAG		"lkvm-cwd"	/* the working directory */

/*
 * Make cfg (parsed as for lkvm run) a sandbox that runs argv (argc
 * words; none: a shell): the shares, the kernel command line and the
 * initrd with lkvm's /init. 0, or -1 after a one-line message.
 */
int sandbox_configure(struct vm_config *cfg, int argc, char **argv);

#endif
