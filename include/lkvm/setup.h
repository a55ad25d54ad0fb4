/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lkvm setup NAME: a directory to boot as a guest's root file system over
 * virtio-9p (lkvm run -d NAME), as kvmtool's setup makes one.
 */
#ifndef LKVM_SETUP_H
#define LKVM_SETUP_H

#include <stddef.h>

#define ROOT_DIR_TAG	"lkvm-rootfs"	/* -d DIR's 9p share */

/* Where lkvm setup keeps NAME: $LKVM_HOME/NAME, else ~/.lkvm/NAME. */
int setup_dir(const char *name, char *buf, size_t size);
/* lkvm setup NAME (argv[0] is "setup"): the exit status. */
int setup_main(int argc, char **argv);

#endif
