// SPDX-License-Identifier: GPL-2.0
/*
 * lkvm sandbox's side of /init: the host's root as the guest's, read-only
 * under a tmpfs overlay (the guest may change anything; the host sees
 * none of it), the caller's working directory on top of it read-write at
 * the same path, and the command run there as the caller's uid and gid.
 *
 * lkvm puts /etc/lkvm/sandbox in the initramfs it makes: NUL-terminated
 * records "key=value", in order. uid=, gid=, cwd= (the working
 * directory, shared as "lkvm-cwd" unless it is "/"), rawout=1 (the
 * host's stdout is no terminal: the guest's tty sends "\n" as it is),
 * env=NAME=VALUE (repeated), arg=ARG (repeated: the command). The host's
 * root is the 9p share "lkvm-root".
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "sandbox.h"

#define SANDBOX_FILE	"/etc/lkvm/sandbox"
#define SANDBOX_MAX	(256 * 1024)
#define ROOT		"/sandbox/root"
#define P9_OPTS		"trans=virtio,version=9p2000.L,msize=524288,access=client"

static uid_t run_uid;
static gid_t run_gid;
static bool active;

static void say(const char *what, const char *detail)
{
	fprintf(stderr, "lkvm-sandbox: %s: %s\n", what, detail);
}

static bool must_mount(const char *src, const char *dir, const char *type,
		       unsigned long flags, const char *data)
{
	if (mkdir(dir, 0755) && errno != EEXIST) {
		say(dir, strerror(errno));
		return false;
	}
	if (mount(src, dir, type, flags, data)) {
		char what[256];

		snprintf(what, sizeof(what), "mount %s (%s) on %s", src, type,
			 dir);
		say(what, strerror(errno));
		return false;
	}
	return true;
}

/* The records of SANDBOX_FILE, read whole; NULL if there is none. */
static char *read_records(size_t *len)
{
	static char buf[SANDBOX_MAX];
	ssize_t n;
	int fd = open(SANDBOX_FILE, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	*len = n;
	return buf;
}

static bool mount_root(const char *cwd)
{
	const unsigned long nodev = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char dir[4096];

	mkdir("/sandbox", 0755);
	/* the host's tree does not change under a sandbox: cache it all */
	if (!must_mount("lkvm-root", "/sandbox/lower", "9p", MS_RDONLY,
			P9_OPTS ",cache=loose") ||
	    !must_mount("tmpfs", "/sandbox/rw", "tmpfs", 0, "mode=0755"))
		return false;
	mkdir("/sandbox/rw/upper", 0755);
	mkdir("/sandbox/rw/work", 0755);
	if (!must_mount("overlay", ROOT, "overlay", 0,
			"lowerdir=/sandbox/lower,upperdir=/sandbox/rw/upper,"
			"workdir=/sandbox/rw/work"))
		return false;
	if (!must_mount("proc", ROOT "/proc", "proc", nodev, NULL) ||
	    !must_mount("sysfs", ROOT "/sys", "sysfs", nodev, NULL) ||
	    !must_mount("devtmpfs", ROOT "/dev", "devtmpfs", MS_NOSUID,
			"mode=0755") ||
	    !must_mount("devpts", ROOT "/dev/pts", "devpts",
			MS_NOSUID | MS_NOEXEC, "gid=5,mode=620,ptmxmode=666") ||
	    !must_mount("tmpfs", ROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
			"mode=1777") ||
	    !must_mount("tmpfs", ROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV,
			"mode=0755"))
		return false;
	if (strcmp(cwd, "/")) {
		snprintf(dir, sizeof(dir), ROOT "%s", cwd);
		if (!must_mount("lkvm-cwd", dir, "9p", 0, P9_OPTS))
			return false;
	}
	if (chroot(ROOT) || chdir(cwd)) {
		say(cwd, strerror(errno));
		return false;
	}
	return true;
}

static void raw_output(void)
{
	struct termios t;

	if (!tcgetattr(STDOUT_FILENO, &t)) {
		t.c_oflag &= ~ONLCR;
		tcsetattr(STDOUT_FILENO, TCSANOW, &t);
	}
}

int sandbox_enter(char **argv, int max)
{
	const char *cwd = "/";
	size_t len, pos;
	int argc = 0;
	char *rec = read_records(&len);

	if (!rec)
		return -1;
	active = true;
	clearenv();
	for (pos = 0; pos < len; pos += strlen(rec + pos) + 1) {
		char *r = rec + pos;

		if (!strncmp(r, "uid=", 4))
			run_uid = strtoul(r + 4, NULL, 10);
		else if (!strncmp(r, "gid=", 4))
			run_gid = strtoul(r + 4, NULL, 10);
		else if (!strncmp(r, "cwd=", 4))
			cwd = r + 4;
		else if (!strcmp(r, "rawout=1"))
			raw_output();
		else if (!strncmp(r, "env=", 4))
			putenv(r + 4);
		else if (!strncmp(r, "arg=", 4) && argc < max - 1)
			argv[argc++] = r + 4;
	}
	argv[argc] = NULL;
	if (!argc)
		argv[0] = "/bin/sh", argv[1] = NULL;
	return mount_root(cwd) ? 0 : SANDBOX_SETUP_FAILED;
}

bool sandbox_active(void)
{
	return active;
}

void sandbox_become_user(void)
{
	if (!active)
		return;
	if (setgroups(0, NULL) || setgid(run_gid) || setuid(run_uid)) {
		say("cannot become the caller", strerror(errno));
		_exit(126);
	}
}
