/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by every part of lkvm: logging that never aborts,
 * overflow-checked arithmetic and the usual array/alignment macros.
 */
#ifndef LKVM_UTIL_H
#define LKVM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a)		(((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((__typeof__(x))(a) - 1))
#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))
/* The structure that embeds *ptr as its member. */
#define container_of(ptr, type, member)					\
	((type *)((char *)(ptr) - offsetof(type, member)))
#define KiB			(1024ULL)
#define MiB			(1024ULL * KiB)
#define GiB			(1024ULL * MiB)

/* An ASan build (gcc's or clang's), whose runtime needs more at exit. */
#if defined(__SANITIZE_ADDRESS__)
#define LKVM_SANITIZED	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LKVM_SANITIZED	1
#endif
#endif

enum log_level {
	LOG_SILENT = -1,	/* threshold only: print nothing */
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

/* Messages at or below this level are printed; -v raises it, -q lowers it. */
extern enum log_level log_threshold;

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pr_err(...)	log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)
/* What the user asked to see (--boot-profile): printed even with -q. */
void log_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a warning the first time this call site is reached, never again. */
#define pr_warn_once(...)						\
	do {								\
		static int warned_;					\
		if (!__atomic_exchange_n(&warned_, 1, __ATOMIC_RELAXED))	\
			pr_warn(__VA_ARGS__);				\
	} while (0)

/*
 * For messages a guest can trigger over and over: at most LOG_BURST per
 * LOG_WINDOW_MS from one call site, then one line saying how many were
 * held back once the window ends. Shared by every thread (atomics).
 */
#define LOG_BURST	5
#define LOG_WINDOW_MS	5000
struct log_ratelimit {
	uint64_t window_start_ms;
	unsigned int printed;
	unsigned int held;
};

/* May this call site print now? (Counts what it holds back.) */
bool log_ratelimit_allow(struct log_ratelimit *rl);

#define pr_warn_ratelimited(...)					\
	do {								\
		static struct log_ratelimit rl_;			\
		if (log_ratelimit_allow(&rl_))				\
			pr_warn(__VA_ARGS__);				\
	} while (0)

/* true when a + b does not fit; *sum is only meaningful on false */
static inline bool u64_add_overflows(uint64_t a, uint64_t b, uint64_t *sum)
{
	return __builtin_add_overflow(a, b, sum);
}

/* true when [start, start + len) lies inside [base, base + size) */
static inline bool range_within(uint64_t start, uint64_t len,
				uint64_t base, uint64_t size)
{
	uint64_t end, limit;

	if (u64_add_overflows(start, len, &end) ||
	    u64_add_overflows(base, size, &limit))
		return false;
	return start >= base && end <= limit;
}

/* The byte that makes a firmware table's bytes sum to zero (ACPI, MP). */
static inline uint8_t table_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return -sum;
}

/* In a busy-wait: let a sibling hyperthread (or the host) have the core. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* CLOCK_MONOTONIC in milliseconds: the same clock in every process. */
double now_ms(void);
/* The same clock in nanoseconds. */
uint64_t now_ns(void);
/*
 * poll()'s timeout for a deadline on that clock (0: none, -1 returned),
 * rounded up, and at most INT_MAX ms (24.8 days): a caller whose poll()
 * timed out checks the clock before it takes the deadline as passed.
 */
int poll_timeout_ms(double deadline_ms, double now);
/*
 * *ts = ms from now on CLOCK_REALTIME, the clock pthread_cond_timedwait()
 * waits on by default.
 */
struct timespec;
void cond_deadline_in(struct timespec *ts, unsigned int ms);

/* All of buf to fd, through short writes and EINTR: 0, or -1 with errno. */
int write_all(int fd, const void *buf, size_t len);

/*
 * Append the whole file at path to dst (at dst's offset), by sendfile:
 * 0, or -1 with errno set.
 */
int copy_file_into(int dst, const char *path);

/* Parse an unsigned decimal number; false on junk, sign or overflow. */
bool parse_u64(const char *s, uint64_t *val);

#endif
