// SPDX-License-Identifier: GPL-2.0
/*
 * `lkvm run` end to end: open and check what the user gave, build the VM in
 * the order the arch interface documents, start the vCPUs, then run the main loop (console input,
 * signals, --timeout, exit requests) until something ends the VM, and tear
 * everything down with the terminal restored.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "lkvm/arch.h"
#include "lkvm/boot_profile.h"
#include "lkvm/console.h"
#include "lkvm/control.h"
#include "lkvm/devices.h"
#include "lkvm/doctor.h"
#include "lkvm/inputs.h"
#include "lkvm/irq.h"
#include "lkvm/landlock.h"
#include "lkvm/seccomp.h"
#include "lkvm/stats.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

/* How long a stopped console reader may hold up the exit. */
#define CONSOLE_STALL_MS	500

/* Signals that end the VM are read from a signalfd by the main loop. */
static int block_exit_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
	if (pthread_sigmask(SIG_BLOCK, set, NULL))
		return -1;
	return signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void handle_signal(struct vm *vm, int sfd)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) == sizeof(si))
		vm_request_exit(vm, 128 + si.ssi_signo, "stopped by signal %s",
				strsignal(si.ssi_signo));
}

static void handle_console(struct vm *vm, struct pollfd *pfd)
{
	int ret = console_read_input();

	if (ret < 0)
		pfd->fd = -1;	/* EOF: stop polling, the guest runs on */
	else if (ret > 0)
		vm_request_exit(vm, EXIT_POWEROFF, "quit from the console");
}

static void main_loop(struct vm *vm, int sfd, struct control *ctl)
{
	double deadline = vm->cfg->deadline_ms;
	struct pollfd pfd[4] = {
		{ .fd = vm->exit_efd, .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
		{ .fd = console_input_fd(), .events = POLLIN },
		{ .fd = control_fd(ctl), .events = POLLIN },
	};

	while (!vm_is_exiting(vm)) {
		int n = poll(pfd, 4, poll_timeout_ms(deadline, now_ms()));

		if (n < 0 && errno != EINTR) {
			vm_request_exit(vm, EXIT_VMM_ERROR, "poll: %s",
					strerror(errno));
			break;
		}
		/*
		 * The clock decides, not poll()'s 0: a wait longer than poll()
		 * takes comes back early, and steady console input would keep
		 * poll() from ever timing out.
		 */
		if (deadline && now_ms() >= deadline) {
			vm_request_exit(vm, EXIT_TIMEOUT,
					"timeout: stopped after %u s",
					vm->cfg->timeout_s);
			break;
		}
		if (n <= 0)
			continue;
		if (pfd[1].revents & POLLIN)
			handle_signal(vm, sfd);
		if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR))
			handle_console(vm, &pfd[2]);
		else if (pfd[2].revents & POLLNVAL)
			pfd[2].fd = -1;
		if (pfd[3].revents & POLLIN)
			control_serve(ctl, vm);
	}
}

/*
 * The guest's last words reach the user before lkvm's own, unless the
 * reader stopped: then lkvm says what was lost rather than wait for it.
 */
static void console_finish(void)
{
	uint64_t written, dropped;
	size_t unwritten;

	console_flush(CONSOLE_STALL_MS);
	console_stop();
	console_output_stats(&written, &dropped, &unwritten);
	if (dropped || unwritten)
		pr_warn("console: %llu bytes of guest output lost (nothing read them for %u ms)",
			(unsigned long long)(dropped + unwritten),
			CONSOLE_STALL_MS);
}

static void report_exit(const struct vm *vm)
{
	if (vm->exit_code == EXIT_POWEROFF || vm->exit_chosen_by_guest)
		pr_info("%s", vm->exit_reason);
	else
		pr_warn("%s (exit status %d)", vm->exit_reason, vm->exit_code);
}

/*
 * A kernel that ended badly without a byte on the console most likely
 * wrote it somewhere lkvm does not show: the doctor says where.
 */
static void report_silent_console(const struct vm *vm)
{
	const struct vm_config *cfg = vm->cfg;
	uint64_t written, dropped;
	size_t queued;
	char why[256];

	if (!cfg->kernel || vm->exit_code == EXIT_POWEROFF ||
	    vm->exit_chosen_by_guest)
		return;
	console_output_stats(&written, &dropped, &queued);
	if (written || dropped)
		return;
	if (doctor_console(cfg->params ? cfg->params : arch_default_params,
			   cfg->virtio_console, why, sizeof(why)))
		pr_warn("%s", why);
}

static int build_vm(struct vm *vm, struct vm_inputs *in)
{
	uint64_t ranges[ARCH_MAX_RAM_RANGES][2];
	unsigned int n;

	n = arch_ram_layout(vm->cfg->mem_mib * MiB, ranges);
	/*
	 * vCPUs before devices: arm64's vGIC is initialised only once every
	 * vCPU exists, and KVM takes no irqfd before that. Their entry
	 * state waits for the guest to be loaded.
	 */
	if (arch_vm_init(vm) ||
	    vm_setup_ram(vm, (const uint64_t (*)[2])ranges, n) ||
	    irq_init(vm) || vcpus_create(vm) || arch_devices_init(vm) ||
	    devices_create(vm, in) || vm_inputs_load_guest(in, vm) ||
	    vcpus_boot(vm))
		return -1;
	return 0;
}

static void warn_software_kvm(struct vm *vm)
{
	if (vm->software_kvm)
		pr_warn("/dev/kvm here is a software KVM (kvm_pvm): every guest instruction is emulated, so only tiny guests run in useful time; Linux guests need hardware virtualization");
}

/*
 * The VM's name on its control socket: --name, or guest-PID as kvmtool
 * names them. A --name that cannot be had is an error; without one, the
 * VM runs unmanaged rather than not at all.
 */
static struct control *claim_name(const struct vm_config *cfg)
{
	char name[CONTROL_NAME_MAX + 1];
	struct control *ctl;

	if (cfg->name)
		return control_open(cfg->name);
	snprintf(name, sizeof(name), "guest-%d", (int)getpid());
	ctl = control_open(name);
	if (!ctl)
		pr_warn("running without a control socket: lkvm list, stop, pause and stat will not see this VM");
	return ctl;
}

int vm_run(const struct vm_config *cfg, bool *reboot)
{
	double start = now_ms();
	struct control *ctl = NULL;
	struct vm_inputs in;
	struct vm vm;
	sigset_t sigs;
	double inputs_ms;
	int sfd, code;

	*reboot = false;
	/* before the first thread: the slirp thread starts with its input */
	if ((!cfg->no_seccomp && seccomp_prepare()) || landlock_prepare(cfg))
		return EXIT_VMM_ERROR;
	/* Everything the user gave is checked before /dev/kvm is opened. */
	if (vm_inputs_open(&in, cfg)) {
		vm_inputs_close(&in);
		return EXIT_VMM_ERROR;
	}
	ctl = claim_name(cfg);
	/* what run time needs: the threads started from here on confine to it */
	if ((!ctl && cfg->name) ||
	    (cfg->stats_path && stats_create(cfg->stats_path)) ||
	    landlock_allow_vm(cfg, in.share_fds, control_sock(ctl))) {
		control_close(ctl);
		vm_inputs_close(&in);
		return EXIT_VMM_ERROR;
	}
	inputs_ms = now_ms();
	sfd = block_exit_signals(&sigs);
	if (sfd < 0) {
		pr_err("signalfd: %s", strerror(errno));
		control_close(ctl);
		vm_inputs_close(&in);
		return EXIT_VMM_ERROR;
	}
	if (vm_create(&vm, cfg) || build_vm(&vm, &in)) {
		code = EXIT_VMM_ERROR;
		goto out;
	}
	vm.start_ms = start;
	boot_mark_at(&vm, BOOT_INPUTS_OPEN, inputs_ms);
	boot_mark(&vm, BOOT_VM_BUILT);
	warn_software_kvm(&vm);
	console_init();
	if (vcpus_start(&vm)) {
		vm_request_exit(&vm, EXIT_VMM_ERROR, "cannot start the vCPUs");
	} else if (seccomp_confine(SECCOMP_MAIN)) {
		/* last: a thread it started would inherit its filter */
		vm_request_exit(&vm, EXIT_VMM_ERROR, "cannot confine lkvm");
	} else {
		main_loop(&vm, sfd, ctl);
	}
	/* the name is free again once nobody can reach the VM */
	control_close(ctl);
	ctl = NULL;
	vcpus_stop(&vm);
	devices_stop(&vm);
	console_finish();
	console_restore();
	code = vm.exit_code;
	*reboot = code == EXIT_GUEST_REBOOT && !vm.exit_chosen_by_guest;
	report_exit(&vm);
	if (code == EXIT_TIMEOUT)
		vcpus_report(&vm);
	devices_report_unused(&vm);
	report_silent_console(&vm);
	if (cfg->boot_profile)
		boot_profile_print(&vm);
	if (cfg->stats_path &&
	    stats_write(&vm, cfg->stats_path, now_ms() - start) &&
	    code == EXIT_POWEROFF)
		code = EXIT_VMM_ERROR;
out:
	control_close(ctl);
	vcpus_destroy(&vm);
	devices_stop(&vm);
	irq_exit(&vm);
	arch_vm_exit(&vm);
	vm_destroy(&vm);
	vm_inputs_close(&in);
	close(sfd);
	return code;
}
