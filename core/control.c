// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket of a running VM (see include/lkvm/control.h): where
 * it lives, claiming a name, and serving requests from the main thread.
 * A request is served whole before the main loop goes on, so each one
 * sees the VM in one state; a client gets CONTROL_IO_MS to send its line
 * and take the reply, so a stuck one holds the VM's main loop up no
 * longer than that.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/control.h"
#include "lkvm/devices.h"
#include "lkvm/stats.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#define CONTROL_IO_MS		1000
#define CONTROL_REQUEST_MAX	128
#define CONTROL_PAUSE_MS	2000
#define CONTROL_LOCK_MS		5000

struct control {
	int fd;
	char name[CONTROL_NAME_MAX + 1];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

bool control_name_valid(const char *name)
{
	size_t len = strlen(name), i;

	if (!len || len > CONTROL_NAME_MAX || name[0] == '.')
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

/*
 * Whoever can reach the sockets controls the VMs: the directory must be
 * ours alone. It is checked through the descriptor it was opened by (no
 * symlink followed at its last step), so what was checked is what is
 * used. The message names the way out: a squatted /tmp/lkvm-UID removed
 * (lkvm makes a fresh one), or LKVM_RUNTIME_DIR pointed elsewhere.
 */
static int dir_refuse(const char *dir, const char *why)
{
	pr_err("runtime directory %s is not a private directory: %s; remove it (lkvm makes its own, mode 0700) or set LKVM_RUNTIME_DIR to a directory of yours with mode 0700",
	       dir, why);
	return -1;
}

static int dir_check(int fd, const char *dir)
{
	char why[160];
	struct stat st;

	if (fstat(fd, &st)) {
		pr_err("runtime directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, sizeof(why), "uid %u owns it, not uid %u (another user may have made it to reach your VMs)",
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		return dir_refuse(dir, why);
	}
	if (st.st_mode & 077) {
		pr_err("runtime directory %s is not a private directory: others may enter it (mode %03o); chmod 700 %s, or set LKVM_RUNTIME_DIR to a directory of yours with mode 0700",
		       dir, (unsigned int)(st.st_mode & 0777), dir);
		return -1;
	}
	return 0;
}

/* The directory's fd, checked; -ENOENT when it is not there (!create). */
static int dir_open(const char *dir, bool create)
{
	int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd = open(dir, flags);

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdir(dir, 0700) && errno != EEXIST) {
			pr_err("cannot make the runtime directory %s: %s", dir,
			       strerror(errno));
			return -1;
		}
		fd = open(dir, flags);
	}
	if (fd >= 0) {
		if (!dir_check(fd, dir))
			return fd;
		close(fd);
		return -1;
	}
	if (errno == ENOENT)
		return -ENOENT;
	if ((errno == ELOOP || errno == ENOTDIR) && !lstat(dir, &st))
		return dir_refuse(dir, S_ISLNK(st.st_mode) ?
				  "it is a symbolic link" : "it is not a directory");
	pr_err("runtime directory %s: %s", dir, strerror(errno));
	return -1;
}

static int dir_path(char *buf, size_t size)
{
	const char *own = getenv("LKVM_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (own && *own)
		n = snprintf(buf, size, "%s", own);
	else if (xdg && *xdg)
		n = snprintf(buf, size, "%s/lkvm", xdg);
	else
		n = snprintf(buf, size, "/tmp/lkvm-%u", (unsigned int)geteuid());
	if (n < 0 || (size_t)n >= size) {
		pr_err("the runtime directory's path is too long");
		return -1;
	}
	return 0;
}

int control_dir(char *buf, size_t size, bool create)
{
	int fd;

	if (dir_path(buf, size))
		return -1;
	fd = dir_open(buf, create);
	if (fd == -ENOENT)
		return 1;
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int control_sock_path(const char *dir, const char *name, char *buf,
		      size_t size)
{
	int n = snprintf(buf, size, "%s/%s%s", dir, name, CONTROL_SOCK_SUFFIX);

	if (n < 0 || (size_t)n >= size ||
	    (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		pr_err("the socket path for VM '%s' under %s is too long for a UNIX socket",
		       name, dir);
		return -1;
	}
	return 0;
}

static void sockaddr_of(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, strnlen(path, sizeof(sa->sun_path) - 1));
}

int control_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa;
	int err;

	if (fd < 0)
		return -1;
	sockaddr_of(&sa, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/*
 * Every change to the names in the directory (a claim, a stale socket's
 * removal) happens under an exclusive flock() of the directory, so that
 * "nobody answers there" still holds when the name is replaced. A claim
 * holds it for a bind() and a listen(): a holder that long is stuck.
 */
static int dir_lock(int dfd, const char *dir)
{
	double deadline = now_ms() + CONTROL_LOCK_MS;

	while (flock(dfd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			pr_err("cannot lock the runtime directory %s: %s", dir,
			       strerror(errno));
			return -1;
		}
		if (now_ms() >= deadline) {
			pr_err("the runtime directory %s stayed locked for %u s: another lkvm is stuck claiming a name there",
			       dir, CONTROL_LOCK_MS / 1000);
			return -1;
		}
		usleep(2000);
	}
	return 0;
}

enum sock_state { SOCK_ABSENT, SOCK_LIVE, SOCK_STALE, SOCK_OTHER };

/*
 * What is at path. A VM's socket listens before it gets its name, so one
 * that refuses a connection is a dead VM's.
 */
static enum sock_state sock_state(const char *path)
{
	struct stat st;
	int fd = control_connect(path);

	if (fd >= 0) {
		close(fd);
		return SOCK_LIVE;
	}
	if (errno == ENOENT)
		return SOCK_ABSENT;
	if (errno == ECONNREFUSED && !lstat(path, &st) && S_ISSOCK(st.st_mode))
		return SOCK_STALE;
	return SOCK_OTHER;
}

int control_remove_stale(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	int dfd, ret = 0;

	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	dfd = dir_open(dir, false);
	if (dfd < 0)
		return -1;
	if (dir_lock(dfd, dir)) {
		close(dfd);
		return -1;
	}
	if (sock_state(path) == SOCK_STALE)
		ret = unlink(path) ? -1 : 1;
	close(dfd);		/* and the lock with it */
	return ret;
}

/*
 * Listen on a hidden name (a '.' name is no VM's), then rename it into
 * place: the name never shows a socket that refuses connections, which
 * anyone would take for a dead VM's. Under the directory's lock; the
 * rename is the directory fd's, so the socket lands in the directory
 * that was checked or not at all.
 */
static int control_bind(struct control *ctl, int dfd, const char *dir)
{
	const char *base = ctl->path + strlen(dir) + 1;
	char tmp[sizeof(ctl->path)], tmp_base[24];
	struct sockaddr_un sa;
	int n;

	snprintf(tmp_base, sizeof(tmp_base), ".%d", (int)getpid());
	n = snprintf(tmp, sizeof(tmp), "%s/%s", dir, tmp_base);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		pr_err("the runtime directory's path %s is too long for a UNIX socket",
		       dir);
		return -1;
	}
	/* a process of our pid that died here left it: nobody else's */
	unlinkat(dfd, tmp_base, 0);
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	sockaddr_of(&sa, tmp);
	if (ctl->fd < 0 || bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		pr_err("cannot make the control socket %s: %s", tmp,
		       strerror(errno));
		return -1;
	}
	if (fchmodat(dfd, tmp_base, 0600, 0) || listen(ctl->fd, 8)) {
		pr_err("control socket %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	switch (sock_state(ctl->path)) {
	case SOCK_LIVE:
		pr_err("a VM named '%s' is already running (%s)", ctl->name,
		       ctl->path);
		break;
	case SOCK_OTHER:
		pr_err("cannot use %s for VM '%s': it is there but not a VM's socket",
		       ctl->path, ctl->name);
		break;
	case SOCK_ABSENT:
		/* never over anything: what appeared since is not ours */
		if (!renameat2(dfd, tmp_base, dfd, base, RENAME_NOREPLACE))
			return 0;
		/* a file system without RENAME_NOREPLACE: the lock must do */
		if (errno == EINVAL && !renameat(dfd, tmp_base, dfd, base))
			return 0;
		pr_err("cannot name the control socket %s: %s", ctl->path,
		       strerror(errno));
		break;
	case SOCK_STALE:
		/* a dead VM's: replaced in one step, the name never free */
		if (!renameat(dfd, tmp_base, dfd, base))
			return 0;
		pr_err("cannot name the control socket %s: %s", ctl->path,
		       strerror(errno));
		break;
	}
	unlinkat(dfd, tmp_base, 0);
	return -1;
}

struct control *control_open(const char *name)
{
	struct control *ctl;
	char dir[sizeof(ctl->path)];
	int dfd = -1;

	if (!control_name_valid(name)) {
		pr_err("--name '%s': a VM name is 1-%d letters, digits, '.', '_' or '-', not starting with '.'",
		       name, CONTROL_NAME_MAX);
		return NULL;
	}
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl) {
		pr_err("out of memory");
		return NULL;
	}
	ctl->fd = -1;
	snprintf(ctl->name, sizeof(ctl->name), "%s", name);
	if (dir_path(dir, sizeof(dir)) ||
	    control_sock_path(dir, name, ctl->path, sizeof(ctl->path)) ||
	    (dfd = dir_open(dir, true)) < 0 || dir_lock(dfd, dir) ||
	    control_bind(ctl, dfd, dir)) {
		ctl->path[0] = '\0';	/* not ours to remove */
		if (dfd >= 0)
			close(dfd);
		control_close(ctl);
		return NULL;
	}
	close(dfd);		/* and the lock with it */
	return ctl;
}

int control_fd(const struct control *ctl)
{
	return ctl ? ctl->fd : -1;
}

const char *control_sock(const struct control *ctl)
{
	return ctl ? ctl->path : NULL;
}

void control_close(struct control *ctl)
{
	if (!ctl)
		return;
	if (ctl->fd >= 0) {
		if (ctl->path[0])
			unlink(ctl->path);
		close(ctl->fd);
	}
	free(ctl);
}

/* Wait up to the deadline for fd to be ready for events; false: timed out. */
static bool wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&pfd, 1, poll_timeout_ms(deadline, now_ms()));
	} while (n < 0 && errno == EINTR);
	return n > 0;
}

/* A peer that hung up is an error here, not a SIGPIPE for the process. */
static int send_all(int fd, const char *buf, size_t len, double deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, deadline))
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

/* One line, without its '\n'; -1 when it is too long, cut off or late. */
static int read_request(int fd, char *buf, size_t size, double deadline)
{
	size_t len = 0;

	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, deadline))
			continue;
		if (n <= 0)
			return -1;
		len += n;
		buf[len] = '\0';
		nl = memchr(buf, '\n', len);
		if (nl) {
			*nl = '\0';
			return 0;
		}
	}
	return -1;
}

typedef int (*control_fn)(struct vm *vm, const struct control *ctl,
			  const char *arg, FILE *out, char *err, size_t size);

static int do_ping(struct vm *vm, const struct control *ctl, const char *arg,
		   FILE *out, char *err, size_t size)
{
	fprintf(out, "%s %d %s %u %llu\n", ctl->name, (int)getpid(),
		vcpus_paused(vm) ? "paused" : "running", vm->nr_vcpus,
		(unsigned long long)vm->cfg->mem_mib);
	return 0;
}

static int do_stop(struct vm *vm, const struct control *ctl, const char *arg,
		   FILE *out, char *err, size_t size)
{
	vm_request_exit(vm, EXIT_POWEROFF, "stopped by lkvm stop");
	return 0;
}

static int do_pause(struct vm *vm, const struct control *ctl, const char *arg,
		    FILE *out, char *err, size_t size)
{
	if (vcpus_pause(vm, CONTROL_PAUSE_MS)) {
		snprintf(err, size, "a vCPU did not stop within %u ms",
			 CONTROL_PAUSE_MS);
		return -1;
	}
	return 0;
}

static int do_resume(struct vm *vm, const struct control *ctl,
		     const char *arg, FILE *out, char *err, size_t size)
{
	vcpus_resume(vm);
	return 0;
}

static int do_stat(struct vm *vm, const struct control *ctl, const char *arg,
		   FILE *out, char *err, size_t size)
{
	stats_print(vm, out, now_ms() - vm->start_ms, true);
	return 0;
}

/* Registers are read while the vCPUs are out of KVM_RUN. */
static int do_dump(struct vm *vm, const struct control *ctl, const char *arg,
		   FILE *out, char *err, size_t size)
{
	bool was_paused = vcpus_paused(vm);

	if (!was_paused && do_pause(vm, ctl, arg, out, err, size))
		return -1;
	vcpus_dump(vm, out);
	if (!was_paused)
		vcpus_resume(vm);
	return 0;
}

static int do_sysrq(struct vm *vm, const struct control *ctl,
		    const char *arg, FILE *out, char *err, size_t size)
{
	if (strlen(arg) != 1 || !isalnum((unsigned char)arg[0])) {
		snprintf(err, size, "a SysRq key is one letter or digit, not '%s'",
			 arg);
		return -1;
	}
	if (console_send_sysrq(arg[0])) {
		snprintf(err, size, "this VM has no serial console to send SysRq on");
		return -1;
	}
	return 0;
}

/* "+MiB" inflates, "-MiB" deflates; the reply says where it stands. */
static int do_balloon(struct vm *vm, const struct control *ctl,
		      const char *arg, FILE *out, char *err, size_t size)
{
	uint32_t target, actual;
	char *end;
	long long mib;

	errno = 0;
	mib = strtoll(arg, &end, 10);
	if ((arg[0] != '+' && arg[0] != '-') || *end || errno ||
	    mib < -(1LL << 30) || mib > (1LL << 30)) {
		snprintf(err, size, "a balloon change is +MiB or -MiB, not '%.32s'",
			 arg);
		return -1;
	}
	if (devices_balloon_adjust(vm, mib * 256, &target, &actual)) {
		snprintf(err, size, "this VM has no balloon (lkvm run --balloon)");
		return -1;
	}
	fprintf(out, "balloon: target %u MiB, the guest gave %u MiB so far\n",
		target / 256, actual / 256);
	return 0;
}

static const struct control_cmd {
	const char *name;
	bool takes_arg;
	control_fn fn;
} control_cmds[] = {
	{ "ping", false, do_ping },
	{ "stop", false, do_stop },
	{ "pause", false, do_pause },
	{ "resume", false, do_resume },
	{ "stat", false, do_stat },
	{ "dump", false, do_dump },
	{ "sysrq", true, do_sysrq },
	{ "balloon", true, do_balloon },
};

/* Runs the request into out; -1 with the reason in err. */
static int control_dispatch(struct vm *vm, const struct control *ctl,
			    char *req, FILE *out, char *err, size_t size)
{
	char *arg = strchr(req, ' ');
	unsigned int i;

	if (arg)
		*arg++ = '\0';
	for (i = 0; i < ARRAY_SIZE(control_cmds); i++) {
		const struct control_cmd *c = &control_cmds[i];

		if (strcmp(req, c->name))
			continue;
		if (c->takes_arg != !!arg) {
			snprintf(err, size, "'%s' %s", c->name, c->takes_arg ?
				 "needs an argument" : "takes no argument");
			return -1;
		}
		return c->fn(vm, ctl, arg ? arg : "", out, err, size);
	}
	snprintf(err, size, "unknown request '%.32s'", req);
	return -1;
}

void control_serve(struct control *ctl, struct vm *vm)
{
	double deadline = now_ms() + CONTROL_IO_MS;
	char req[CONTROL_REQUEST_MAX], err[160], head[200];
	char *body = NULL;
	size_t body_len = 0;
	FILE *out;
	int fd, ret = -1;

	fd = accept4(ctl->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	out = open_memstream(&body, &body_len);
	snprintf(err, sizeof(err), "request not understood");
	if (out && !read_request(fd, req, sizeof(req), deadline))
		ret = control_dispatch(vm, ctl, req, out, err, sizeof(err));
	if (out)
		fclose(out);
	if (ret)
		snprintf(head, sizeof(head), "error %s\n", err);
	else
		snprintf(head, sizeof(head), "ok\n");
	if (!send_all(fd, head, strlen(head), deadline) && !ret && body)
		send_all(fd, body, body_len, deadline);
	free(body);
	/*
	 * Closing with bytes unread resets the connection, and the client
	 * would lose the reply to a request too long to read.
	 */
	for (int i = 0; i < 64 && read(fd, req, sizeof(req)) > 0; i++)
		;
	close(fd);
}

static int read_all(int fd, char **buf, size_t *len, double deadline)
{
	size_t cap = 4096;

	*len = 0;
	*buf = malloc(cap + 1);
	while (*buf) {
		ssize_t n;

		if (*len == cap) {
			char *bigger = realloc(*buf, 2 * cap + 1);

			if (!bigger)
				break;
			*buf = bigger;
			cap *= 2;
		}
		if (!wait_fd(fd, POLLIN, deadline))
			break;
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0) {
			(*buf)[*len] = '\0';
			return 0;
		}
		*len += n;
	}
	return -1;
}

int control_request(const char *path, const char *request, FILE *out,
		    char *err, size_t err_size)
{
	/* a dump or a pause waits for the vCPUs; the rest is quick */
	double deadline = now_ms() + CONTROL_PAUSE_MS + 3 * CONTROL_IO_MS;
	char *reply = NULL, *nl;
	size_t len;
	int fd, ret = -1;

	fd = control_connect(path);
	if (fd < 0) {
		snprintf(err, err_size, "%s", strerror(errno));
		return -1;
	}
	/* a server that refused a request early may reply before it is sent */
	if (!send_all(fd, request, strlen(request), deadline))
		send_all(fd, "\n", 1, deadline);
	if (read_all(fd, &reply, &len, deadline)) {
		snprintf(err, err_size, "no answer from %s", path);
	} else if (!(nl = memchr(reply, '\n', len))) {
		snprintf(err, err_size, "a reply lkvm does not understand");
	} else if (!strncmp(reply, "ok\n", 3)) {
		fwrite(nl + 1, 1, len - (nl + 1 - reply), out);
		ret = 0;
	} else {
		*nl = '\0';
		snprintf(err, err_size, "%s", strncmp(reply, "error ", 6) ?
			 reply : reply + 6);
	}
	free(reply);
	close(fd);
	return ret;
}
