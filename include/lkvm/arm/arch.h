/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 arch code's shared state and its parts: the in-kernel GIC
 * (arm/gic.c), the vCPUs (arm/cpu.c), the board and boot (arm/arch.c).
 */
#ifndef LKVM_ARM_ARCH_H
#define LKVM_ARM_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "lkvm/arm/image.h"

struct vm;

/*
 * Built by the main thread in arch_vm_init() and arch_load_guest();
 * read-only once the vCPUs run.
 */
struct arch_vm {
	unsigned int gic_version;	/* 2 or 3 */
	int gic_fd;			/* the vGIC device */
	int its_fd;			/* GICv3 ITS, or -1 */
	struct arm64_boot_layout boot;	/* where the Image, tree, initrd are */
	uint64_t initrd_size;
	uint64_t *mpidr;		/* per vCPU, read back from KVM */
};

int arm_gic_create(struct vm *vm);
/* After every vCPU exists: the vGIC sizes its redistributors then. */
int arm_gic_finalize(struct vm *vm);
void arm_gic_close(struct arch_vm *arch);

#endif
