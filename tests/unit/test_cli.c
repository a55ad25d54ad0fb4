// SPDX-License-Identifier: GPL-2.0
/* Unit tests of `lkvm run` option parsing and validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lkvm/arch.h"
#include "lkvm/cli.h"
#include "lkvm/util.h"

static char kernel_path[] = "/tmp/lkvm-test-kernel-XXXXXX";

static int make_kernel(void **state)
{
	int fd = mkstemp(kernel_path);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int remove_kernel(void **state)
{
	unlink(kernel_path);
	return 0;
}

#define PARSE(cfg, ...) ({						\
	char *argv_[] = { "run", __VA_ARGS__, NULL };			\
	cli_parse_run(ARRAY_SIZE(argv_) - 1, argv_, cfg);		\
})

static void test_defaults(void **state)
{
	struct vm_config cfg;

	assert_int_equal(PARSE(&cfg, "-k", kernel_path), CLI_OK);
	assert_string_equal(cfg.kernel, kernel_path);
	assert_int_equal(cfg.mem_mib, DEFAULT_MEM_MIB);
	assert_int_equal(cfg.nr_cpus, 1);
	assert_null(cfg.params);
	assert_int_equal(cfg.timeout_s, 0);
}

static void test_long_and_short_options(void **state)
{
	struct vm_config cfg;

	assert_int_equal(PARSE(&cfg, "--kernel", kernel_path, "--mem", "512",
			       "--cpus", "4", "-p", "console=ttyS0 quiet",
			       "--name", "vm1", "--timeout", "30",
			       "--console", "serial", "--stats", "-"), CLI_OK);
	assert_int_equal(cfg.mem_mib, 512);
	assert_int_equal(cfg.nr_cpus, 4);
	assert_string_equal(cfg.params, "console=ttyS0 quiet");
	assert_string_equal(cfg.name, "vm1");
	assert_int_equal(cfg.timeout_s, 30);
	assert_string_equal(cfg.stats_path, "-");
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-m", "64", "-c", "2",
			       "-i", kernel_path), CLI_OK);
	assert_int_equal(cfg.mem_mib, 64);
	assert_string_equal(cfg.initrd, kernel_path);
}

static void test_polling_options(void **state)
{
	struct vm_config cfg;

	assert_int_equal(PARSE(&cfg, "-k", kernel_path), CLI_OK);
	assert_int_equal(cfg.poll.mode, VIRTIO_POLL_AUTO);
	assert_int_equal(cfg.poll.max_us, VIRTIO_POLL_DEFAULT_MAX_US);
	assert_int_equal(cfg.nr_iothreads, 0);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--poll",
			       "on,max_us=20", "--iothreads", "2", "-d",
			       "/dev/null,poll=off", "-d", "/dev/zero", "-n",
			       "mode=user,poll=auto"), CLI_OK);
	assert_int_equal(cfg.poll.mode, VIRTIO_POLL_ON);
	assert_int_equal(cfg.poll.max_us, 20);
	assert_int_equal(cfg.poll.start_rate, VIRTIO_POLL_DEFAULT_START_RATE);
	assert_int_equal(cfg.nr_iothreads, 2);
	/* a device's own mode, or none: --poll's */
	assert_int_equal(cfg.disks[0].poll, VIRTIO_POLL_OFF);
	assert_int_equal(cfg.disks[1].poll, VIRTIO_POLL_UNSET);
	assert_int_equal(cfg.nics[0].poll, VIRTIO_POLL_AUTO);
}

/* -d: the disk's keys into its own parameters, poll= the device's. */
static void test_disk_options(void **state)
{
	struct vm_config cfg;
	const struct disk_params *d = &cfg.disks[0].disk;

	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-d",
			       "/dev/null,ro,format=raw,backing-dir=/srv/base,aio=sync,poll=on,direct"),
			 CLI_OK);
	assert_string_equal(d->path, "/dev/null");
	assert_string_equal(d->backing_dir, "/srv/base");
	assert_true(d->readonly && d->direct);
	assert_int_equal(d->format, DISK_FORMAT_RAW);
	assert_int_equal(d->aio, DISK_AIO_SYNC);
	assert_int_equal(cfg.disks[0].poll, VIRTIO_POLL_ON);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-d", "/dev/null"),
			 CLI_OK);
	assert_null(d->backing_dir);
	assert_int_equal(d->format, DISK_FORMAT_AUTO);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-d",
			       "/dev/null,backing-dir="), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-d",
			       "/dev/null,poll=sometimes"), CLI_ERROR);
}

static void test_bad_numbers(void **state)
{
	static const char *const bad_mem[] = {
		"0", "3", "-1", "abc", "12x", "", "99999999999999999999",
		"2000000",
	};
	static const char *const bad_cpus[] = { "0", "256", "-2", "1.5", "" };
	struct vm_config cfg;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad_mem); i++)
		assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-m",
				       (char *)bad_mem[i]), CLI_ERROR);
	for (i = 0; i < ARRAY_SIZE(bad_cpus); i++)
		assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-c",
				       (char *)bad_cpus[i]), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--timeout", "0"),
			 CLI_ERROR);
}

static void test_bad_combinations(void **state)
{
	struct vm_config cfg;

	assert_int_equal(PARSE(&cfg, "-f", kernel_path, "-k", kernel_path),
			 CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-f", kernel_path, "-p", "x"), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "--console", "tty", "-k", kernel_path),
			 CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--bogus"), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "extra"), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k"), CLI_ERROR);
}

static void test_missing_files(void **state)
{
	struct vm_config cfg;

	assert_int_equal(PARSE(&cfg, "-k", "/nonexistent/bzImage"), CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-i", "/nonexistent"),
			 CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-f", "/nonexistent"), CLI_ERROR);
}

/* --append adds to whichever command line the guest would get. */
static void test_append(void **state)
{
	struct vm_config cfg;
	char want[512];

	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--append", "quiet"),
			 CLI_OK);
	snprintf(want, sizeof(want), "%s quiet", arch_default_params);
	assert_string_equal(cfg.params, want);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "-p", "a=1",
			       "--append", "b", "--append", "c d"), CLI_OK);
	assert_string_equal(cfg.params, "a=1 b c d");
	/* Firmware takes no command line at all. */
	assert_int_equal(PARSE(&cfg, "-f", kernel_path, "--append", "quiet"),
			 CLI_ERROR);
	/* Longer than any kernel takes: refused, not cut. */
	{
		char big[3000];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--append", big,
				       "--append", big), CLI_ERROR);
	}
}

/* --console virtio: hvc0 takes ttyS0's place in lkvm's line, once. */
static void test_console_option(void **state)
{
	struct vm_config cfg;
	char want[512];
	const char *serial = strstr(arch_default_params, "console=ttyS0");

	assert_non_null(serial);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--console", "serial"),
			 CLI_OK);
	assert_false(cfg.virtio_console);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--console", "virtio"),
			 CLI_OK);
	assert_true(cfg.virtio_console);
	snprintf(want, sizeof(want), "%.*sconsole=hvc0%s",
		 (int)(serial - arch_default_params), arch_default_params,
		 serial + strlen("console=ttyS0"));
	assert_string_equal(cfg.params, want);
	assert_null(strstr(cfg.params, "ttyS0"));
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--console", "virtio",
			       "--append", "quiet"), CLI_OK);
	strcat(want, " quiet");
	assert_string_equal(cfg.params, want);
	/* the user's own line is theirs */
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--console", "virtio",
			       "-p", "console=ttyS0"), CLI_OK);
	assert_string_equal(cfg.params, "console=ttyS0");
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--console", "hvc"),
			 CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--name", "a/b"),
			 CLI_ERROR);
	assert_int_equal(PARSE(&cfg, "-k", kernel_path, "--name", "vm-1.a_b"),
			 CLI_OK);
	assert_string_equal(cfg.name, "vm-1.a_b");
}

static void test_default_guest(void **state)
{
	char dir[] = "/tmp/lkvm-test-guest-XXXXXX";
	char path[256], want[512];
	struct vm_config cfg;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	setenv("LKVM_DEFAULT_GUEST", dir, 1);
	/* An empty folder: a clear error, not a crash. */
	assert_int_equal(cli_parse_run(1, (char *[]){ "run", NULL }, &cfg),
			 CLI_ERROR);
	snprintf(path, sizeof(path), "%s/kernel", dir);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof(path), "%s/cmdline", dir);
	f = fopen(path, "w");
	fputs("console=ttyS0 lkvm.run=/bin/sh\n", f);
	fclose(f);
	assert_int_equal(cli_parse_run(1, (char *[]){ "run", NULL }, &cfg),
			 CLI_OK);
	assert_true(cfg.default_guest);
	/* The guest's cmdline file adds to lkvm's default command line. */
	snprintf(want, sizeof(want), "%s console=ttyS0 lkvm.run=/bin/sh",
		 arch_default_params);
	assert_string_equal(cfg.params, want);
	assert_null(cfg.initrd);
	assert_int_equal(cli_parse_run(3, (char *[]){ "run", "--append", "x=1",
						      NULL }, &cfg), CLI_OK);
	snprintf(want, sizeof(want), "%s console=ttyS0 lkvm.run=/bin/sh x=1",
		 arch_default_params);
	assert_string_equal(cfg.params, want);
	/* The user's -p beats the guest's cmdline file. */
	assert_int_equal(cli_parse_run(3, (char *[]){ "run", "-p", "quiet", NULL },
				       &cfg), CLI_OK);
	assert_string_equal(cfg.params, "quiet");
	unlink(path);
	snprintf(path, sizeof(path), "%s/kernel", dir);
	unlink(path);
	rmdir(dir);
	unsetenv("LKVM_DEFAULT_GUEST");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_long_and_short_options),
		cmocka_unit_test(test_polling_options),
		cmocka_unit_test(test_disk_options),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_bad_combinations),
		cmocka_unit_test(test_missing_files),
		cmocka_unit_test(test_append),
		cmocka_unit_test(test_console_option),
		cmocka_unit_test(test_default_guest),
	};

	log_threshold = LOG_SILENT;	/* the errors are expected */
	return cmocka_run_group_tests(tests, make_kernel, remove_kernel);
}
