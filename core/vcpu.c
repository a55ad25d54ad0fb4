// SPDX-License-Identifier: GPL-2.0
/*
 * vCPU threads: one per vCPU, each running KVM_RUN and dispatching the
 * exits that reach user space to the I/O buses. A vCPU stops when the VM
 * is asked to exit: the main thread sets immediate_exit and kicks it with
 * SIGUSR1 so that a vCPU blocked in the kernel (halted, or an AP waiting
 * for its SIPI) returns at once.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/seccomp.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define VCPU_KICK_SIGNAL	SIGUSR1

static void vcpu_kick_handler(int sig)
{
	(void)sig;	/* only there to make KVM_RUN return -EINTR */
}

static int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned int id)
{
	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (vcpu->fd < 0) {
		pr_err("KVM_CREATE_VCPU %u: %s", id, strerror(errno));
		return -1;
	}
	vcpu->run = mmap(NULL, vm->vcpu_mmap_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		vcpu->run = NULL;
		pr_err("cannot map vCPU %u state: %s", id, strerror(errno));
		return -1;
	}
	return arch_vcpu_init(vcpu);
}

/* The coalesced ring lives in a page of every vCPU's kvm_run mapping. */
static void vcpus_find_coalesced_ring(struct vm *vm)
{
	int page = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO);
	long page_size = sysconf(_SC_PAGESIZE);

	if (page <= 0 || (long)(page + 1) * page_size > vm->vcpu_mmap_size)
		return;
	vm->coalesced_ring = (void *)((uint8_t *)vm->vcpus[0].run +
				      page * page_size);
	vm->coalesced_max = (page_size - sizeof(*vm->coalesced_ring)) /
			    sizeof(vm->coalesced_ring->coalesced_mmio[0]);
}

static void vcpu_drain_coalesced(struct vm *vm)
{
	struct kvm_coalesced_mmio_ring *ring = vm->coalesced_ring;
	unsigned int max = vm->coalesced_max;	/* fixed: this runs on every exit */

	if (!ring || __atomic_load_n(&ring->first, __ATOMIC_RELAXED) ==
		     __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&vm->coalesced_lock);
	while (ring->first != __atomic_load_n(&ring->last, __ATOMIC_ACQUIRE)) {
		struct kvm_coalesced_mmio *e = &ring->coalesced_mmio[ring->first % max];

		if (e->len <= sizeof(e->data))
			bus_access(e->pio ? &vm->pio : &vm->mmio, e->phys_addr,
				   e->data, e->len, true);
		__atomic_store_n(&ring->first, (ring->first + 1) % max,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&vm->coalesced_lock);
}

int vcpus_create(struct vm *vm)
{
	struct sigaction sa = { .sa_handler = vcpu_kick_handler };
	unsigned int i;

	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0) {
		pr_err("sigaction: %s", strerror(errno));
		return -1;
	}
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		pr_err("out of memory");
		return -1;
	}
	/* all before any: vcpus_destroy() after a failed create closes fds */
	for (i = 0; i < vm->nr_vcpus; i++)
		vm->vcpus[i].fd = -1;
	for (i = 0; i < vm->nr_vcpus; i++)
		if (vcpu_create(vm, &vm->vcpus[i], i))
			return -1;
	vcpus_find_coalesced_ring(vm);
	return 0;
}

int vcpus_boot(struct vm *vm)
{
	unsigned int i;

	for (i = 0; i < vm->nr_vcpus; i++)
		if (arch_vcpu_boot(&vm->vcpus[i]))
			return -1;
	return 0;
}

static void vcpu_handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
	uint32_t i;

	vcpu->stats.io++;
	for (i = 0; i < run->io.count; i++) {
		bus_access(&vcpu->vm->pio, run->io.port, data, run->io.size,
			   is_write);
		data += run->io.size;
	}
}

static void vcpu_handle_system_event(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;

	switch (vcpu->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		vm_request_exit(vm, EXIT_POWEROFF, "guest powered off");
		break;
	case KVM_SYSTEM_EVENT_RESET:
		vm_request_exit(vm, EXIT_GUEST_REBOOT, "guest asked to reboot");
		break;
	case KVM_SYSTEM_EVENT_CRASH:
		vm_request_exit(vm, EXIT_GUEST_PANIC, "guest crashed");
		break;
	default:
		vm_request_exit(vm, EXIT_GUEST_CRASH,
				"unknown system event %u on vCPU %u",
				vcpu->run->system_event.type, vcpu->id);
	}
}

/* Returns false when the vCPU must stop. */
static bool vcpu_handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	struct vm *vm = vcpu->vm;

	__atomic_store_n(&vcpu->stats.exits, vcpu->stats.exits + 1,
			 __ATOMIC_RELAXED);
	vcpu_drain_coalesced(vm);
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_handle_io(vcpu);
		return true;
	case KVM_EXIT_MMIO:
		vcpu->stats.mmio++;
		bus_access(&vm->mmio, run->mmio.phys_addr, run->mmio.data,
			   run->mmio.len, run->mmio.is_write);
		return true;
	case KVM_EXIT_HLT:
		vcpu->stats.hlt++;
		return true;
	case KVM_EXIT_INTR:
		vcpu->stats.intr++;
		return true;
	case KVM_EXIT_SHUTDOWN:
		vm_request_exit(vm, EXIT_GUEST_CRASH,
				"guest triple fault on vCPU %u", vcpu->id);
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		vcpu_handle_system_event(vcpu);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		vm_request_exit(vm, EXIT_GUEST_CRASH,
				"KVM internal error %u on vCPU %u (emulation failure or triple fault)",
				run->internal.suberror, vcpu->id);
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		vm_request_exit(vm, EXIT_GUEST_CRASH,
				"vCPU %u failed to enter the guest (reason %#llx)",
				vcpu->id, (unsigned long long)
				run->fail_entry.hardware_entry_failure_reason);
		return false;
	default:
		vcpu->stats.other++;
		vm_request_exit(vm, EXIT_GUEST_CRASH,
				"unexpected KVM exit %u on vCPU %u",
				run->exit_reason, vcpu->id);
		return false;
	}
}

/*
 * After a kick: stay out of KVM_RUN while the VM is paused. The kick's
 * immediate_exit is cleared under pause_lock, after the stop flag was
 * seen clear, so that a stop (which sets the flag first) is never lost.
 */
static void vcpu_park(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;

	pthread_mutex_lock(&vm->pause_lock);
	if (!vm->vcpus_stopping && vm->pause_requested) {
		__atomic_store_n(&vcpu->run->immediate_exit, 0, __ATOMIC_RELEASE);
		arch_vcpu_paused(vcpu);
		vm->nr_parked++;
		pthread_cond_broadcast(&vm->pause_cond);
		while (vm->pause_requested && !vm->vcpus_stopping)
			pthread_cond_wait(&vm->pause_cond, &vm->pause_lock);
		vm->nr_parked--;
	}
	pthread_mutex_unlock(&vm->pause_lock);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	const struct vm_config *cfg = vcpu->vm->cfg;
	bool timed = cfg->boot_profile || cfg->stats_path;
	char name[16];

	snprintf(name, sizeof(name), "vcpu%u", vcpu->id);
	pthread_setname_np(pthread_self(), name);
	if (seccomp_confine(SECCOMP_VCPU)) {
		vm_request_exit(vcpu->vm, EXIT_VMM_ERROR,
				"vCPU %u: cannot confine its thread", vcpu->id);
		return NULL;
	}
	boot_mark(vcpu->vm, BOOT_FIRST_ENTRY);
	while (!__atomic_load_n(&vcpu->vm->vcpus_stopping, __ATOMIC_ACQUIRE)) {
		uint64_t t0;

		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				vcpu->stats.intr++;
				vcpu_park(vcpu);
				continue;
			}
			vm_request_exit(vcpu->vm, EXIT_GUEST_CRASH,
					"KVM_RUN on vCPU %u: %s", vcpu->id,
					strerror(errno));
			break;
		}
		/* Two clock reads an exit only when someone will see them. */
		t0 = timed ? now_ns() : 0;
		boot_mark(vcpu->vm, BOOT_FIRST_EXIT);
		if (!vcpu_handle_exit(vcpu))
			break;
		/* the boot profile reads it from another thread */
		if (timed)
			__atomic_store_n(&vcpu->stats.handle_ns,
					 vcpu->stats.handle_ns + now_ns() - t0,
					 __ATOMIC_RELAXED);
	}
	return NULL;
}

int vcpus_start(struct vm *vm)
{
	sigset_t kick, old;
	unsigned int i;
	int ret = 0;

	/* vCPU threads inherit this mask: only they take the kick signal. */
	sigemptyset(&kick);
	sigaddset(&kick, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, &old);
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];
		int err = pthread_create(&vcpu->thread, NULL, vcpu_thread, vcpu);

		if (err) {
			pr_err("cannot start vCPU %u: %s", i, strerror(err));
			ret = -1;
			break;
		}
		vcpu->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* Out of KVM_RUN now, or at once on the next entry (immediate_exit). */
static void vcpus_kick(struct vm *vm)
{
	unsigned int i;

	for (i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];

		if (!vcpu->run)
			continue;
		__atomic_store_n(&vcpu->run->immediate_exit, 1,
				 __ATOMIC_RELEASE);
		if (vcpu->started)
			pthread_kill(vcpu->thread, VCPU_KICK_SIGNAL);
	}
}

static unsigned int vcpus_started(const struct vm *vm)
{
	unsigned int i, n = 0;

	for (i = 0; vm->vcpus && i < vm->nr_vcpus; i++)
		n += vm->vcpus[i].started;
	return n;
}

int vcpus_pause(struct vm *vm, unsigned int timeout_ms)
{
	unsigned int want = vcpus_started(vm);
	struct timespec end;
	int err = 0;

	cond_deadline_in(&end, timeout_ms);
	pthread_mutex_lock(&vm->pause_lock);
	vm->pause_requested = true;
	pthread_mutex_unlock(&vm->pause_lock);
	vcpus_kick(vm);
	pthread_mutex_lock(&vm->pause_lock);
	while (vm->nr_parked < want && !vm->vcpus_stopping && !err)
		err = pthread_cond_timedwait(&vm->pause_cond, &vm->pause_lock,
					     &end);
	err = vm->nr_parked < want;
	pthread_mutex_unlock(&vm->pause_lock);
	return err ? -1 : 0;
}

void vcpus_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->pause_lock);
	vm->pause_requested = false;
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
}

bool vcpus_paused(struct vm *vm)
{
	bool paused;

	pthread_mutex_lock(&vm->pause_lock);
	paused = vm->pause_requested;
	pthread_mutex_unlock(&vm->pause_lock);
	return paused;
}

/*
 * Every vCPU is out of KVM_RUN before any kvm_run mapping goes: each vCPU
 * drains the coalesced-MMIO ring that lives in vCPU 0's mapping.
 */
void vcpus_stop(struct vm *vm)
{
	unsigned int i;

	if (!vm->vcpus)
		return;
	pthread_mutex_lock(&vm->pause_lock);
	__atomic_store_n(&vm->vcpus_stopping, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
	vcpus_kick(vm);
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];

		if (vcpu->started)
			pthread_join(vcpu->thread, NULL);
		vcpu->started = false;
	}
}

static const char *mp_state_name(uint32_t state)
{
	static const char *const names[] = {
		[KVM_MP_STATE_RUNNABLE] = "runnable",
		[KVM_MP_STATE_UNINITIALIZED] = "uninitialized",
		[KVM_MP_STATE_INIT_RECEIVED] = "INIT received",
		[KVM_MP_STATE_HALTED] = "halted",
		[KVM_MP_STATE_SIPI_RECEIVED] = "SIPI received",
		[KVM_MP_STATE_STOPPED] = "stopped",
	};

	if (state < ARRAY_SIZE(names) && names[state])
		return names[state];
	return "unknown";
}

void vcpus_dump(struct vm *vm, FILE *f)
{
	struct kvm_mp_state mp;
	unsigned int i;

	for (i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];

		if (ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) < 0)
			mp.mp_state = ~0u;
		fprintf(f, "vcpu%u: %s, %llu exits to lkvm\n", i,
			mp_state_name(mp.mp_state),
			(unsigned long long)__atomic_load_n(&vcpu->stats.exits,
							    __ATOMIC_RELAXED));
		arch_vcpu_dump(vcpu, f);
	}
}

/*
 * Where each stopped vCPU was: a guest that hangs (a timeout) is told
 * apart from one that is slow, and an AP that never came up from a BSP
 * that spins. One line per vCPU, once per VM.
 */
void vcpus_report(struct vm *vm)
{
	struct kvm_mp_state mp;
	unsigned int i;

	if (!vm->vcpus)
		return;
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];
		char where[96];

		if (vcpu->fd < 0 || vcpu->started)
			continue;
		if (ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) < 0)
			mp.mp_state = ~0u;
		arch_vcpu_where(vcpu, where, sizeof(where));
		pr_warn("vcpu%u: %s, %s, %llu exits to lkvm", i, where,
			mp_state_name(mp.mp_state),
			(unsigned long long)vcpu->stats.exits);
	}
}

void vcpus_destroy(struct vm *vm)
{
	unsigned int i;

	if (!vm->vcpus)
		return;
	vcpus_stop(vm);
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *vcpu = &vm->vcpus[i];

		if (vcpu->run)
			munmap(vcpu->run, vm->vcpu_mmap_size);
		vcpu->run = NULL;
		if (vcpu->fd >= 0)
			close(vcpu->fd);
		vcpu->fd = -1;
	}
}
