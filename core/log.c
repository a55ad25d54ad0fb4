// SPDX-License-Identifier: GPL-2.0
/*
 * Logging. Every message is one line on stderr prefixed with "lkvm: ", so
 * that scripts can tell lkvm's words from the guest's console output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lkvm/util.h"

enum log_level log_threshold = LOG_WARN;

static const char *const level_prefix[] = {
	[LOG_ERROR]	= "error: ",
	[LOG_WARN]	= "warning: ",
	[LOG_INFO]	= "",
	[LOG_DEBUG]	= "debug: ",
};

static void log_line(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	/*
	 * The terminal may be in raw mode while the guest runs: "\r\n" keeps
	 * the next line at column 0 either way.
	 */
	fprintf(stderr, "lkvm: %s%s\r\n", prefix, line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	log_line(level_prefix[level], fmt, ap);
	va_end(ap);
}

void log_report(const char *fmt, ...)
{
	va_list ap;

	if (log_threshold == LOG_SILENT)
		return;
	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

static uint64_t log_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

bool log_ratelimit_allow(struct log_ratelimit *rl)
{
	uint64_t now = log_now_ms();
	uint64_t start = __atomic_load_n(&rl->window_start_ms, __ATOMIC_RELAXED);
	unsigned int held;

	/* a new window: one thread wins the swap, and tells what was held */
	if (now - start >= LOG_WINDOW_MS &&
	    __atomic_compare_exchange_n(&rl->window_start_ms, &start, now,
					false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED)) {
		__atomic_store_n(&rl->printed, 0, __ATOMIC_RELAXED);
		held = __atomic_exchange_n(&rl->held, 0, __ATOMIC_RELAXED);
		if (held)
			pr_warn("(%u more like the next line held back)", held);
	}
	if (__atomic_add_fetch(&rl->printed, 1, __ATOMIC_RELAXED) <= LOG_BURST)
		return true;
	__atomic_add_fetch(&rl->held, 1, __ATOMIC_RELAXED);
	return false;
}
