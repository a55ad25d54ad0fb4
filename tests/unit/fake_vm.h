/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A VM with no KVM under it, for unit tests of code that talks to KVM
 * through vm_ioctl(): guest RAM is a plain mapping, and the ioeventfds,
 * irqfds, GSI routes and interrupt lines that devices ask for are recorded
 * instead of made, so a test can check them and play KVM's part (a guest
 * notify that hits an ioeventfd signals its eventfd, fake_vm_notify()).
 * No vCPU can run in it.
 */
#ifndef TESTS_UNIT_FAKE_VM_H
#define TESTS_UNIT_FAKE_VM_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lkvm/vm.h"

#define FAKE_VM_MAX_IOEVENTFDS	64
#define FAKE_VM_MAX_IRQFDS	64
#define FAKE_VM_MAX_ROUTES	1024
#define FAKE_VM_MAX_GSIS	64

struct fake_ioeventfd {
	uint64_t addr;
	uint32_t len;
	bool pio;
	uint64_t datamatch;
	int fd;
};

struct fake_irqfd {
	uint32_t gsi;
	int fd;
	int resample_fd;		/* -1: edge */
};

/*
 * Written by whichever thread calls into the device (the test's, or a
 * device's I/O thread), under lock; the test reads it under lock too.
 */
struct fake_vm {
	struct vm vm;
	struct vm_config cfg;
	pthread_mutex_t lock;
	unsigned int nr_ioeventfds;
	struct fake_ioeventfd ioeventfds[FAKE_VM_MAX_IOEVENTFDS];
	unsigned int nr_irqfds;
	struct fake_irqfd irqfds[FAKE_VM_MAX_IRQFDS];
	unsigned int nr_routes;
	struct kvm_irq_routing_entry routes[FAKE_VM_MAX_ROUTES];
	unsigned int routing_commits;
	int irq_level[FAKE_VM_MAX_GSIS];
	unsigned int unexpected;	/* ioctls a fake KVM does not take */
};

/*
 * A VM of mem_mib MiB laid out as the arch lays RAM out (none with 0: the
 * test maps its own); 0 or -1.
 */
int fake_vm_init(struct fake_vm *f, uint64_t mem_mib, unsigned int nr_cpus);
void fake_vm_destroy(struct fake_vm *f);

/*
 * KVM's part of a guest write of value (len bytes) to addr: the bound
 * ioeventfd's eventfd is signalled. false when none matches, when KVM
 * would have exited to user space instead.
 */
bool fake_vm_notify(struct fake_vm *f, uint64_t addr, bool pio,
		    uint64_t value, uint32_t len);
/* The eventfd bound at addr for datamatch, or -1. */
int fake_vm_ioeventfd(struct fake_vm *f, uint64_t addr, bool pio,
		      uint64_t datamatch);
/* The eventfd bound to gsi through KVM_IRQFD, or -1. */
int fake_vm_irqfd(struct fake_vm *f, uint32_t gsi);
/* The route last committed for gsi (its first one); false if none. */
bool fake_vm_route(struct fake_vm *f, uint32_t gsi,
		   struct kvm_irq_routing_entry *out);

#endif
