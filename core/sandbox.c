// SPDX-License-Identifier: GPL-2.0
/*
 * lkvm sandbox [run options] -- CMD [ARGS]: a `run` configuration turned
 * into a throwaway VM over the host's own files. The host's root is
 * shared read-only ("lkvm-root") and the working directory read-write
 * ("lkvm-cwd"); the guest's initrd is the one given (or the default
 * guest's: its modules) followed by a small archive of lkvm's own: the
 * /init built into this binary (guest/init) and the records telling it
 * what to run, as whom and where (guest/init/sandbox.c). The command's
 * exit status comes back through the debug-exit port as lkvm's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/cpio.h"
#include "lkvm/sandbox.h"
#include "lkvm/util.h"

#define RECORDS_MAX	(256 * 1024)	/* guest/init/sandbox.c's SANDBOX_MAX */
#define PARAMS_MAX	4096

extern const char sandbox_init_start[], sandbox_init_end[];

/* The host's environment the command keeps. */
static const char *const kept_env[] = {
	"PATH", "HOME", "TERM", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ",
};

struct records {
	char buf[RECORDS_MAX];
	size_t len;
	bool full;
};

static void record(struct records *r, const char *key, const char *value)
{
	int n = snprintf(r->buf + r->len, sizeof(r->buf) - r->len, "%s=%s",
			 key, value);

	if (n < 0 || (size_t)n + 1 > sizeof(r->buf) - r->len) {
		r->full = true;
		return;
	}
	r->len += n + 1;	/* with its NUL */
}

static void make_records(struct records *r, const char *cwd, int argc,
			 char **argv)
{
	char num[16], env[4096];
	unsigned int i;
	int a;

	snprintf(num, sizeof(num), "%u", (unsigned int)getuid());
	record(r, "uid", num);
	snprintf(num, sizeof(num), "%u", (unsigned int)getgid());
	record(r, "gid", num);
	record(r, "cwd", cwd);
	if (!isatty(STDOUT_FILENO))
		record(r, "rawout", "1");
	for (i = 0; i < ARRAY_SIZE(kept_env); i++) {
		const char *v = getenv(kept_env[i]);

		if (v && snprintf(env, sizeof(env), "%s=%s", kept_env[i], v) <
				 (int)sizeof(env))
			record(r, "env", env);
	}
	for (a = 0; a < argc; a++)
		record(r, "arg", argv[a]);
}

/* The initrd: cfg's, then lkvm's archive; its name in cfg->initrd. */
static int make_initrd(struct vm_config *cfg, const struct records *r)
{
	static char name[32];
	int fd = memfd_create("lkvm-sandbox-initrd", 0);

	if (fd < 0) {
		pr_err("memfd_create: %s", strerror(errno));
		return -1;
	}
	if (cfg->initrd && copy_file_into(fd, cfg->initrd)) {
		pr_err("initrd %s: %s", cfg->initrd, strerror(errno));
		close(fd);
		return -1;
	}
	if (cpio_align(fd) ||
	    cpio_add(fd, "etc", S_IFDIR | 0755, NULL, 0) ||
	    cpio_add(fd, "etc/lkvm", S_IFDIR | 0755, NULL, 0) ||
	    cpio_add(fd, "init", S_IFREG | 0755, sandbox_init_start,
		     sandbox_init_end - sandbox_init_start) ||
	    cpio_add(fd, "etc/lkvm/sandbox", S_IFREG | 0644, r->buf, r->len) ||
	    cpio_end(fd)) {
		pr_err("cannot make the sandbox's initrd: %s", strerror(errno));
		close(fd);
		return -1;
	}
	/* the fd stays open for the VM's life; the loader opens it by name */
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	cfg->initrd = name;
	return 0;
}

static int add_share(struct vm_config *cfg, const char *path,
		     const char *tag, bool ro)
{
	struct share_config *sh = &cfg->shares[cfg->nr_shares];
	unsigned int i;

	for (i = 0; i < cfg->nr_shares; i++)
		if (!strcmp(cfg->shares[i].tag, tag)) {
			pr_err("--9p: the tag '%s' is lkvm sandbox's own", tag);
			return -1;
		}
	if (cfg->nr_shares == LKVM_MAX_SHARES) {
		pr_err("--9p: lkvm sandbox needs two of the %d shares",
		       LKVM_MAX_SHARES);
		return -1;
	}
	snprintf(sh->path, sizeof(sh->path), "%s", path);
	snprintf(sh->tag, sizeof(sh->tag), "%s", tag);
	sh->ro = ro;
	cfg->nr_shares++;
	return 0;
}

static int add_params(struct vm_config *cfg)
{
	static char params[PARAMS_MAX];
	const char *base = cfg->params ? cfg->params : arch_default_params;

	/* only the command's output on the console, and panics */
	if (snprintf(params, sizeof(params), "%s quiet loglevel=1", base) >=
	    (int)sizeof(params)) {
		pr_err("the kernel command line is too long");
		return -1;
	}
	cfg->params = params;
	return 0;
}

/*
 * The command runs here to be kept from the host: its user-mode network
 * does not reach the host's loopback services unless the user says
 * host_loopback=on.
 */
static void protect_host_loopback(struct vm_config *cfg)
{
	unsigned int i;

	for (i = 0; i < cfg->nr_nics; i++)
		if (cfg->nics[i].mode == NET_MODE_USER &&
		    cfg->nics[i].host_loopback == NET_HOST_LOOPBACK_DEFAULT)
			cfg->nics[i].host_loopback = NET_HOST_LOOPBACK_OFF;
}

int sandbox_configure(struct vm_config *cfg, int argc, char **argv)
{
	static struct records r;
	char cwd[PATH_MAX];

	if (cfg->firmware || cfg->root_share) {
		pr_err("lkvm sandbox boots a Linux kernel on the host's root: drop %s",
		       cfg->firmware ? "--firmware" : "-d DIR");
		return -1;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		pr_err("lkvm sandbox: the working directory: %s",
		       strerror(errno));
		return -1;
	}
	make_records(&r, cwd, argc, argv);
	if (r.full) {
		pr_err("lkvm sandbox: the command and its environment are over %d KiB",
		       RECORDS_MAX / 1024);
		return -1;
	}
	protect_host_loopback(cfg);
	if (add_share(cfg, "/", SANDBOX_ROOT_TAG, true) ||
	    (strcmp(cwd, "/") && add_share(cfg, cwd, SANDBOX_CWD_TAG, false)))
		return -1;
	return add_params(cfg) || make_initrd(cfg, &r) ? -1 : 0;
}
