// SPDX-License-Identifier: GPL-2.0
/*
 * Where an image's backing file is, and whether lkvm may open it. The
 * name comes from the image, and an image may come from anyone (a
 * download, or a guest that wrote it into its own disk): it must not be
 * a way to serve a host file the user never named to the guest. So the
 * name, taken relative to the image's directory unless absolute, is
 * resolved (symbolic links, `..`) and must lie inside that directory or
 * inside the one the user allowed (-d ...,backing-dir=DIR), and must be a
 * regular file on a file system that holds files (no device, FIFO,
 * directory, /proc or /sys file).
 */
#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "lkvm/util.h"
#include "format.h"

/* The kernel's pseudo file systems: their files are no disk images. */
static const long pseudo_fs[] = {
	PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
	SECURITYFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
	BPF_FS_MAGIC, EFIVARFS_MAGIC,
};

/* Is path (resolved) inside dir (resolved)? */
static bool inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return true;
	return !strncmp(path, dir, n) && path[n] == '/';
}

/* The directory of path (as given), resolved: malloc'd, or NULL. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (!slash)
		return realpath(".", NULL);
	if ((size_t)(slash - path) >= sizeof(dir))
		return NULL;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
		 path);
	return realpath(dir, NULL);
}

static const char *kind_of(mode_t mode)
{
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

/* A regular file on a file system of files? (Said otherwise.) */
static bool is_image_file(const char *image, const char *name,
			  const char *real)
{
	struct statfs sfs;
	struct stat st;
	unsigned int i;

	if (stat(real, &st) || statfs(real, &sfs)) {
		pr_err("disk '%s': backing file '%s': %s", image, name,
		       strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("disk '%s': backing file '%s' is %s, not an image file",
		       image, name, kind_of(st.st_mode));
		return false;
	}
	for (i = 0; i < ARRAY_SIZE(pseudo_fs); i++)
		if (sfs.f_type == pseudo_fs[i]) {
			pr_err("disk '%s': backing file '%s' is a kernel file (%s), not an image file",
			       image, name, real);
			return false;
		}
	return true;
}

char *disk_backing_path(const char *image, const char *name,
			const char *allowed_dir)
{
	const char *slash = strrchr(image, '/');
	int dir = name[0] == '/' || !slash ? 0 : (int)(slash - image + 1);
	char joined[PATH_MAX], *real, *home;

	if ((size_t)snprintf(joined, sizeof(joined), "%.*s%s", dir, image,
			     name) >= sizeof(joined)) {
		pr_err("disk '%s': backing file name too long", image);
		return NULL;
	}
	real = realpath(joined, NULL);
	if (!real) {
		pr_err("disk '%s': backing file '%s': %s", image, name,
		       strerror(errno));
		return NULL;
	}
	home = dir_of(image);
	if (!(home && inside(real, home)) &&
	    !(allowed_dir && inside(real, allowed_dir))) {
		pr_err("disk '%s': backing file '%s' resolves to %s, outside the image's directory: if the image is yours, allow that directory with -d IMAGE,backing-dir=DIR",
		       image, name, real);
		goto refused;
	}
	if (!is_image_file(image, name, real))
		goto refused;
	free(home);
	return real;
refused:
	free(home);
	free(real);
	return NULL;
}
