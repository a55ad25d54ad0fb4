/* SPDX-License-Identifier: GPL-2.0 */
/* --stats: what a run cost and what the guest did, as one JSON object. */
#ifndef LKVM_STATS_H
#define LKVM_STATS_H

#include <stdbool.h>
#include <stdio.h>

struct vm;

/*
 * Make path (emptied) at set-up, so that a path that cannot be written
 * is an error before the VM runs, and Landlock has the file to allow
 * writing. "-" (stderr), or a path that is there and no regular file (a
 * terminal, a FIFO), needs nothing. 0, or -1 after a message.
 */
int stats_create(const char *path);
/* Write the statistics of a finished VM to path ("-" for stderr). */
int stats_write(struct vm *vm, const char *path, double wall_ms);
/*
 * The same object into f. live: the VM is running (lkvm stat), so its
 * counters are a moment's reading, and what devices keep in state that
 * a reset frees (virtio-blk's per-queue figures) is left out.
 */
void stats_print(struct vm *vm, FILE *f, double wall_ms, bool live);

#endif
