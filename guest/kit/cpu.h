/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86 port and memory-mapped I/O and the few CPU instructions a test
 * guest needs, as inline functions with no runtime behind them: the guest
 * kit's guests get them through kit.h, and freestanding guests built for
 * other VMMs (guest/kit/peer) include this alone.
 */
#ifndef KIT_CPU_H
#define KIT_CPU_H

#include <stdint.h>

/* ---- port and memory-mapped I/O ---- */
static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t mmio_read32(uintptr_t addr)
{
	return *(volatile uint32_t *)addr;
}

static inline void mmio_write32(uintptr_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

static inline uint8_t mmio_read8(uintptr_t addr)
{
	return *(volatile uint8_t *)addr;
}

static inline uint16_t mmio_read16(uintptr_t addr)
{
	return *(volatile uint16_t *)addr;
}

static inline void mmio_write16(uintptr_t addr, uint16_t v)
{
	*(volatile uint16_t *)addr = v;
}

static inline void mmio_write8(uintptr_t addr, uint8_t v)
{
	*(volatile uint8_t *)addr = v;
}

static inline uint64_t mmio_read64(uintptr_t addr)
{
	return *(volatile uint64_t *)addr;
}

static inline void mmio_write64(uintptr_t addr, uint64_t v)
{
	*(volatile uint64_t *)addr = v;
}

/*
 * A physical address as a pointer the compiler cannot reason about, so that
 * reading the BDA or the BIOS area does not trip its null/bounds checks.
 */
static inline void *kit_phys(uintptr_t addr)
{
	void *p = (void *)addr;

	asm("" : "+r"(p));
	return p;
}

static inline void cpu_relax(void)
{
	asm volatile("pause" ::: "memory");
}

static inline void barrier(void)
{
	asm volatile("" ::: "memory");
}

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	asm volatile("cpuid"
		     : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
		     : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#endif
