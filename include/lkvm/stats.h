/* SPDX-License-Identifier: GPL-2.0 */
/* --stats: what a run cost and what the guest did, as one JSON object. */
#ifndef LKVM_STATS_H
#define LKVM_STATS_H

struct vm;

/* Write the statistics of a finished VM to path ("-" for stderr). */
int stats_write(struct vm *vm, const char *path, double wall_ms);

#endif
