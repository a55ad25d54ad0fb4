// SPDX-License-Identifier: GPL-2.0
/*
 * lkvm's Landlock policy (core/landlock.c) from the attacker's side: in a
 * child process, build the policy from a configuration as vm_run() does,
 * confine the thread as every lkvm thread confines itself, and then do
 * what code that took the thread over would try. Outside the allowed set
 * (/etc/passwd, a new file in /tmp, another process's signal, a TCP
 * connection, an abstract socket) is refused; inside it (a share as
 * shared, the --stats file, /proc/self/status, the images as opened) run
 * time keeps working. Skipped where the kernel has no Landlock.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/landlock.h"
#include "lkvm/net.h"
#include "lkvm/util.h"

static char top[64];
static char share_ro[96], share_rw[96], outside[96], stats[96], img_ro[96],
	    img_rw[96], ctl_dir[96], ctl_sock[128], kernel[96];

/* In the confined child: a failed expectation names its line and ends it. */
#define EXPECT(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "line %d: %s (errno %s)\n",	\
				__LINE__, #cond, strerror(errno));	\
			_exit(1);					\
		}							\
	} while (0)

/* open() that must be refused by Landlock (EACCES), not fail otherwise. */
#define REFUSED(call)	EXPECT((call) < 0 && errno == EACCES)

static void make_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	char path[160];

	snprintf(top, sizeof(top), "/tmp/lkvm-landlock.XXXXXX");
	assert_non_null(mkdtemp(top));
#define AT(v, name) snprintf(v, sizeof(v), "%s/%s", top, name)
	AT(share_ro, "ro");
	AT(share_rw, "rw");
	AT(outside, "outside");
	AT(stats, "stats.json");
	AT(img_ro, "ro.img");
	AT(img_rw, "rw.img");
	AT(ctl_dir, "run");
	AT(kernel, "vmlinuz-test");
#undef AT
	snprintf(ctl_sock, sizeof(ctl_sock), "%s/vm.sock", ctl_dir);
	assert_int_equal(mkdir(share_ro, 0755), 0);
	assert_int_equal(mkdir(share_rw, 0755), 0);
	assert_int_equal(mkdir(ctl_dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/a", share_rw);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/b", share_rw);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/file", share_ro);
	make_file(path, "ro");
	snprintf(path, sizeof(path), "%s/a/file", share_rw);
	make_file(path, "rw");
	make_file(outside, "secret");
	make_file(stats, "");
	make_file(img_ro, "image");
	make_file(img_rw, "image");
	make_file(kernel, "kernel");
	make_file(ctl_sock, "");	/* the socket's place: only removed */
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* A configuration with every kind of input lkvm can be given. */
static void full_config(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->kernel = kernel;
	cfg->stats_path = stats;
	cfg->nr_shares = 2;
	snprintf(cfg->shares[0].path, sizeof(cfg->shares[0].path), "%s",
		 share_ro);
	cfg->shares[0].ro = true;
	snprintf(cfg->shares[1].path, sizeof(cfg->shares[1].path), "%s",
		 share_rw);
	cfg->nr_disks = 2;
	cfg->disks[0].disk.path = img_ro;
	cfg->disks[0].disk.readonly = true;
	cfg->disks[1].disk.path = img_rw;
}

/*
 * In a child: lkvm's policy for cfg, this thread confined to it, then
 * body; the child's status and what it said. Skips without Landlock.
 */
static void confined(const struct vm_config *cfg, void (*body)(void))
{
	int fds[LKVM_MAX_SHARES], status;
	unsigned int i;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (i = 0; i < cfg->nr_shares; i++)
			fds[i] = open(cfg->shares[i].path,
				      O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (landlock_prepare(cfg))
			_exit(2);
		if (!landlock_abi())
			_exit(77);
		if (landlock_allow_vm(cfg, fds, ctl_sock) ||
		    landlock_confine("test"))
			_exit(2);
		body();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int open_in(const char *dir, const char *name, int flags)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, flags | O_CLOEXEC, 0644);
}

static void outside_body(void)
{
	char path[128];

	REFUSED(open("/etc/passwd", O_RDONLY));
	REFUSED(open(outside, O_RDONLY));
	REFUSED(open("/proc/self/environ", O_RDONLY));
	REFUSED(open("/proc/self/mem", O_RDWR));
	snprintf(path, sizeof(path), "%s/new", top);
	REFUSED(open(path, O_WRONLY | O_CREAT, 0644));
	EXPECT(mkdir("/tmp/lkvm-landlock-escape", 0700) < 0 && errno == EACCES);
	/* nothing may be executed (were it run, false would fail the test) */
	EXPECT(execl("/bin/false", "false", (char *)NULL) < 0 &&
	       errno == EACCES);
}

/* What code in a confined thread reaches outside what it was given. */
static void test_outside_is_refused(void **state)
{
	struct vm_config cfg;

	full_config(&cfg);
	confined(&cfg, outside_body);
}

static void ro_share_body(void)
{
	char buf[8] = "";
	int fd = open_in(share_ro, "file", O_RDONLY);

	EXPECT(fd >= 0 && read(fd, buf, sizeof(buf)) == 2);
	close(fd);
	EXPECT(!strcmp(buf, "ro"));
	fd = open(share_ro, O_RDONLY | O_DIRECTORY);
	EXPECT(fd >= 0);
	close(fd);
	REFUSED(open_in(share_ro, "file", O_WRONLY));
	REFUSED(open_in(share_ro, "file", O_RDONLY | O_TRUNC));
	REFUSED(open_in(share_ro, "new", O_WRONLY | O_CREAT));
}

static void test_read_only_share(void **state)
{
	struct vm_config cfg;

	full_config(&cfg);
	confined(&cfg, ro_share_body);
}

/* What the 9p server does beneath a writable share's root. */
static void rw_share_body(void)
{
	char from[160], to[160], other[160];
	int fd = open_in(share_rw, "a/new", O_WRONLY | O_CREAT | O_EXCL);

	EXPECT(fd >= 0 && write(fd, "x", 1) == 1);
	close(fd);
	snprintf(from, sizeof(from), "%s/a/new", share_rw);
	snprintf(to, sizeof(to), "%s/b/moved", share_rw);
	EXPECT(rename(from, to) == 0);		/* across directories */
	snprintf(other, sizeof(other), "%s/a/linked", share_rw);
	EXPECT(link(to, other) == 0);
	EXPECT(truncate(to, 0) == 0);
	EXPECT(unlink(to) == 0 && unlink(other) == 0);
	snprintf(from, sizeof(from), "%s/dir", share_rw);
	EXPECT(mkdir(from, 0755) == 0 && rmdir(from) == 0);
	snprintf(from, sizeof(from), "%s/sym", share_rw);
	EXPECT(symlink("a/file", from) == 0 && unlink(from) == 0);
	snprintf(from, sizeof(from), "%s/fifo", share_rw);
	EXPECT(mkfifo(from, 0644) == 0 && unlink(from) == 0);
	/* never a device node, even for root */
	snprintf(from, sizeof(from), "%s/null", share_rw);
	EXPECT(mknod(from, S_IFCHR | 0666, makedev(1, 3)) < 0 &&
	       errno == EACCES);
	/* and nothing moves out of the share */
	snprintf(from, sizeof(from), "%s/a/file", share_rw);
	snprintf(to, sizeof(to), "%s/escaped", top);
	EXPECT(rename(from, to) < 0 && (errno == EACCES || errno == EXDEV));
}

static void test_read_write_share(void **state)
{
	struct vm_config cfg;

	full_config(&cfg);
	confined(&cfg, rw_share_body);
}

/* What the main thread opens at run time and at exit. */
static void run_time_body(void)
{
	char buf[64];
	int fd;

	fd = open(stats, O_WRONLY | O_TRUNC);
	EXPECT(fd >= 0 && write(fd, "{}\n", 3) == 3);
	close(fd);
	fd = open("/proc/self/status", O_RDONLY);
	EXPECT(fd >= 0 && read(fd, buf, sizeof(buf)) > 0);
	close(fd);
	fd = open("/proc/self/statm", O_RDONLY);
	EXPECT(fd >= 0);
	close(fd);
	fd = open(kernel, O_RDONLY);		/* the doctor, at exit */
	EXPECT(fd >= 0);
	close(fd);
	EXPECT(unlink(ctl_sock) == 0);		/* the VM's socket, at exit */
	REFUSED(open_in(ctl_dir, "other.sock", O_WRONLY | O_CREAT));
	fd = open(img_ro, O_RDONLY);
	EXPECT(fd >= 0);
	close(fd);
	REFUSED(open(img_ro, O_RDWR));
	fd = open(img_rw, O_RDWR);
	EXPECT(fd >= 0);
	close(fd);
	REFUSED(open(stats, O_RDONLY));		/* written, never read */
}

static void test_run_time_needs(void **state)
{
	struct vm_config cfg;

	full_config(&cfg);
	confined(&cfg, run_time_body);
}

static int listener;		/* the parent's, on 127.0.0.1 */
static uint16_t listener_port;

/* A TCP connect() to the listener, or a bind() to port: its result. */
static int tcp_try(bool to_listener, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(to_listener ? listener_port :
						   port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ret = to_listener ? connect(fd, (struct sockaddr *)&a, sizeof(a)) :
				bind(fd, (struct sockaddr *)&a, sizeof(a));
	int err = errno;

	close(fd);
	errno = err;
	return ret;
}

#define tcp_to_listener()	tcp_try(true, 0)
#define tcp_bind(port)		tcp_try(false, port)

static void no_net_body(void)
{
	if (landlock_abi() < 4)
		return;
	EXPECT(tcp_to_listener() < 0 && errno == EACCES);
	EXPECT(tcp_bind(0) < 0 && errno == EACCES);
}

static void user_net_body(void)
{
	int fd = open("/etc/resolv.conf", O_RDONLY);

	/* libslirp rereads it; an absent one is nothing to allow */
	EXPECT(fd >= 0 || errno == ENOENT);
	if (fd >= 0)
		close(fd);
	EXPECT(tcp_to_listener() == 0);		/* the guest's connections */
	EXPECT(tcp_bind(0) == 0);		/* slirp's FTP helper */
	if (landlock_abi() >= 4)
		EXPECT(tcp_bind(listener_port + 1) < 0 && errno == EACCES);
}

static void restricted_net_body(void)
{
	if (landlock_abi() < 4)
		return;
	EXPECT(tcp_to_listener() < 0 && errno == EACCES);
}

static int listen_loopback(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(listener >= 0);
	assert_int_equal(bind(listener, (struct sockaddr *)&a, len), 0);
	assert_int_equal(listen(listener, 8), 0);
	assert_int_equal(getsockname(listener, (struct sockaddr *)&a, &len), 0);
	listener_port = ntohs(a.sin_port);
	return 0;
}

/* TCP (ABI 4): none without -n user; -n user's; none with restrict=on. */
static void test_tcp(void **state)
{
	struct vm_config cfg;

	listen_loopback();
	full_config(&cfg);
	confined(&cfg, no_net_body);
	cfg.nr_nics = 1;
	cfg.nics[0].mode = NET_MODE_USER;
	confined(&cfg, user_net_body);
	cfg.nics[0].restricted = true;
	confined(&cfg, restricted_net_body);
	close(listener);
}

static char abstract_name[32];

/* Signals are scoped once the kernel has erratum 2 (ABI 6) fixed. */
static bool signals_scoped(void)
{
	long errata = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U << 1);

	return landlock_abi() >= 6 && errata > 0 && (errata & 2);
}

static void scoped_body(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (landlock_abi() < 6)
		return;
	/* the parent is outside lkvm's domain */
	if (signals_scoped())
		EXPECT(kill(getppid(), 0) < 0 && errno == EPERM);
	EXPECT(kill(getpid(), 0) == 0);
	memcpy(sa.sun_path + 1, abstract_name, strlen(abstract_name));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(connect(fd, (struct sockaddr *)&sa,
		       offsetof(struct sockaddr_un, sun_path) + 1 +
		       strlen(abstract_name)) < 0 && errno == EPERM);
	close(fd);
}

/* ABI 6: no signal to another process, no abstract socket outside. */
static void test_scopes(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vm_config cfg;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(abstract_name, sizeof(abstract_name), "lkvm-ll-%d",
		 (int)getpid());
	memcpy(sa.sun_path + 1, abstract_name, strlen(abstract_name));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      offsetof(struct sockaddr_un, sun_path) + 1 +
			      strlen(abstract_name)), 0);
	assert_int_equal(listen(fd, 1), 0);
	full_config(&cfg);
	confined(&cfg, scoped_body);
	close(fd);
}

static void unconfined_body(void)
{
	int fd = open("/etc/passwd", O_RDONLY);

	EXPECT(fd >= 0);
	close(fd);
}

/* --no-landlock: no ruleset at all, and confining is a no-op. */
static void test_no_landlock(void **state)
{
	struct vm_config cfg;
	int status;
	pid_t pid;

	full_config(&cfg);
	cfg.no_landlock = true;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fds[2] = { -1, -1 };

		if (landlock_prepare(&cfg) || landlock_abi() ||
		    landlock_allow_vm(&cfg, fds, NULL) ||
		    landlock_confine("test"))
			_exit(2);
		unconfined_body();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outside_is_refused),
		cmocka_unit_test(test_read_only_share),
		cmocka_unit_test(test_read_write_share),
		cmocka_unit_test(test_run_time_needs),
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_scopes),
		cmocka_unit_test(test_no_landlock),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
