// SPDX-License-Identifier: GPL-2.0
/* lkvm's entry: subcommand dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/cli.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

#ifndef LKVM_VERSION
#define LKVM_VERSION "0.1"
#endif

/*
 * A guest reboot with --reboot starts the whole VMM again: a fresh process
 * is the surest way to give the guest a machine in its power-on state.
 */
#define DEADLINE_ENV	"LKVM_REBOOT_DEADLINE_MS"

/* --timeout covers all boots: a rebooted lkvm inherits the deadline. */
static void set_deadline(struct vm_config *cfg)
{
	const char *inherited = getenv(DEADLINE_ENV);

	if (!cfg->timeout_s)
		return;
	if (inherited && cfg->reboot)
		cfg->deadline_ms = strtod(inherited, NULL);
	else
		cfg->deadline_ms = now_ms() + cfg->timeout_s * 1e3;
}

static int run_with_reboot(struct vm_config *cfg, char **argv)
{
	char deadline[32];
	bool reboot;
	int code;

	set_deadline(cfg);
	code = vm_run(cfg, &reboot);
	/*
	 * A guest that reboots before the main loop ever looks at the clock
	 * would otherwise be started again for ever.
	 */
	if (reboot && cfg->reboot && cfg->deadline_ms &&
	    now_ms() >= cfg->deadline_ms) {
		pr_warn("timeout: stopped after %u s (exit status %d)",
			cfg->timeout_s, EXIT_TIMEOUT);
		return EXIT_TIMEOUT;
	}
	if (reboot && cfg->reboot) {
		pr_info("guest rebooted: starting it again");
		snprintf(deadline, sizeof(deadline), "%.3f", cfg->deadline_ms);
		setenv(DEADLINE_ENV, deadline, 1);
		execv("/proc/self/exe", argv);
		pr_err("cannot restart lkvm for the reboot: %m");
	}
	return code;
}

static void usage(void)
{
	printf(
"usage: lkvm <command> [options]\n"
"\n"
"  run       boot a guest (lkvm run --help)\n"
"  probe     say whether /dev/kvm runs guests at hardware speed\n"
"            (exit 0: yes, 2: software KVM only, 3: no KVM here,\n"
"            1: /dev/kvm unusable, such as no permission)\n"
"  version   print the version\n"
"  help      this text\n");
}

/*
 * Tell scripts where guests can run: 0 here at hardware speed, 2 only tiny
 * guests (a software KVM), 3 nowhere (no KVM on this machine: a nested set-up
 * under QEMU's TCG needs none), 1 /dev/kvm is there but unusable (fix it).
 */
static int cmd_probe(void)
{
	static const char *const verdicts[] = {
		[KVM_NONE] = "none", [KVM_UNUSABLE] = "unusable",
		[KVM_SOFTWARE] = "software", [KVM_HARDWARE] = "hardware",
	};
	static const int statuses[] = {
		[KVM_NONE] = 3, [KVM_UNUSABLE] = 1,
		[KVM_SOFTWARE] = 2, [KVM_HARDWARE] = 0,
	};
	enum kvm_kind kind;
	char why[160];
	int fd = kvm_device_open(&kind, why, sizeof(why));

	if (fd >= 0) {
		snprintf(why, sizeof(why), kind == KVM_SOFTWARE ?
			 "/dev/kvm is kvm_pvm, which emulates every guest instruction" :
			 "/dev/kvm is hardware-accelerated");
		close(fd);
	}
	printf("%s: %s\n", verdicts[kind], why);
	return statuses[kind];
}

int main(int argc, char **argv)
{
	struct vm_config cfg;
	const char *cmd = argc > 1 ? argv[1] : "help";

	if (!strcmp(cmd, "run")) {
		switch (cli_parse_run(argc - 1, argv + 1, &cfg)) {
		case CLI_EXIT_OK:
			return 0;
		case CLI_ERROR:
			return EXIT_VMM_ERROR;
		case CLI_OK:
			return run_with_reboot(&cfg, argv);
		}
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("lkvm version %s\n", LKVM_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "probe"))
		return cmd_probe();
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage();
		return 0;
	}
	pr_err("unknown command '%s' (see lkvm --help)", cmd);
	return EXIT_VMM_ERROR;
}
