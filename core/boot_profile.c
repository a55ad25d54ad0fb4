// SPDX-License-Identifier: GPL-2.0
/*
 * The boot profile (include/lkvm/boot_profile.h). Milestones come from
 * where they happen: main() and vm_run() for lkvm's own, the vCPU loop for
 * the first entry and exit, the UART for console bytes and the kernel's
 * lines (matched as they are sent, so they need no console parsing by the
 * user and cost nothing when the kernel is quiet), a port for our init,
 * vm_request_exit() for the end.
 */
#include <string.h>

#include "lkvm/boot_profile.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

static double process_start_ms;

static const char *const mark_names[BOOT_NR_MARKS] = {
	[BOOT_VMM_START] = "vmm_start",
	[BOOT_INPUTS_OPEN] = "inputs_open",
	[BOOT_VM_BUILT] = "vm_built",
	[BOOT_FIRST_ENTRY] = "first_entry",
	[BOOT_FIRST_EXIT] = "first_exit",
	[BOOT_FIRST_CONSOLE] = "first_console_byte",
	[BOOT_KERNEL_BANNER] = "kernel_banner",
	[BOOT_KERNEL_RUN_INIT] = "kernel_run_init",
	[BOOT_INIT_START] = "init_start",
	[BOOT_EXIT] = "exit_request",
};

const char *boot_mark_name(enum boot_mark m)
{
	return m < BOOT_NR_MARKS ? mark_names[m] : "?";
}

void boot_profile_start(double start_ms)
{
	process_start_ms = start_ms;
}

void boot_profile_init(struct vm *vm)
{
	struct boot_profile *bp = &vm->boot;

	memset(bp, 0, sizeof(*bp));
	pthread_mutex_init(&bp->lock, NULL);
	bp->start_ms = process_start_ms ? process_start_ms : now_ms();
	bp->marks[BOOT_VMM_START].set = true;
}

/* Each vCPU's counters are its own; a relaxed read of each is enough. */
static void vcpu_totals(struct vm *vm, uint64_t *exits, uint64_t *ns)
{
	unsigned int i;

	struct vcpu *vcpus = __atomic_load_n(&vm->vcpus, __ATOMIC_ACQUIRE);

	*exits = *ns = 0;
	if (!vcpus)
		return;
	for (i = 0; i < vm->nr_vcpus; i++) {
		*exits += __atomic_load_n(&vcpus[i].stats.exits,
					  __ATOMIC_RELAXED);
		*ns += __atomic_load_n(&vcpus[i].stats.handle_ns,
				       __ATOMIC_RELAXED);
	}
}

static void boot_mark_detail(struct vm *vm, enum boot_mark m,
			     const char *detail, double at_ms)
{
	struct boot_profile *bp = &vm->boot;
	struct boot_mark_rec *r;

	if (m >= BOOT_NR_MARKS)
		return;
	r = &bp->marks[m];
	if (__atomic_load_n(&r->set, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&bp->lock);
	if (!r->set) {
		r->ms = at_ms - bp->start_ms;
		vcpu_totals(vm, &r->exits, &r->vmm_ns);
		snprintf(r->detail, sizeof(r->detail), "%s", detail);
		__atomic_store_n(&r->set, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&bp->lock);
}

/*
 * Called on every exit and every console byte: once the mark is set, it
 * costs one load, not a clock read (a system call where the host's clock
 * source has no vDSO, as in a nested L1 on the HPET).
 */
void boot_mark(struct vm *vm, enum boot_mark m)
{
	if (m < BOOT_NR_MARKS &&
	    !__atomic_load_n(&vm->boot.marks[m].set, __ATOMIC_ACQUIRE))
		boot_mark_at(vm, m, now_ms());
}

void boot_mark_at(struct vm *vm, enum boot_mark m, double at_ms)
{
	boot_mark_detail(vm, m, "", at_ms);
}

/* "[    1.234567] text": the kernel's timestamp, if the line has one. */
static const char *printk_time(const char *line, char *buf, size_t size)
{
	const char *end;
	size_t n;

	buf[0] = '\0';
	if (line[0] != '[' || !(end = strchr(line, ']')))
		return line;
	line++;
	while (*line == ' ')
		line++;
	n = end - line;
	if (n < size) {
		memcpy(buf, line, n);
		buf[n] = '\0';
	}
	return end + 1;
}

static void boot_profile_line(struct vm *vm, const char *line)
{
	char stamp[BOOT_DETAIL_MAX];
	const char *text = printk_time(line, stamp, sizeof(stamp));

	if (strstr(text, "Linux version "))
		boot_mark_detail(vm, BOOT_KERNEL_BANNER, stamp, now_ms());
	else if (strstr(text, "Run ") && strstr(text, " as init process"))
		boot_mark_detail(vm, BOOT_KERNEL_RUN_INIT, stamp, now_ms());
}

void boot_profile_console(struct vm *vm, uint8_t c)
{
	struct boot_profile *bp = &vm->boot;

	boot_mark(vm, BOOT_FIRST_CONSOLE);
	/* Once the kernel has said all we look for, stop looking. */
	if (__atomic_load_n(&bp->marks[BOOT_KERNEL_RUN_INIT].set,
			    __ATOMIC_RELAXED))
		return;
	if (c == '\n' || c == '\r') {
		bp->line[bp->line_len] = '\0';
		if (bp->line_len)
			boot_profile_line(vm, bp->line);
		bp->line_len = 0;
	} else if (bp->line_len < BOOT_LINE_MAX - 1) {
		bp->line[bp->line_len++] = c;
	}
}

void boot_profile_write_json(struct vm *vm, FILE *f)
{
	unsigned int i;
	bool first = true;

	pthread_mutex_lock(&vm->boot.lock);
	fprintf(f, "\"boot\":[");
	for (i = 0; i < BOOT_NR_MARKS; i++) {
		const struct boot_mark_rec *r = &vm->boot.marks[i];

		if (!r->set)
			continue;
		fprintf(f, "%s{\"mark\":\"%s\",\"ms\":%.3f,\"exits\":%llu,"
			"\"vmm_ms\":%.3f,\"kernel_s\":\"%s\"}",
			first ? "" : ",", mark_names[i], r->ms,
			(unsigned long long)r->exits, r->vmm_ns / 1e6,
			r->detail);
		first = false;
	}
	fprintf(f, "]");
	pthread_mutex_unlock(&vm->boot.lock);
}

void boot_profile_print(struct vm *vm)
{
	const struct boot_mark_rec *order[BOOT_NR_MARKS], *prev = NULL;
	unsigned int i, j, n = 0;

	pthread_mutex_lock(&vm->boot.lock);
	/* In the order they happened, which need not be the enum's. */
	for (i = 0; i < BOOT_NR_MARKS; i++) {
		const struct boot_mark_rec *r = &vm->boot.marks[i];

		if (!r->set)
			continue;
		for (j = n++; j && order[j - 1]->ms > r->ms; j--)
			order[j] = order[j - 1];
		order[j] = r;
	}
	log_report("boot profile: ms since lkvm started; exits to lkvm and vCPU ms in lkvm since the mark before");
	for (i = 0; i < n; i++) {
		const struct boot_mark_rec *r = order[i];

		log_report("  %-20s %9.1f ms %8llu exits %8.1f ms%s%s%s",
			mark_names[r - vm->boot.marks], r->ms,
			(unsigned long long)(prev && r->exits > prev->exits ?
					     r->exits - prev->exits : 0),
			(prev && r->vmm_ns > prev->vmm_ns ?
			 r->vmm_ns - prev->vmm_ns : 0) / 1e6,
			r->detail[0] ? "  (kernel at " : "", r->detail,
			r->detail[0] ? " s)" : "");
		prev = r;
	}
	for (i = 0; i < BOOT_NR_MARKS; i++)
		if (!vm->boot.marks[i].set)
			log_report("  %-20s (not seen)", mark_names[i]);
	pthread_mutex_unlock(&vm->boot.lock);
}
