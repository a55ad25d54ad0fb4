// SPDX-License-Identifier: GPL-2.0
/*
 * The commands that manage running VMs: list, stop, pause, resume, stat,
 * debug and balloon. Each finds the VM's socket by name in the runtime directory
 * and sends it one request (include/lkvm/control.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lkvm/control.h"
#include "lkvm/util.h"

/* How long `lkvm stop` waits for the VM's process to end. */
#define STOP_WAIT_MS	30000

struct vm_info {
	char name[CONTROL_NAME_MAX + 1];
	int pid;
	char state[16];
	unsigned int nr_vcpus;
	unsigned long long mem_mib;
};

/* The socket of VM name into path; -1 with a message when it is not there. */
static int vm_path(const char *name, char *path, size_t size)
{
	char dir[256];
	int ret;

	if (!control_name_valid(name)) {
		pr_err("'%s' is not a VM name", name);
		return -1;
	}
	ret = control_dir(dir, sizeof(dir), false);
	if (ret < 0 || control_sock_path(dir, name, path, size))
		return -1;
	if (ret > 0 || access(path, F_OK)) {
		pr_err("no VM named '%s' is running (lkvm list shows them)", name);
		return -1;
	}
	return 0;
}

/*
 * Ask one VM; a socket nobody answers on is a dead VM's, and is removed.
 * 1 when the VM is gone (stale), -1 on another failure with a message.
 */
static int ask(const char *name, const char *path, const char *request,
	       FILE *out, bool quiet_if_stale)
{
	char err[200];

	if (!control_request(path, request, out, err, sizeof(err)))
		return 0;
	if (control_remove_stale(path) > 0) {
		if (!quiet_if_stale)
			pr_err("VM '%s' is not running any more (removed its stale socket %s)",
			       name, path);
		return 1;
	}
	pr_err("%s: %s", name, err);
	return -1;
}

static int ping(const char *name, const char *path, struct vm_info *info,
		bool quiet_if_stale)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int ret;

	if (!out)
		return -1;
	ret = ask(name, path, "ping", out, quiet_if_stale);
	fclose(out);
	if (!ret && sscanf(text, "%64s %d %15s %u %llu", info->name, &info->pid,
			   info->state, &info->nr_vcpus, &info->mem_mib) != 5) {
		pr_err("%s: a reply lkvm does not understand", name);
		ret = -1;
	}
	free(text);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of every socket in the runtime directory, sorted; -1 on error. */
static int list_names(char ***names, size_t *nr)
{
	char dir[256];
	struct dirent *e;
	DIR *d;
	int ret = control_dir(dir, sizeof(dir), false);

	*names = NULL;
	*nr = 0;
	if (ret)
		return ret < 0 ? -1 : 0;
	d = opendir(dir);
	if (!d) {
		pr_err("cannot read %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name), sfx = strlen(CONTROL_SOCK_SUFFIX);
		char **more;

		if (len <= sfx || strcmp(e->d_name + len - sfx, CONTROL_SOCK_SUFFIX))
			continue;
		more = realloc(*names, (*nr + 1) * sizeof(**names));
		if (!more)
			break;
		*names = more;
		(*names)[*nr] = strndup(e->d_name, len - sfx);
		if ((*names)[*nr] && control_name_valid((*names)[*nr]))
			(*nr)++;
		else
			free((*names)[*nr]);
	}
	closedir(d);
	if (*nr)
		qsort(*names, *nr, sizeof(**names), cmp_names);
	return 0;
}

static void free_names(char **names, size_t nr)
{
	while (nr)
		free(names[--nr]);
	free(names);
}

/* For each running VM (stale sockets removed on the way). */
static int for_each_vm(int (*fn)(const char *name, const char *path,
				 const struct vm_info *info))
{
	char dir[256], path[512], **names;
	size_t nr, i;
	int ret = list_names(&names, &nr);

	if (ret || (nr && control_dir(dir, sizeof(dir), false)))
		return -1;
	for (i = 0; i < nr; i++) {
		struct vm_info info;

		if (control_sock_path(dir, names[i], path, sizeof(path)))
			continue;
		if (ping(names[i], path, &info, true) == 0 &&
		    fn(names[i], path, &info))
			ret = -1;
	}
	free_names(names, nr);
	return ret;
}

static int print_vm(const char *name, const char *path,
		    const struct vm_info *info)
{
	printf("%-24s %8d %-8s %4u %8llu\n", name, info->pid, info->state,
	       info->nr_vcpus, info->mem_mib);
	return 0;
}

static int cmd_list(int argc, char **argv)
{
	char dir[256];

	if (argc > 1) {
		pr_err("usage: lkvm list");
		return 1;
	}
	if (control_dir(dir, sizeof(dir), false) < 0)
		return 1;
	printf("%-24s %8s %-8s %4s %8s\n", "NAME", "PID", "STATE", "CPUS",
	       "MEM_MIB");
	return for_each_vm(print_vm) ? 1 : 0;
}

/*
 * Wait for the process itself to end, not only its socket: a pidfd
 * becomes readable when it has exited. Without pidfd_open (before 5.3),
 * the socket's going is the best sign there is.
 */
static int wait_gone(const char *name, const char *path, int pidfd)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	double deadline = now_ms() + STOP_WAIT_MS;

	while (now_ms() < deadline) {
		if (pidfd >= 0 ? poll(&pfd, 1, 100) > 0 : access(path, F_OK) != 0)
			return 0;
		if (pidfd < 0)
			usleep(10000);
	}
	pr_err("%s: asked to stop, still running after %u s", name,
	       STOP_WAIT_MS / 1000);
	return -1;
}

static int stop_vm(const char *name, const char *path,
		   const struct vm_info *info)
{
	int pidfd = syscall(SYS_pidfd_open, info->pid, 0);
	int ret = ask(name, path, "stop", stdout, false);

	if (!ret)
		ret = wait_gone(name, path, pidfd);
	if (pidfd >= 0)
		close(pidfd);
	return ret > 0 ? 0 : ret;
}

static int cmd_stop(int argc, char **argv)
{
	char path[512];
	struct vm_info info;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "--all"))
		return for_each_vm(stop_vm) ? 1 : 0;
	if (argc != 2 || argv[1][0] == '-') {
		pr_err("usage: lkvm stop NAME|--all");
		return 1;
	}
	if (vm_path(argv[1], path, sizeof(path)))
		return 1;
	ret = ping(argv[1], path, &info, false);
	if (!ret)
		ret = stop_vm(argv[1], path, &info);
	return ret ? 1 : 0;
}

/* pause, resume, stat: one request, its reply's body to stdout. */
static int cmd_simple(int argc, char **argv)
{
	char path[512];

	if (argc != 2 || argv[1][0] == '-') {
		pr_err("usage: lkvm %s NAME", argv[0]);
		return 1;
	}
	if (vm_path(argv[1], path, sizeof(path)) ||
	    ask(argv[1], path, argv[0], stdout, false))
		return 1;
	return 0;
}

/*
 * NAME first, or kvmtool's --name NAME anywhere, then the command's own
 * options, each handed to take() with its argument. -1: bad usage.
 */
static int parse_named(int argc, char **argv, const struct option *opts,
		       const char **name, int (*take)(int opt, void *ctx),
		       void *ctx)
{
	int c;

	if (argc > 1 && argv[1][0] != '-') {
		*name = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+n:", opts, NULL)) != -1) {
		if (c == 'n')
			*name = optarg;
		else if (c == '?' || c == ':' || take(c, ctx))
			return -1;
	}
	return *name && optind == argc ? 0 : -1;
}

struct debug_args {
	bool dump;
	const char *key;
};

static int take_debug(int opt, void *ctx)
{
	struct debug_args *a = ctx;

	if (opt == 'd')
		a->dump = true;
	else
		a->key = optarg;
	return 0;
}

static int cmd_debug(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "dump", no_argument, NULL, 'd' },
		{ "sysrq", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct debug_args a = { false, NULL };
	const char *name = NULL;
	char path[512], req[32];

	if (parse_named(argc, argv, opts, &name, take_debug, &a) ||
	    a.dump == !!a.key) {
		pr_err("usage: lkvm debug NAME --dump | --sysrq KEY");
		return 1;
	}
	if (vm_path(name, path, sizeof(path)))
		return 1;
	if (a.key)
		snprintf(req, sizeof(req), "sysrq %.8s", a.key);
	return ask(name, path, a.key ? req : "dump", stdout, false) ? 1 : 0;
}

struct balloon_args {
	char sign;		/* '+' inflate, '-' deflate, '?' both given */
	const char *mib;
};

static int take_balloon(int opt, void *ctx)
{
	struct balloon_args *a = ctx;

	a->sign = a->sign ? '?' : opt == 'i' ? '+' : '-';
	a->mib = optarg;
	return 0;
}

static int cmd_balloon(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "inflate", required_argument, NULL, 'i' },
		{ "deflate", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	struct balloon_args a = { 0, NULL };
	const char *name = NULL;
	char path[512], req[48], *end;
	unsigned long long v;

	if (parse_named(argc, argv, opts, &name, take_balloon, &a) ||
	    !a.mib || a.sign == '?') {
		pr_err("usage: lkvm balloon NAME --inflate MiB | --deflate MiB");
		return 1;
	}
	errno = 0;
	v = strtoull(a.mib, &end, 10);
	if (!isdigit((unsigned char)a.mib[0]) || *end || errno || v == 0 ||
	    v > (1ULL << 30)) {
		pr_err("balloon: '%s' is not a number of MiB (1 or more)", a.mib);
		return 1;
	}
	if (vm_path(name, path, sizeof(path)))
		return 1;
	snprintf(req, sizeof(req), "balloon %c%llu", a.sign, v);
	return ask(name, path, req, stdout, false) ? 1 : 0;
}

static const struct vmctl_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} vmctl_cmds[] = {
	{ "list", cmd_list },
	{ "stop", cmd_stop },
	{ "pause", cmd_simple },
	{ "resume", cmd_simple },
	{ "stat", cmd_simple },
	{ "debug", cmd_debug },
	{ "balloon", cmd_balloon },
};

bool vmctl_command(const char *cmd)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vmctl_cmds); i++)
		if (!strcmp(cmd, vmctl_cmds[i].name))
			return true;
	return false;
}

int vmctl_main(int argc, char **argv)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vmctl_cmds); i++)
		if (!strcmp(argv[0], vmctl_cmds[i].name))
			return vmctl_cmds[i].fn(argc, argv);
	return 1;
}
