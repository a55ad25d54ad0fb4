// SPDX-License-Identifier: GPL-2.0
/*
 * lkvm setup NAME: a minimal root file system in ~/.lkvm/NAME for
 * `lkvm run -d NAME`: the usual top-level folders, a static busybox with
 * a link per applet (init among them), and /etc files a shell and login
 * tools expect. What the guest writes there stays, for the next boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/control.h"
#include "lkvm/setup.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

static const char *const folders[] = {
	"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "dev", "proc",
	"sys", "tmp", "run", "root", "home", "mnt", "var", "var/tmp", "lib",
};

static const char *const etc_files[][2] = {
	{ "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n" },
	{ "etc/group", "root:x:0:\n" },
	{ "etc/hostname", "lkvm\n" },
	{ "etc/profile", "export PATH=/bin:/sbin:/usr/bin:/usr/sbin\n" },
};

int setup_dir(const char *name, char *buf, size_t size)
{
	const char *base = getenv("LKVM_HOME");
	const char *home = getenv("HOME");
	char copy[256];
	int n;

	snprintf(copy, sizeof(copy), "%s", name);
	if (base && *base)
		n = snprintf(buf, size, "%s/%s", base, copy);
	else
		n = snprintf(buf, size, "%s/.lkvm/%s", home && *home ? home : "/",
			     copy);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int copy_exec(const char *src, const char *dst)
{
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	int ret = out < 0 ? -1 : copy_file_into(out, src);

	if (out >= 0)
		close(out);
	return ret;
}

/* A link in bin/ for every applet busybox --list names. */
static int link_applets(const char *root, const char *busybox)
{
	char cmd[PATH_MAX + 16], applet[128], link[PATH_MAX + 160];
	FILE *list;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "'%s' --list", busybox);
	list = popen(cmd, "re");
	if (!list)
		return -1;
	while (fgets(applet, sizeof(applet), list)) {
		applet[strcspn(applet, "\n")] = '\0';
		if (!*applet || strchr(applet, '/') || !strcmp(applet, "busybox"))
			continue;
		snprintf(link, sizeof(link), "%s/%s/%s", root,
			 strcmp(applet, "init") ? "bin" : "sbin", applet);
		if (!symlink("/bin/busybox", link))
			n++;
	}
	return pclose(list) == 0 && n ? 0 : -1;
}

static int populate(const char *root, const char *busybox)
{
	char path[PATH_MAX + 64];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(folders); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, folders[i]);
		if (mkdir(path, strcmp(folders[i], "tmp") ? 0755 : 01777) ||
		    (!strcmp(folders[i], "tmp") && chmod(path, 01777)))
			return -1;
	}
	for (i = 0; i < ARRAY_SIZE(etc_files); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", root, etc_files[i][0]);
		f = fopen(path, "wx");
		if (!f || fputs(etc_files[i][1], f) < 0 || fclose(f))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/bin/busybox", root);
	if (copy_exec(busybox, path))
		return -1;
	return link_applets(root, busybox);
}

/* A busybox that runs without the host's libraries: a static one. */
static const char *find_busybox(void)
{
	static const char *const candidates[] = {
		"/bin/busybox", "/usr/bin/busybox",
	};
	const char *env = getenv("LKVM_BUSYBOX");
	unsigned int i;

	if (env && *env)
		return access(env, X_OK) ? NULL : env;
	for (i = 0; i < ARRAY_SIZE(candidates); i++)
		if (!access(candidates[i], X_OK))
			return candidates[i];
	return NULL;
}

int setup_main(int argc, char **argv)
{
	char root[PATH_MAX], parent[PATH_MAX];
	const char *busybox;

	if (argc != 2 || !control_name_valid(argv[1])) {
		pr_err("usage: lkvm setup NAME (1-%d letters, digits, '.', '_' or '-')",
		       CONTROL_NAME_MAX);
		return EXIT_VMM_ERROR;
	}
	busybox = find_busybox();
	if (!busybox) {
		pr_err("lkvm setup needs a static busybox (Debian: busybox-static), or LKVM_BUSYBOX=PATH");
		return EXIT_VMM_ERROR;
	}
	if (setup_dir(argv[1], root, sizeof(root)) ||
	    setup_dir("", parent, sizeof(parent))) {
		pr_err("lkvm setup: the folder's name is too long");
		return EXIT_VMM_ERROR;
	}
	if (mkdir(parent, 0755) && errno != EEXIST) {
		pr_err("lkvm setup: %s: %s", parent, strerror(errno));
		return EXIT_VMM_ERROR;
	}
	if (mkdir(root, 0755)) {
		pr_err("lkvm setup: %s: %s", root, errno == EEXIST ?
		       "already exists" : strerror(errno));
		return EXIT_VMM_ERROR;
	}
	if (populate(root, busybox)) {
		pr_err("lkvm setup: cannot fill %s: %s", root, strerror(errno));
		return EXIT_VMM_ERROR;
	}
	printf("%s: boot it with lkvm run -d %s\n", root, argv[1]);
	return 0;
}
