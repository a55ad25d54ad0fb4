// SPDX-License-Identifier: GPL-2.0
/*
 * Inside an L2 guest: print CPUID leaf 0xD and XCR0 as "@@FACT" lines and
 * say whether they agree, the way Linux's XSAVE sanity check does. A VMM
 * whose CPUID 0xD does not follow the XCR0 the guest set makes the kernel
 * warn "XSAVE consistency problem"; these lines tell which value is off.
 *
 * Facts: xcr0, cpuid_d_<sub> (eax ebx ecx edx) for the enabled features,
 * xsave_size (EBX of sub-leaf 0, the size for the current XCR0),
 * xsave_size_expected (from the per-feature offsets and sizes) and
 * xsave_ok (1 if they match). When the CPU has XSAVE but CR4.OSXSAVE is
 * off, the kernel gave up on XSAVE (that is what it does after the
 * consistency warning): xsave=disabled, xsave_ok=0, and the leaves it saw.
 *
 * Under QEMU TCG's nested SVM, XSETBV in L2 is not intercepted, so L1's KVM
 * never learns the XCR0 the L2 kernel sets and keeps reporting EBX for its
 * own idea of XCR0: a VMM that starts vCPUs with XCR0 already at the
 * supported mask (KVM_SET_XCRS) gives a consistent view there too.
 */
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>

#define XSAVE_LEGACY_AND_HEADER	576	/* FXSAVE area + XSAVE header */

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

int main(void)
{
	unsigned int a, b, c, d, max, size, expected = XSAVE_LEGACY_AND_HEADER;
	uint64_t xcr0;
	int os_enabled = 1;

	__cpuid(0, max, b, c, d);
	__cpuid(1, a, b, c, d);
	if (max < 0xd || !(c & bit_XSAVE)) {
		printf("@@FACT xsave=none\n@@FACT xsave_ok=1\n");
		return 0;
	}
	if (c & bit_OSXSAVE) {
		xcr0 = xgetbv0();
		printf("@@FACT xsave=enabled\n");
	} else {
		/* Show what the kernel would have enabled. */
		__cpuid_count(0xd, 0, a, b, c, d);
		xcr0 = (uint64_t)d << 32 | a;
		printf("@@FACT xsave=disabled\n");
		os_enabled = 0;
	}
	printf("@@FACT xcr0=%#llx\n", (unsigned long long)xcr0);
	__cpuid_count(0xd, 0, a, size, c, d);
	printf("@@FACT cpuid_d_0=%#x %#x %#x %#x\n", a, size, c, d);
	__cpuid_count(0xd, 1, a, b, c, d);
	printf("@@FACT cpuid_d_1=%#x %#x %#x %#x\n", a, b, c, d);
	/* Standard (non-compacted) layout: each feature at its own offset. */
	for (int i = 2; i < 64; i++) {
		if (!(xcr0 & (1ULL << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		printf("@@FACT cpuid_d_%d=%#x %#x %#x %#x\n", i, a, b, c, d);
		if (!(c & 1) && b + a > expected)	/* ECX[0]: XSS, not XCR0 */
			expected = b + a;
	}
	printf("@@FACT xsave_size=%u\n@@FACT xsave_size_expected=%u\n",
	       size, expected);
	printf("@@FACT xsave_ok=%d\n", size == expected && os_enabled);
	return 0;
}
