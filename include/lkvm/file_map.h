/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel, initrd and firmware files mapped read-only instead of read into
 * a private copy: the loaders parse the mapping and copy from it straight
 * into guest RAM, so a 60 MiB vmlinux costs no second copy and its zero
 * pages are never touched. A mapped file that shrinks while lkvm reads it
 * would raise SIGBUS; mapped_file_guard() turns that into an error.
 *
 * Main thread only, before the vCPUs run.
 */
#ifndef LKVM_FILE_MAP_H
#define LKVM_FILE_MAP_H

#include <stddef.h>

struct mapped_file {
	const void *data;	/* NULL when not mapped */
	size_t size;
	const char *path;	/* for messages; the caller's string */
	const char *what;	/* "kernel", "initrd", "firmware" */
};

/*
 * Map the whole regular file `path`; -1 with a one-line message naming it
 * (`what`) when it cannot be opened, is not a regular file, is empty or is
 * larger than 2 GiB. A guard page follows the mapping, so a read past the
 * file's last page faults instead of reading whatever lies beyond.
 */
int map_file(const char *path, const char *what, struct mapped_file *f);
void unmap_file(struct mapped_file *f);

/*
 * Run fn(arg) in this thread with a SIGBUS in a mapped file (it was
 * truncated under lkvm) reported as "<what> '<path>' shrank while lkvm
 * read it" and -1 returned instead of the process dying. Anything fn
 * allocated before the fault is left to process exit.
 */
int mapped_file_guard(int (*fn)(void *arg), void *arg);

#endif
