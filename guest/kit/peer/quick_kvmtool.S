/* SPDX-License-Identifier: GPL-2.0 */
/*
 * quick_kvmtool.bin, quick_kvmtool_tf.bin: guest/kit/quick.S for kvmtool,
 * a guest whose first instructions end the VM, so that a launch measures
 * the VMM's own cost to start, run and tear down a VM
 * (tests/bench/boot_peers_bench.py's tiny-guest table).
 *
 * kvmtool has no debug-exit port, so the two ways it ends a VM from the
 * guest, one per binary, to find the faster:
 *  - quick_kvmtool.bin: the i8042 "pulse reset line" command (0xfe to port
 *    0x64). kvmtool's i8042 code calls kvm__reboot(), which signals the
 *    boot vCPU's thread; its KVM_RUN (re-entered on the hlt below) returns
 *    EINTR and the thread leaves its loop: "KVM session ended normally",
 *    exit status 0. One port exit and a signal.
 *  - quick_kvmtool_tf.bin (TRIPLE_FAULT): an empty IVT and an int3, a
 *    triple fault: KVM_EXIT_SHUTDOWN, which ends kvmtool's vCPU loop
 *    directly, also exit status 0. kvm_pvm (a software KVM) reports it as
 *    KVM_EXIT_INTERNAL_ERROR instead, which kvmtool answers with a register
 *    dump before it ends the same way.
 *
 * kvmtool loads a kernel that is not a bzImage as a flat binary at
 * 0x1000:0000 (linear 0x10000) and enters it in real mode with CS = DS =
 * 0x1000, IP = 0 (see kick_kvmtool.S); linked there by kick_kvmtool.ld.
 */
#define LOAD_ADDR	0x10000

	.section .text.entry, "ax"
	.code16
	.globl _start
_start:
#ifdef TRIPLE_FAULT
	/* DS = 0x1000: the operand is an offset from the load address. */
	lidtl qk_null_idt - LOAD_ADDR
	int3
#else
	movb $0xfe, %al
	outb %al, $0x64
#endif
1:	hlt
	jmp 1b

#ifdef TRIPLE_FAULT
	.balign 8
qk_null_idt:
	.word 0
	.long 0
#endif
