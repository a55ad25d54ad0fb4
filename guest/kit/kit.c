/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Guest-kit runtime core: the C side of start-up, the COM1 console and a
 * small printf, the failure count and final report, exceptions, the heap,
 * command-line parsing, a microsecond clock and PCI configuration access.
 */
#include "kit.h"

const struct hvm_start_info *kit_start_info;
unsigned int kit_failures;

/* ---- string helpers ---- */

/*
 * Eight bytes a step where both ends allow: where /dev/kvm emulates every
 * guest instruction (kvm_pvm: ~1 us each, string instructions no faster per
 * byte), a byte loop took 24 s to fill balloon.elf's 8 MiB.
 */
typedef uint64_t __attribute__((may_alias)) kit_word;

void *memset(void *s, int c, size_t n)
{
	unsigned char *p = s;
	uint64_t word = 0x0101010101010101ull * (unsigned char)c;

	for (; n && ((uintptr_t)p & 7); n--)
		*p++ = (unsigned char)c;
	for (; n >= 8; n -= 8, p += 8)
		*(kit_word *)p = word;
	while (n--)
		*p++ = (unsigned char)c;
	return s;
}

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (!(((uintptr_t)d | (uintptr_t)s) & 7))
		for (; n >= 8; n -= 8, d += 8, s += 8)
			*(kit_word *)d = *(const kit_word *)s;
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			break;
	}
	return 0;
}

int strcmp(const char *a, const char *b)
{
	return strncmp(a, b, (size_t)-1);
}

uint64_t kit_strtou64(const char *s, const char **end)
{
	uint64_t v = 0;
	unsigned int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	for (;; s++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		v = v * base + d;
	}
	if (end)
		*end = s;
	return v;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool kit_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int i;

	/* Each test stops at the string's end before reading past it. */
	for (i = 0; i < 6; i++, s += 3) {
		int hi = hexval(s[0]);
		int lo = hi < 0 ? -1 : hexval(s[1]);

		if (lo < 0 || s[2] != (i < 5 ? ':' : '\0'))
			return false;
		mac[i] = hi << 4 | lo;
	}
	return true;
}

/* ---- console ---- */

#define COM1_THR	(KIT_PORT_COM1 + 0)
#define COM1_LSR	(KIT_PORT_COM1 + 5)
#define LSR_THRE	0x20

static void serial_raw_putc(char c)
{
	/* Bounded: a missing or wedged UART must not hang the test. */
	for (int i = 0; i < 100000; i++) {
		if (inb(COM1_LSR) & LSR_THRE)
			break;
		cpu_relax();
	}
	outb(COM1_THR, (uint8_t)c);
}

void kit_putc(char c)
{
	if (c == '\n')
		serial_raw_putc('\r');
	serial_raw_putc(c);
}

/*
 * APs may print (say, from the exception handler) while the BSP does; a
 * bounded lock keeps lines whole without risking a deadlock when a CPU
 * faults inside printf.
 */
static volatile uint32_t console_lock;

static bool console_acquire(void)
{
	for (int i = 0; i < 1000000; i++) {
		if (!__atomic_exchange_n(&console_lock, 1, __ATOMIC_ACQUIRE))
			return true;
		cpu_relax();
	}
	return false;
}

static void console_release(bool held)
{
	if (held)
		__atomic_store_n(&console_lock, 0, __ATOMIC_RELEASE);
}

void kit_puts(const char *s)
{
	bool held = console_acquire();

	while (*s)
		kit_putc(*s++);
	console_release(held);
}

/* printf sinks: straight to the console, or into a bounded buffer. */
struct sink {
	char *buf;
	size_t size;
	size_t len;
};

static void sink_put(struct sink *sk, char c)
{
	if (sk->buf) {
		if (sk->len + 1 < sk->size)
			sk->buf[sk->len] = c;
	} else {
		kit_putc(c);
	}
	sk->len++;
}

static void put_padded(struct sink *sk, const char *s, size_t n, int width,
		       bool left, char pad)
{
	int fill = width > (int)n ? width - (int)n : 0;

	if (!left)
		while (fill-- > 0)
			sink_put(sk, pad);
	while (n--)
		sink_put(sk, *s++);
	if (left)
		while (fill-- > 0)
			sink_put(sk, ' ');
}

static void format(struct sink *sk, const char *fmt, va_list ap)
{
	static const char digits_lc[] = "0123456789abcdef";
	static const char digits_uc[] = "0123456789ABCDEF";

	for (; *fmt; fmt++) {
		char tmp[24], *p;
		bool left = false, neg = false, alt = false;
		char pad = ' ';
		int width = 0, lng = 0, prec = -1;
		unsigned int base = 10;
		const char *digits = digits_lc;
		uint64_t v;

		if (*fmt != '%') {
			sink_put(sk, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '#')
				alt = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		if (*fmt == '.') {
			prec = 0;
			while (*++fmt >= '0' && *fmt <= '9')
				prec = prec * 10 + (*fmt - '0');
		}
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}

		switch (*fmt) {
		case '\0':
			return;
		case '%':
			sink_put(sk, '%');
			continue;
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			put_padded(sk, tmp, 1, width, left, ' ');
			continue;
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t n = 0;

			if (!s)
				s = "(null)";
			/* A precision bounds the read: the string may not end. */
			while ((prec < 0 || n < (size_t)prec) && s[n])
				n++;
			put_padded(sk, s, n, width, left, ' ');
			continue;
		}
		case 'd':
		case 'i': {
			int64_t sv = lng ? va_arg(ap, int64_t) : va_arg(ap, int);

			neg = sv < 0;
			v = neg ? -(uint64_t)sv : (uint64_t)sv;
			break;
		}
		case 'u':
			v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int);
			break;
		case 'X':
			digits = digits_uc;
			/* fall through */
		case 'x':
			base = 16;
			v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int);
			if (alt) {
				sink_put(sk, '0');
				sink_put(sk, 'x');
			}
			break;
		case 'p':
			base = 16;
			v = (uintptr_t)va_arg(ap, void *);
			sink_put(sk, '0');
			sink_put(sk, 'x');
			break;
		default:
			/* Unknown conversion: show it rather than guess. */
			sink_put(sk, '%');
			sink_put(sk, *fmt);
			continue;
		}

		p = tmp + sizeof(tmp);
		do {
			*--p = digits[v % base];
			v /= base;
		} while (v);
		if (neg) {
			if (pad == '0') {
				sink_put(sk, '-');
				width = width ? width - 1 : 0;
			} else {
				*--p = '-';
			}
		}
		put_padded(sk, p, tmp + sizeof(tmp) - p, width, left, pad);
	}
}

int kit_vprintf(const char *fmt, va_list ap)
{
	struct sink sk = { 0 };
	bool held = console_acquire();

	format(&sk, fmt, ap);
	console_release(held);
	return (int)sk.len;
}

int kit_printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kit_vprintf(fmt, ap);
	va_end(ap);
	return n;
}

int kit_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	struct sink sk = { .buf = buf, .size = size };
	va_list ap;

	va_start(ap, fmt);
	format(&sk, fmt, ap);
	va_end(ap);
	if (size)
		buf[sk.len < size ? sk.len : size - 1] = '\0';
	return (int)sk.len;
}

/* ---- exit and report ---- */

void kit_exit(unsigned int status)
{
	outb(KIT_PORT_DEBUG_EXIT, (uint8_t)status);
	/* No debug-exit device: stop here so a --timeout ends the run. */
	kit_halt_forever();
}

void kit_fail(const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	struct sink sk = { .buf = msg, .size = sizeof(msg) };

	va_start(ap, fmt);
	format(&sk, fmt, ap);
	va_end(ap);
	msg[sk.len < sizeof(msg) ? sk.len : sizeof(msg) - 1] = '\0';
	__atomic_add_fetch(&kit_failures, 1, __ATOMIC_RELAXED);
	kit_printf("FAIL: %s\n", msg);
}

void kit_finish(void)
{
	unsigned int n = kit_failures;

	if (!n) {
		kit_printf("PASS: %s\n", kit_test_name);
		kit_exit(0);
	}
	kit_printf("FAIL: %s (%u failure%s)\n", kit_test_name, n,
		   n == 1 ? "" : "s");
	kit_exit(n > KIT_EXIT_MAX_FAILS ? KIT_EXIT_MAX_FAILS : n);
}

/* ---- exceptions ---- */

struct exc_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

struct idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off_mid;
	uint32_t off_hi;
	uint32_t zero;
} __packed;

extern char kit_isr_stubs[];
static struct idt_gate kit_idt[32] __attribute__((aligned(16)));

void kit_exception(struct exc_frame *f);
void kit_exception(struct exc_frame *f)
{
	uint64_t cr2;

	asm volatile("mov %%cr2, %0" : "=r"(cr2));
	kit_printf("FAIL: %s: exception %lu error %#lx at rip %#lx cr2 %#lx "
		   "rsp %#lx (apic id %u)\n", kit_test_name, f->vector,
		   f->error, f->rip, cr2, f->rsp, lapic_id());
	kit_exit(KIT_EXIT_EXCEPTION);
}

static void idt_init(void)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(kit_idt); i++) {
		uint64_t a = (uintptr_t)kit_isr_stubs + 16 * i;

		kit_idt[i] = (struct idt_gate){
			.off_lo = (uint16_t)a,
			.sel = 0x18,
			.type = 0x8e,	/* present, DPL 0, interrupt gate */
			.off_mid = (uint16_t)(a >> 16),
			.off_hi = (uint32_t)(a >> 32),
		};
	}
}

void kit_load_idt(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __packed desc = { sizeof(kit_idt) - 1, (uintptr_t)kit_idt };

	asm volatile("lidt %0" : : "m"(desc));
}

/* ---- heap ---- */

/*
 * The heap sits right after the image. Blocks carry a header with a magic
 * so that frees of wild pointers and double frees are reported instead of
 * corrupting the list; the free list is address-ordered and coalesced.
 */
#define HEAP_SIZE	(1u << 20)
#define HEAP_ALIGN	16
#define MAGIC_FREE	0x6b69742d66726565ULL
#define MAGIC_USED	0x6b69742d75736564ULL

struct block {
	uint64_t magic;
	uint64_t size;			/* including this header */
	struct block *next;		/* free blocks only */
	uint64_t pad;
};

extern char __image_end[];
static uintptr_t heap_start, heap_end;
static struct block *free_list;

static void heap_init(void)
{
	uintptr_t start = ((uintptr_t)__image_end + 4095) & ~4095UL;
	uintptr_t end = start + HEAP_SIZE;

	/* Trust the memory map when there is one: stay inside RAM. */
	if (kit_start_info && kit_start_info->memmap_paddr &&
	    kit_start_info->memmap_paddr < (1ULL << 32)) {
		const struct hvm_memmap_table_entry *e =
			kit_phys(kit_start_info->memmap_paddr);
		bool inside = false;

		for (uint32_t i = 0; i < kit_start_info->memmap_entries; i++) {
			uint64_t lo = e[i].addr, hi = e[i].addr + e[i].size;

			if (e[i].type != HVM_MEMMAP_RAM || start < lo ||
			    start >= hi)
				continue;
			inside = true;
			if (end > hi)
				end = hi & ~(HEAP_ALIGN - 1UL);
		}
		if (!inside) {
			kit_printf("kit: heap start %#lx is not in RAM\n",
				   start);
			end = start;
		}
	}
	heap_start = start;
	heap_end = end;
	free_list = NULL;
	if (end - start > 2 * sizeof(struct block)) {
		free_list = (struct block *)start;
		*free_list = (struct block){ MAGIC_FREE, end - start, NULL, 0 };
	}
}

void *kit_malloc(size_t size)
{
	struct block **pp, *b;
	uint64_t need;

	if (size > heap_end - heap_start)
		return NULL;
	need = sizeof(struct block) + ((size + HEAP_ALIGN - 1) & ~(HEAP_ALIGN - 1UL));
	for (pp = &free_list; (b = *pp); pp = &b->next) {
		if (b->size < need)
			continue;
		if (b->size - need >= 2 * sizeof(struct block)) {
			struct block *rest = (struct block *)((char *)b + need);

			*rest = (struct block){ MAGIC_FREE, b->size - need,
						b->next, 0 };
			b->size = need;
			*pp = rest;
		} else {
			*pp = b->next;
		}
		b->magic = MAGIC_USED;
		b->next = NULL;
		return b + 1;
	}
	return NULL;
}

void *kit_zalloc(size_t size)
{
	void *p = kit_malloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

bool kit_free_checked(void *p)
{
	struct block *b = (struct block *)p - 1, **pp, *prev = NULL;

	if (!p)
		return true;
	/* Check the range before touching the header at all. */
	if ((uintptr_t)p < heap_start + sizeof(*b) || (uintptr_t)p >= heap_end ||
	    ((uintptr_t)p & (HEAP_ALIGN - 1)) || b->magic != MAGIC_USED ||
	    b->size > heap_end - (uintptr_t)b)
		return false;
	b->magic = MAGIC_FREE;
	for (pp = &free_list; *pp && *pp < b; pp = &(*pp)->next)
		prev = *pp;
	b->next = *pp;
	*pp = b;
	if (b->next && (char *)b + b->size == (char *)b->next) {
		b->size += b->next->size;
		b->next = b->next->next;
	}
	if (prev && (char *)prev + prev->size == (char *)b) {
		prev->size += b->size;
		prev->next = b->next;
	}
	return true;
}

void kit_free(void *p)
{
	if (!kit_free_checked(p))
		kit_fail("heap: bad free of %p", p);
}

size_t kit_heap_free_bytes(void)
{
	size_t n = 0;

	for (struct block *b = free_list; b; b = b->next)
		n += b->size - sizeof(struct block);
	return n;
}

/* ---- memory map ---- */

uint64_t kit_ram_end(void)
{
	const struct hvm_memmap_table_entry *e;
	uint64_t end = 0;
	uint32_t i;

	if (!kit_start_info || !kit_start_info->memmap_paddr)
		return 0;
	e = kit_phys(kit_start_info->memmap_paddr);
	for (i = 0; i < kit_start_info->memmap_entries; i++)
		if (e[i].type == HVM_MEMMAP_RAM && e[i].addr + e[i].size > end)
			end = e[i].addr + e[i].size;
	return end;
}

/* ---- command line ---- */

const char *kit_cmdline(void)
{
	if (!kit_start_info || !kit_start_info->cmdline_paddr ||
	    kit_start_info->cmdline_paddr >= (1ULL << 32))
		return "";
	return kit_phys(kit_start_info->cmdline_paddr);
}

/* Finds "key" or "key=..." as a whole word; returns what follows the key. */
static const char *cmdline_find(const char *key)
{
	const char *s = kit_cmdline();
	size_t klen = strlen(key);

	while (*s) {
		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!strncmp(s, key, klen) &&
		    (s[klen] == '=' || s[klen] == ' ' || s[klen] == '\t' ||
		     s[klen] == '\n' || s[klen] == '\0'))
			return s + klen;
		while (*s && *s != ' ' && *s != '\t' && *s != '\n')
			s++;
	}
	return NULL;
}

bool kit_cmdline_has(const char *key)
{
	return cmdline_find(key) != NULL;
}

bool kit_cmdline_get(const char *key, char *buf, size_t size)
{
	const char *v = cmdline_find(key);
	size_t n = 0;

	if (!v)
		return false;
	if (*v == '=')
		v++;
	while (v[n] && v[n] != ' ' && v[n] != '\t' && v[n] != '\n')
		n++;
	if (size) {
		if (n >= size)
			n = size - 1;
		memcpy(buf, v, n);
		buf[n] = '\0';
	}
	return true;
}

uint64_t kit_cmdline_u64(const char *key, uint64_t dflt)
{
	char buf[32];
	const char *end;
	uint64_t v;

	if (!kit_cmdline_get(key, buf, sizeof(buf)) || !buf[0])
		return dflt;
	v = kit_strtou64(buf, &end);
	return *end ? dflt : v;
}

/* ---- time ---- */

#define PM_TIMER_HZ	3579545ULL

static int clock_kind;		/* 0 unknown, 1 PM timer, 2 TSC */
static uint16_t pm_tmr_port;
static uint32_t pm_tmr_mask, pm_tmr_last;
static uint64_t pm_ticks;
static uint64_t tsc_khz, tsc_base;

static uint64_t tsc_guess_khz(void)
{
	struct cpuid_regs r = cpuid(0x40000000, 0);

	/* KVM/VMware timing leaf: EAX is the TSC frequency in kHz. */
	if (r.eax >= 0x40000010) {
		r = cpuid(0x40000010, 0);
		if (r.eax)
			return r.eax;
	}
	r = cpuid(0, 0);
	if (r.eax >= 0x15) {
		struct cpuid_regs t = cpuid(0x15, 0);

		if (t.eax && t.ebx && t.ecx)
			return (uint64_t)t.ecx * t.ebx / t.eax / 1000;
	}
	if (r.eax >= 0x16) {
		struct cpuid_regs t = cpuid(0x16, 0);

		if (t.eax)
			return (uint64_t)t.eax * 1000;
	}
	return 1000000;		/* a guess: 1 GHz */
}

static void clock_init(void)
{
	const struct acpi_fadt *f = (const void *)kit_acpi_find("FACP", 0);

	clock_kind = 2;
	if (f && f->hdr.length >= offsetof(struct acpi_fadt, flags) + 4 &&
	    f->pm_tmr_blk && f->pm_tmr_len == 4 && f->pm_tmr_blk < 0x10000) {
		uint32_t a;

		pm_tmr_port = (uint16_t)f->pm_tmr_blk;
		pm_tmr_mask = (f->flags & ACPI_FADT_TMR_VAL_EXT) ?
			      0xffffffffu : 0xffffffu;
		a = inl(pm_tmr_port) & pm_tmr_mask;
		/* Use the timer only if it visibly runs. */
		for (int i = 0; i < 2000; i++) {
			pm_tmr_last = inl(pm_tmr_port) & pm_tmr_mask;
			if (pm_tmr_last != a) {
				clock_kind = 1;
				return;
			}
		}
		kit_printf("kit: PM timer at %#x does not run, using TSC\n",
			   pm_tmr_port);
	}
	tsc_khz = tsc_guess_khz();
	tsc_base = rdtsc();
}

uint64_t kit_now_us(void)
{
	if (!clock_kind)
		clock_init();
	if (clock_kind == 1) {
		uint32_t v = inl(pm_tmr_port) & pm_tmr_mask;

		pm_ticks += (v - pm_tmr_last) & pm_tmr_mask;
		pm_tmr_last = v;
		return pm_ticks * 1000000 / PM_TIMER_HZ;
	}
	return (rdtsc() - tsc_base) * 1000 / tsc_khz;
}

void kit_udelay(uint64_t us)
{
	uint64_t end = kit_now_us() + us;

	while (kit_now_us() < end)
		cpu_relax();
}

/* ---- PCI ---- */

static uint32_t pci_addr(unsigned int bus, unsigned int dev, unsigned int fn,
			 unsigned int off)
{
	return 0x80000000u | (bus & 0xff) << 16 | (dev & 0x1f) << 11 |
	       (fn & 7) << 8 | (off & 0xfc);
}

uint32_t kit_pci_read32(unsigned int bus, unsigned int dev, unsigned int fn,
			unsigned int off)
{
	outl(0xcf8, pci_addr(bus, dev, fn, off));
	return inl(0xcfc);
}

void kit_pci_write32(unsigned int bus, unsigned int dev, unsigned int fn,
		     unsigned int off, uint32_t v)
{
	outl(0xcf8, pci_addr(bus, dev, fn, off));
	outl(0xcfc, v);
}

uint16_t kit_pci_read16(unsigned int bus, unsigned int dev, unsigned int fn,
			unsigned int off)
{
	outl(0xcf8, pci_addr(bus, dev, fn, off));
	return inw(0xcfc + (off & 2));
}

uint8_t kit_pci_read8(unsigned int bus, unsigned int dev, unsigned int fn,
		      unsigned int off)
{
	outl(0xcf8, pci_addr(bus, dev, fn, off));
	return inb(0xcfc + (off & 3));
}

/* ---- entry from start.S ---- */

void kit_main(uint32_t start_info);
void kit_main(uint32_t start_info)
{
	const struct hvm_start_info *si = kit_phys(start_info);

	idt_init();
	kit_load_idt();
	if (start_info && si->magic == HVM_START_MAGIC)
		kit_start_info = si;
	else
		kit_fail("no hvm_start_info (ebx %#x)", start_info);
	heap_init();
	kit_test();
	kit_finish();
}
