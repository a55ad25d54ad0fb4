/* SPDX-License-Identifier: GPL-2.0 */
/*
 * firmware.bin: a 64 KiB raw real-mode firmware image for lkvm -f. The VMM
 * maps it to end at 4 GiB (and at 1 MiB) and starts the boot CPU at the
 * reset vector, CS base 0xffff0000 IP 0xfff0. The code prints "firmware ok"
 * on COM1 and exits with status 0x42 through the debug-exit port. It only
 * uses near jumps and CS-relative data, so it runs whichever alias CS
 * points at and needs neither a stack nor RAM.
 */

#define COM1		0x3f8
#define DEBUG_EXIT	0x501
#define FW_STATUS	0x42

	.code16
	.section .text, "ax"
	.globl fw_start
fw_start:
	cli
	cld
	xorw %si, %si
next_char:
	movb %cs:message(%si), %bl
	testb %bl, %bl
	jz done
	movw $(COM1 + 5), %dx
	movw $0xffff, %cx
wait_thre:
	inb %dx, %al
	testb $0x20, %al
	jnz send
	loop wait_thre
send:
	movw $COM1, %dx
	movb %bl, %al
	outb %al, %dx
	incw %si
	jmp next_char
done:
	movw $DEBUG_EXIT, %dx
	movb $FW_STATUS, %al
	outb %al, %dx
halt:
	hlt
	jmp halt

message:
	.asciz "firmware ok\r\n"

	/* The reset vector: the last 16 bytes of the 64 KiB image. */
	.org 0xfff0
reset_vector:
	cli
	jmp fw_start
	.org 0x10000
