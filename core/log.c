// SPDX-License-Identifier: GPL-2.0
/*
 * Logging. Every message is one line on stderr prefixed with "lkvm: ", so
 * that scripts can tell lkvm's words from the guest's console output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lkvm/util.h"

enum log_level log_threshold = LOG_WARN;

static const char *const level_prefix[] = {
	[LOG_ERROR]	= "error: ",
	[LOG_WARN]	= "warning: ",
	[LOG_INFO]	= "",
	[LOG_DEBUG]	= "debug: ",
};

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t len;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	len = strlen(line);
	while (len && line[len - 1] == '\n')
		line[--len] = '\0';
	/*
	 * The terminal may be in raw mode while the guest runs: "\r\n" keeps
	 * the next line at column 0 either way.
	 */
	fprintf(stderr, "lkvm: %s%s\r\n", level_prefix[level], line);
}
