/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a boot's time goes, on lkvm's clock: the milestones a kernel
 * developer asks about (lkvm started, the guest's first instruction, its
 * first console byte, the kernel's banner and its "Run /init", our init
 * starting, the exit request), each with the exits to lkvm and the vCPU
 * time spent in lkvm handling them since lkvm started. Printed with
 * --boot-profile, and in --stats as "boot".
 */
#ifndef LKVM_BOOT_PROFILE_H
#define LKVM_BOOT_PROFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum boot_mark {
	BOOT_VMM_START,		/* main(): the clock's zero */
	BOOT_INPUTS_OPEN,	/* kernel, disks, networks opened and checked */
	BOOT_VM_BUILT,		/* VM, devices, guest image in memory */
	BOOT_FIRST_ENTRY,	/* a vCPU first enters KVM_RUN */
	BOOT_FIRST_EXIT,	/* the guest's first exit to lkvm */
	BOOT_FIRST_CONSOLE,	/* its first byte on the serial console */
	BOOT_KERNEL_BANNER,	/* Linux's "Linux version" line */
	BOOT_KERNEL_RUN_INIT,	/* Linux's "Run /init as init process" */
	BOOT_INIT_START,	/* the guest's init wrote the boot-marker port */
	BOOT_EXIT,		/* something asked the VM to end */
	BOOT_NR_MARKS,
};

/* The guest's init writes any byte here when it starts (guest/init). */
#define BOOT_MARKER_PORT	0x502

#define BOOT_LINE_MAX		160
#define BOOT_DETAIL_MAX		24

struct boot_mark_rec {
	bool set;
	double ms;			/* since BOOT_VMM_START */
	uint64_t exits;			/* all vCPUs', so far */
	uint64_t vmm_ns;		/* vCPU time handling them, so far */
	char detail[BOOT_DETAIL_MAX];	/* the kernel's own timestamp */
};

/*
 * Part of struct vm. `lock` guards marks (set once each, from any
 * thread); the console line is the UART's, under the UART's lock.
 */
struct boot_profile {
	double start_ms;
	pthread_mutex_t lock;
	struct boot_mark_rec marks[BOOT_NR_MARKS];
	char line[BOOT_LINE_MAX];
	unsigned int line_len;
};

struct bus;
struct vm;

/* The clock's zero: lkvm's start, or this boot's when it reboots. */
void boot_profile_start(double start_ms);
void boot_profile_init(struct vm *vm);
/* Records m the first time only; later calls cost one load. */
void boot_mark(struct vm *vm, enum boot_mark m);
/* The same for something that happened at at_ms (now_ms()'s clock). */
void boot_mark_at(struct vm *vm, enum boot_mark m, double at_ms);
/* Every byte the guest sends to the console, in order. */
void boot_profile_console(struct vm *vm, uint8_t c);
const char *boot_mark_name(enum boot_mark m);
void boot_profile_write_json(struct vm *vm, FILE *f);
void boot_profile_print(struct vm *vm);
int boot_marker_init(struct vm *vm, struct bus *bus, uint64_t base);

#endif
