/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The devices the user asked for (disks, NICs): created from the VM
 * configuration after the board, stopped after the vCPUs, reported on at
 * exit (--stats, and a hint when the guest never drove one).
 */
#ifndef LKVM_DEVICES_H
#define LKVM_DEVICES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vm;
struct vm_inputs;

/* Takes the opened disks and network backends over from *in. */
int devices_create(struct vm *vm, struct vm_inputs *in);
void devices_stop(struct vm *vm);
/* Warn about devices the guest never initialised, naming the likely cause. */
void devices_report_unused(struct vm *vm);
/*
 * lkvm balloon: move the balloon's target (pages); -1 when the VM has no
 * balloon. See virtio_balloon_adjust().
 */
int devices_balloon_adjust(struct vm *vm, int64_t delta_pages,
			   uint32_t *target, uint32_t *actual);
/* The "devices" member of the --stats object (live: see stats_print()). */
void devices_write_stats(struct vm *vm, FILE *f, bool live);

#endif
