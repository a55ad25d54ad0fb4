/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writing a newc cpio archive, the format of a Linux initramfs, to a file
 * descriptor: lkvm sandbox appends one to the guest's initrd. Entries
 * belong to root, with fixed times, so an archive is reproducible.
 */
#ifndef LKVM_CPIO_H
#define LKVM_CPIO_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Pad fd with zeroes to the 4-byte boundary where the kernel looks for
 * the next archive of a concatenated initramfs. 0 or -1 (errno set).
 */
int cpio_align(int fd);
/* One entry (a directory when mode says so: data is then ignored). */
int cpio_add(int fd, const char *name, mode_t mode, const void *data,
	     size_t len);
/* The trailer that ends an archive. */
int cpio_end(int fd);

#endif
