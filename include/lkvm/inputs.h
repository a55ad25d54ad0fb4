/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the user named on the command line, opened and checked before
 * /dev/kvm is: the kernel, initrd or firmware (mapped, decoded, fitted into
 * -m), the disks (opened and locked) and the network backends (taps
 * attached or created and their scripts run, user-mode networks with their
 * hostfwd ports bound). A missing file, a bad image, a locked disk, a busy
 * tap or port, a share that is not a directory is reported in one line before any VM exists, and on a
 * machine without a usable KVM too.
 *
 * Owned by the main thread (vm_run). Each device takes its disk or backend
 * over when it is created (leaving the entry here closed); whatever no
 * device took is closed by vm_inputs_close().
 */
#ifndef LKVM_INPUTS_H
#define LKVM_INPUTS_H

#include "lkvm/disk.h"
#include "lkvm/net.h"
#include "lkvm/vm.h"

struct arch_guest;

struct vm_inputs {
	struct arch_guest *guest;
	unsigned int nr_disks;
	struct disk disks[LKVM_MAX_DISKS];
	struct net_backend nets[LKVM_MAX_NICS];	/* as cfg->nics; none: closed */
	int share_fds[LKVM_MAX_SHARES];	/* --9p roots, O_PATH; -1: taken */
};

/* 0, or -1 after a one-line message; *in is always safe to close. */
int vm_inputs_open(struct vm_inputs *in, const struct vm_config *cfg);
/*
 * Put the guest image into vm's RAM (arch_load_guest()), then let go of the
 * kernel and initrd files; 0, or -1 after a one-line message.
 */
int vm_inputs_load_guest(struct vm_inputs *in, struct vm *vm);
void vm_inputs_close(struct vm_inputs *in);

#endif
