// SPDX-License-Identifier: GPL-2.0
/*
 * Loading libslirp on demand (see slirp_lib.h). The library stays loaded
 * until exit: a VM that rebooted itself opens its cards again.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "lkvm/util.h"
#include "slirp_lib.h"

#define SLIRP_SONAME	"libslirp.so.0"

static struct slirp_lib lib;
static const struct slirp_lib *loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];	/* why not, told on every call */

static bool load_symbol(void *handle, const char *name, void *slot)
{
	void *sym = dlsym(handle, name);

	if (!sym) {
		snprintf(load_error, sizeof(load_error),
			 "-n user: %s has no %s (too old a libslirp)",
			 SLIRP_SONAME, name);
		return false;
	}
	*(void **)slot = sym;
	return true;
}

static void slirp_lib_load(void)
{
	void *handle = dlopen(SLIRP_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!handle) {
		snprintf(load_error, sizeof(load_error),
			 "-n user needs libslirp (Debian's libslirp0): %s",
			 dlerror());
		return;
	}
	if (!load_symbol(handle, "slirp_new", &lib.new) ||
	    !load_symbol(handle, "slirp_cleanup", &lib.cleanup) ||
	    !load_symbol(handle, "slirp_input", &lib.input) ||
	    !load_symbol(handle, "slirp_pollfds_fill", &lib.pollfds_fill) ||
	    !load_symbol(handle, "slirp_pollfds_poll", &lib.pollfds_poll) ||
	    !load_symbol(handle, "slirp_add_hostfwd", &lib.add_hostfwd) ||
	    !load_symbol(handle, "slirp_handle_timer", &lib.handle_timer)) {
		dlclose(handle);
		return;
	}
	loaded = &lib;
}

const struct slirp_lib *slirp_lib(void)
{
	pthread_once(&load_once, slirp_lib_load);
	if (!loaded)
		pr_err("%s", load_error);
	return loaded;
}
