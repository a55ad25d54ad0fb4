// SPDX-License-Identifier: GPL-2.0
/*
 * The control socket (core/control.c) on a VM with no KVM under it: VM
 * names, where the sockets live and who may own that directory (not a
 * symlink, not another user's, not open to others), claiming a name (in
 * use: refused; stale: taken over; not a socket: refused; no socket under
 * the name before it listens), removing a dead VM's socket, and
 * each request served as a client sees it, including bad ones: unknown,
 * over-long, cut off, with or without the argument they need.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/console.h"
#include "lkvm/control.h"
#include "lkvm/util.h"
#include "fake_vm.h"

static char tmpdir[64];

static int setup_dir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lkvm-ctl-test.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	setenv("LKVM_RUNTIME_DIR", tmpdir, 1);
	return 0;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
	unsetenv("LKVM_RUNTIME_DIR");
	return 0;
}

static void test_names(void **state)
{
	char longest[CONTROL_NAME_MAX + 2];

	assert_true(control_name_valid("vm1"));
	assert_true(control_name_valid("guest-42_a.b"));
	memset(longest, 'a', sizeof(longest));
	longest[CONTROL_NAME_MAX] = '\0';
	assert_true(control_name_valid(longest));
	longest[CONTROL_NAME_MAX] = 'a';
	longest[CONTROL_NAME_MAX + 1] = '\0';
	assert_false(control_name_valid(longest));
	assert_false(control_name_valid(""));
	assert_false(control_name_valid(".hidden"));
	assert_false(control_name_valid("../x"));
	assert_false(control_name_valid("a/b"));
	assert_false(control_name_valid("a b"));
	assert_false(control_name_valid("a\nb"));
}

static void test_directory_choice(void **state)
{
	char buf[256], want[256], xdg[128];
	struct stat st;

	assert_int_equal(control_dir(buf, sizeof(buf), false), 0);
	assert_string_equal(buf, tmpdir);

	/* $XDG_RUNTIME_DIR/lkvm without our own variable, made 0700 */
	unsetenv("LKVM_RUNTIME_DIR");
	snprintf(xdg, sizeof(xdg), "%s/xdg", tmpdir);
	assert_int_equal(mkdir(xdg, 0755), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	snprintf(want, sizeof(want), "%s/lkvm", xdg);
	assert_int_equal(control_dir(buf, sizeof(buf), false), 1);
	assert_int_equal(control_dir(buf, sizeof(buf), true), 0);
	assert_string_equal(buf, want);
	assert_int_equal(stat(buf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	/* then /tmp/lkvm-UID */
	unsetenv("XDG_RUNTIME_DIR");
	snprintf(want, sizeof(want), "/tmp/lkvm-%u", (unsigned int)geteuid());
	assert_true(control_dir(buf, sizeof(buf), false) >= 0);
	assert_string_equal(buf, want);
	setenv("LKVM_RUNTIME_DIR", tmpdir, 1);
	assert_int_equal(control_dir(buf, 8, false), -1);	/* too long */
}

static void test_directory_must_be_private(void **state)
{
	char buf[256], file[128];
	int fd;

	assert_int_equal(chmod(tmpdir, 0755), 0);
	assert_int_equal(control_dir(buf, sizeof(buf), true), -1);
	assert_null(control_open("vm"));
	assert_int_equal(chmod(tmpdir, 0700), 0);
	assert_int_equal(control_dir(buf, sizeof(buf), true), 0);

	/* a file where the directory should be */
	snprintf(file, sizeof(file), "%s/file", tmpdir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	setenv("LKVM_RUNTIME_DIR", file, 1);
	assert_int_equal(control_dir(buf, sizeof(buf), true), -1);

	/* a symlink to a private directory: refused, nothing made there */
	{
		char real[128], link[128], sock[160];

		snprintf(real, sizeof(real), "%s/real", tmpdir);
		snprintf(link, sizeof(link), "%s/link", tmpdir);
		snprintf(sock, sizeof(sock), "%s/vm.sock", real);
		assert_int_equal(mkdir(real, 0700), 0);
		assert_int_equal(symlink(real, link), 0);
		setenv("LKVM_RUNTIME_DIR", link, 1);
		assert_int_equal(control_dir(buf, sizeof(buf), false), -1);
		assert_null(control_open("vm"));
		assert_int_equal(access(sock, F_OK), -1);
	}

	/* another user's directory, private as it may be (root can tell) */
	if (geteuid() == 0) {
		char other[128];

		snprintf(other, sizeof(other), "%s/other", tmpdir);
		assert_int_equal(mkdir(other, 0700), 0);
		assert_int_equal(chown(other, 4321, 4321), 0);
		setenv("LKVM_RUNTIME_DIR", other, 1);
		assert_int_equal(control_dir(buf, sizeof(buf), true), -1);
		assert_null(control_open("vm"));
	}
	setenv("LKVM_RUNTIME_DIR", tmpdir, 1);
}

static void bind_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);	/* bound, never listening: as a dead VM leaves it */
}

static void test_claiming_names(void **state)
{
	char path[256], longest[CONTROL_NAME_MAX + 1];
	struct control *a, *b;
	struct stat st;
	int fd;

	a = control_open("vm");
	assert_non_null(a);
	snprintf(path, sizeof(path), "%s/vm.sock", tmpdir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_null(control_open("vm"));	/* in use */
	assert_null(control_open("bad/name"));
	control_close(a);
	assert_int_equal(lstat(path, &st), -1);

	/* a stale socket is taken over */
	bind_stale(path);
	fd = control_connect(path);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, ECONNREFUSED);
	b = control_open("vm");
	assert_non_null(b);
	fd = control_connect(path);
	assert_true(fd >= 0);
	close(fd);
	control_close(b);

	/* the socket listens before it has its name: no other name is left */
	{
		int entries = 0;
		struct dirent *e;
		DIR *d;

		b = control_open("vm");
		assert_non_null(b);
		d = opendir(tmpdir);
		assert_non_null(d);
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				assert_string_equal(e->d_name, "vm.sock");
				entries++;
			}
		closedir(d);
		assert_int_equal(entries, 1);
		control_close(b);
	}

	/* anything else in the way is left alone */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_null(control_open("vm"));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);

	/* a name that fits, in a directory that makes the path too long */
	memset(longest, 'n', CONTROL_NAME_MAX);
	longest[CONTROL_NAME_MAX] = '\0';
	setenv("LKVM_RUNTIME_DIR", "/tmp/lkvm-ctl-test-a-directory-whose-name-is-long-enough", 1);
	assert_null(control_open(longest));
	rmdir("/tmp/lkvm-ctl-test-a-directory-whose-name-is-long-enough");
	setenv("LKVM_RUNTIME_DIR", tmpdir, 1);
}

/* What `lkvm list` and the others do with a socket nobody answers on. */
static void test_removing_stale_sockets(void **state)
{
	char path[256];
	struct control *live;
	int fd;

	snprintf(path, sizeof(path), "%s/dead.sock", tmpdir);
	bind_stale(path);
	assert_int_equal(control_remove_stale(path), 1);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(control_remove_stale(path), 0);	/* gone */

	live = control_open("live");
	assert_non_null(live);
	snprintf(path, sizeof(path), "%s/live.sock", tmpdir);
	assert_int_equal(control_remove_stale(path), 0);
	fd = control_connect(path);
	assert_true(fd >= 0);
	close(fd);
	control_close(live);

	snprintf(path, sizeof(path), "%s/file.sock", tmpdir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(control_remove_stale(path), 0);
	assert_int_equal(access(path, F_OK), 0);
}

/* A client on its own thread while the test serves, as the main loop. */
struct client {
	pthread_t thread;
	const char *path;
	const char *request;
	char *body;
	size_t body_len;
	char err[200];
	int ret;
};

static void *client_thread(void *arg)
{
	struct client *c = arg;
	FILE *out = open_memstream(&c->body, &c->body_len);

	c->ret = control_request(c->path, c->request, out, c->err,
				 sizeof(c->err));
	fclose(out);
	return NULL;
}

static void serve_one(struct control *ctl, struct vm *vm)
{
	struct pollfd pfd = { .fd = control_fd(ctl), .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, 5000), 1);
	control_serve(ctl, vm);
}

static void request(struct control *ctl, struct vm *vm, const char *path,
		    const char *req, struct client *c)
{
	memset(c, 0, sizeof(*c));
	c->path = path;
	c->request = req;
	assert_int_equal(pthread_create(&c->thread, NULL, client_thread, c), 0);
	serve_one(ctl, vm);
	pthread_join(c->thread, NULL);
}

static unsigned int breaks;
static char keys[8];
static unsigned int nr_keys;

static size_t sink(void *opaque, const uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len && nr_keys < sizeof(keys); i++)
		keys[nr_keys++] = buf[i];
	return len;
}

static void on_break(void *opaque)
{
	breaks++;
	keys[nr_keys++] = '!';
}

static void test_requests(void **state)
{
	struct fake_vm f;
	struct vm *vm = &f.vm;
	struct control *ctl;
	struct client c;
	char path[256];

	assert_int_equal(fake_vm_init(&f, 16, 1), 0);
	ctl = control_open("served");
	assert_non_null(ctl);
	snprintf(path, sizeof(path), "%s/served.sock", tmpdir);

	request(ctl, vm, path, "ping", &c);
	assert_int_equal(c.ret, 0);
	{
		char want[128];

		snprintf(want, sizeof(want), "served %d running 1 16\n",
			 (int)getpid());
		assert_string_equal(c.body, want);
	}
	free(c.body);

	request(ctl, vm, path, "pause", &c);
	assert_int_equal(c.ret, 0);
	free(c.body);
	assert_true(vcpus_paused(vm));
	request(ctl, vm, path, "ping", &c);
	assert_non_null(strstr(c.body, " paused "));
	free(c.body);
	request(ctl, vm, path, "stat", &c);
	assert_int_equal(c.ret, 0);
	assert_non_null(strstr(c.body, "\"live\":true,\"paused\":true"));
	assert_non_null(strstr(c.body, "\"mem_mib\":16"));
	assert_int_equal(c.body[c.body_len - 1], '\n');
	free(c.body);
	request(ctl, vm, path, "resume", &c);
	assert_int_equal(c.ret, 0);
	free(c.body);
	assert_false(vcpus_paused(vm));

	/* no console to send SysRq on, then one */
	request(ctl, vm, path, "sysrq h", &c);
	assert_int_equal(c.ret, -1);
	assert_non_null(strstr(c.err, "no serial console"));
	free(c.body);
	console_set_sink(sink, on_break, NULL);
	request(ctl, vm, path, "sysrq h", &c);
	assert_int_equal(c.ret, 0);
	free(c.body);
	assert_int_equal(breaks, 1);
	assert_int_equal(nr_keys, 2);
	assert_memory_equal(keys, "!h", 2);
	request(ctl, vm, path, "sysrq %", &c);
	assert_int_equal(c.ret, -1);
	assert_non_null(strstr(c.err, "SysRq key"));
	free(c.body);
	assert_int_equal(breaks, 1);

	/* requests that are wrong */
	request(ctl, vm, path, "sysrq", &c);
	assert_int_equal(c.ret, -1);
	assert_non_null(strstr(c.err, "needs an argument"));
	free(c.body);
	request(ctl, vm, path, "pause now", &c);
	assert_int_equal(c.ret, -1);
	assert_non_null(strstr(c.err, "takes no argument"));
	free(c.body);
	assert_false(vcpus_paused(vm));
	request(ctl, vm, path, "reboot", &c);
	assert_int_equal(c.ret, -1);
	assert_non_null(strstr(c.err, "unknown request 'reboot'"));
	free(c.body);
	{
		char big[400];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		request(ctl, vm, path, big, &c);
		assert_int_equal(c.ret, -1);
		assert_non_null(strstr(c.err, "not understood"));
		free(c.body);
	}
	assert_false(vm_is_exiting(vm));

	request(ctl, vm, path, "stop", &c);
	assert_int_equal(c.ret, 0);
	free(c.body);
	assert_true(vm_is_exiting(vm));
	assert_int_equal(vm->exit_code, 0);
	assert_string_equal(vm->exit_reason, "stopped by lkvm stop");

	console_set_sink(NULL, NULL, NULL);
	control_close(ctl);
	fake_vm_destroy(&f);
}

/* A client that connects and says nothing holds the server up 1 s, no more. */
static void test_silent_client(void **state)
{
	struct fake_vm f;
	struct control *ctl;
	char path[256];
	double t0;
	int fd;

	assert_int_equal(fake_vm_init(&f, 16, 1), 0);
	ctl = control_open("quiet");
	assert_non_null(ctl);
	snprintf(path, sizeof(path), "%s/quiet.sock", tmpdir);
	fd = control_connect(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "pin", 3), 3);	/* no newline */
	t0 = now_ms();
	serve_one(ctl, &f.vm);
	assert_true(now_ms() - t0 >= 900 && now_ms() - t0 < 3000);
	{
		char reply[64] = "";

		assert_true(read(fd, reply, sizeof(reply) - 1) > 0);
		assert_non_null(strstr(reply, "error "));
	}
	close(fd);
	control_close(ctl);
	fake_vm_destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_directory_choice,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_directory_must_be_private,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_claiming_names,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_removing_stale_sockets,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_requests,
						setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_silent_client,
						setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
