/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For tests that stand in front of the C library's file calls to watch
 * what lkvm does with its files (test_qcow2_crash.c, fuzz_qcow2.c): a
 * function of this binary named as libc's is the one lkvm's code calls,
 * and it calls libc's own, the next definition of its name.
 */
#ifndef TESTS_UNIT_LIBC_NEXT_H
#define TESTS_UNIT_LIBC_NEXT_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>

/* The next definition of `name` into the function pointer f, once. */
#define LIBC_NEXT(f, name)						\
	do {								\
		if (!(f))						\
			(f) = dlsym(RTLD_NEXT, name);			\
		if (!(f))						\
			abort();					\
	} while (0)

/* open()'s optional mode, after the flags argument `last`. */
#define OPEN_MODE(last, mode)						\
	do {								\
		va_list ap_;						\
		va_start(ap_, last);					\
		(mode) = va_arg(ap_, int);				\
		va_end(ap_);						\
	} while (0)

#endif
