// SPDX-License-Identifier: GPL-2.0
/*
 * --stats output. One JSON object so that scripts (the benchmarks, CI) can
 * read it without scraping: the exit, time and memory of the VMM, and the
 * exits each vCPU took to user space.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/console.h"
#include "lkvm/devices.h"
#include "lkvm/iothread.h"
#include "lkvm/stats.h"
#include "lkvm/util.h"
#include "lkvm/vm.h"

/* VmHWM: this process's own peak, unlike ru_maxrss, which inherits the
 * peak of whatever forked us before the exec. */
static uint64_t self_peak_rss_kib(void)
{
	unsigned long long kib = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static uint64_t self_rss_kib(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Resident pages of guest RAM: what the guest touched, not VMM overhead. */
static uint64_t guest_rss_kib(const struct vm *vm)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = vm->ram_size / page, i;
	uint64_t resident = 0;
	unsigned char *vec;

	if (!vm->ram || !pages)
		return 0;
	vec = malloc(pages);
	if (!vec)
		return 0;
	if (mincore(vm->ram, vm->ram_size, vec) == 0)
		for (i = 0; i < pages; i++)
			resident += vec[i] & 1;
	free(vec);
	return resident * (page / 1024);
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void write_vcpus(FILE *f, const struct vm *vm)
{
	unsigned int i;

	fprintf(f, "\"vcpus\":[");
	for (i = 0; vm->vcpus && i < vm->nr_vcpus; i++) {
		const struct vcpu_stats *s = &vm->vcpus[i].stats;

		fprintf(f, "%s{\"id\":%u,\"exits\":%llu,\"io\":%llu,\"mmio\":%llu,"
			"\"hlt\":%llu,\"intr\":%llu,\"other\":%llu}",
			i ? "," : "", i, (unsigned long long)s->exits,
			(unsigned long long)s->io, (unsigned long long)s->mmio,
			(unsigned long long)s->hlt, (unsigned long long)s->intr,
			(unsigned long long)s->other);
	}
	fprintf(f, "]");
}

/* Exits per device range: where a guest's port and MMIO exits went. */
static void write_bus(FILE *f, const char *key, struct bus *bus)
{
	unsigned int i, n = 0;

	fprintf(f, "\"%s\":[", key);
	pthread_rwlock_rdlock(&bus->lock);
	for (i = 0; i < bus->nr_ranges; i++) {
		const struct bus_range *r = &bus->ranges[i];

		if (!r->dev->accesses)
			continue;
		fprintf(f, "%s{\"device\":\"%s\",\"base\":%llu,\"exits\":%llu}",
			n++ ? "," : "", r->dev->name,
			(unsigned long long)r->base,
			(unsigned long long)r->dev->accesses);
	}
	pthread_rwlock_unlock(&bus->lock);
	fprintf(f, "],");
}

static void write_console(FILE *f)
{
	uint64_t written, dropped;
	size_t queued;

	console_output_stats(&written, &dropped, &queued);
	fprintf(f, "\"console\":{\"written\":%llu,\"dropped\":%llu,"
		"\"unwritten\":%zu},", (unsigned long long)written,
		(unsigned long long)dropped, queued);
}

void stats_print(struct vm *vm, FILE *f, double wall_ms, bool live)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	fprintf(f, "{\"exit_code\":%d,\"exit_reason\":", vm->exit_code);
	json_string(f, vm->exit_reason);
	fprintf(f, ",\"wall_ms\":%.3f,\"user_ms\":%.3f,\"sys_ms\":%.3f,"
		"\"rss_kib\":%llu,\"guest_rss_kib\":%llu,\"max_rss_kib\":%llu,"
		"\"mem_mib\":%llu,\"nr_vcpus\":%u,\"coalesced_pio\":%s,"
		"\"pio_unhandled\":%llu,\"mmio_unhandled\":%llu,",
		wall_ms, ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
		ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3,
		(unsigned long long)self_rss_kib(),
		(unsigned long long)guest_rss_kib(vm),
		(unsigned long long)self_peak_rss_kib(),
		(unsigned long long)vm->cfg->mem_mib, vm->nr_vcpus,
		vm->coalesced_ring ? "true" : "false",
		(unsigned long long)vm->pio.unhandled,
		(unsigned long long)vm->mmio.unhandled);
	fprintf(f, "\"live\":%s,\"paused\":%s,", live ? "true" : "false",
		vcpus_paused(vm) ? "true" : "false");
	write_console(f);
	boot_profile_write_json(vm, f);
	fputc(',', f);
	write_bus(f, "pio_devices", &vm->pio);
	write_bus(f, "mmio_devices", &vm->mmio);
	write_vcpus(f, vm);
	fputc(',', f);
	iothreads_write_stats(vm, f);
	fputc(',', f);
	devices_write_stats(vm, f, live);
	fprintf(f, "}\n");
}

int stats_create(const char *path)
{
	struct stat st;
	int fd;

	/* a terminal, a FIFO: there already, and opened only at the end */
	if (!strcmp(path, "-") || (!stat(path, &st) && !S_ISREG(st.st_mode)))
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		pr_err("--stats %s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int stats_write(struct vm *vm, const char *path, double wall_ms)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stderr;

	if (!f) {
		pr_err("cannot write stats to '%s': %s", path, strerror(errno));
		return -1;
	}
	stats_print(vm, f, wall_ms, false);
	if (f != stderr && fclose(f)) {
		pr_err("cannot write stats to '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}
