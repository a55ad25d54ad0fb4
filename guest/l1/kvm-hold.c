// SPDX-License-Identifier: GPL-2.0
/*
 * Runs in the nested L1 for as long as L1 lives: one idle VM with an
 * in-kernel irqchip and one vCPU that never runs.
 *
 * Why: L1 under QEMU's TCG froze now and then with both its vCPUs stopped
 * at a jump-label site in __schedule (a 5-byte nop patched by
 * text_poke_bp). Linux flips static keys whenever the first VM of a host
 * comes or the last one goes (KVM's preempt notifiers) and whenever an
 * in-kernel LAPIC is created or enabled (KVM's apic_sw_disabled), so every
 * lkvm run in L1 rewrote L1's kernel text, with cross-CPU IPIs, twice or
 * more; TCG's multi-threaded emulation of that cross-modifying code is
 * where L1 stopped. With this VM alive those counts never drop to zero:
 * no text is patched after the first lkvm run, whatever the tests do.
 *
 *   kvm-hold &      (L1's /init, before the jobs: tests/nested/nested.py,
 *                   l1shell.py, scripts/run-nested.sh)
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int vm, vcpu;

	if (kvm < 0) {
		perror("kvm-hold: /dev/kvm");
		return 1;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0 || ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0) {
		perror("kvm-hold: KVM_CREATE_VM/IRQCHIP");
		return 1;
	}
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0) {
		perror("kvm-hold: KVM_CREATE_VCPU");
		return 1;
	}
	for (;;)
		pause();
}
