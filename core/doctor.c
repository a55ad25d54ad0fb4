// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel doctor (see include/lkvm/doctor.h). It runs only at exit and
 * only when something went unused, so it may read whole files; sizes are
 * bounded all the same, since the files are the user's and may be
 * anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lkvm/doctor.h"
#include "lkvm/file_map.h"
#include "lkvm/util.h"

#define INFLATE_MAX	(512u << 20)	/* an initramfs bigger than this: unread */
#define CONFIG_MAX	(4u << 20)
#define NEWC_HEADER	110

struct doctor {
	char *config;		/* the kernel's .config, or NULL */
	bool config_embedded;	/* from the image, not a file beside it */
	char *modules;		/* "\n"-separated module names, or NULL */
	bool have_initrd;
};

/* gunzip src (one or more members) into a malloc'd buffer of *out_len. */
static uint8_t *gunzip(const uint8_t *src, size_t len, size_t max,
		       size_t *out_len, size_t *in_used)
{
	z_stream z = { .next_in = (uint8_t *)src, .avail_in = len };
	size_t cap = 1 << 20, used = 0;
	uint8_t *out = malloc(cap);
	int ret = Z_OK;

	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	while (ret != Z_STREAM_END || (z.avail_in > 2 && z.next_in[0] == 0x1f &&
				       z.next_in[1] == 0x8b)) {
		if (ret == Z_STREAM_END && inflateReset(&z) != Z_OK)
			break;
		if (used == cap) {
			uint8_t *bigger = cap * 2 > max ? NULL :
					  realloc(out, cap * 2);

			if (!bigger)
				break;
			out = bigger;
			cap *= 2;
		}
		z.next_out = out + used;
		z.avail_out = cap - used;
		ret = inflate(&z, Z_NO_FLUSH);
		used = cap - z.avail_out;
		if (ret != Z_OK && ret != Z_STREAM_END)
			break;
		if (ret == Z_OK && !z.avail_in)
			break;		/* cut short: keep what came out */
	}
	*in_used = z.next_in - src;
	inflateEnd(&z);
	*out_len = used;
	return out;
}

/* The config between the markers in an uncompressed image. */
static char *config_in(const uint8_t *img, size_t len)
{
	const uint8_t *start = memmem(img, len, "IKCFG_ST", 8), *end;
	size_t n, used;
	uint8_t *text, *fit;

	if (!start)
		return NULL;
	start += 8;
	end = memmem(start, len - (start - img), "IKCFG_ED", 8);
	if (!end)
		return NULL;
	text = gunzip(start, end - start, CONFIG_MAX, &n, &used);
	/* nothing came out: not a config after all */
	fit = text && n ? realloc(text, n + 1) : NULL;
	if (!fit) {
		free(text);
		return NULL;
	}
	fit[n] = '\0';
	return (char *)fit;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * A bzImage keeps the kernel compressed (boot protocol: payload_offset
 * and payload_length in the setup header, from the protected-mode code
 * after the setup sectors); zlib reads a gzip'd one.
 */
static char *config_in_bzimage(const uint8_t *img, size_t len)
{
	size_t code, off, plen, n, used;
	uint8_t *vmlinux;
	char *config;

	if (len < 0x250 || memcmp(img + 0x202, "HdrS", 4))
		return NULL;
	code = ((size_t)(img[0x1f1] ? img[0x1f1] : 4) + 1) * 512;
	off = le32(img + 0x248);
	plen = le32(img + 0x24c);
	if (code > len || off > len - code || plen > len - code - off ||
	    plen < 2 || img[code + off] != 0x1f || img[code + off + 1] != 0x8b)
		return NULL;
	vmlinux = gunzip(img + code + off, plen, INFLATE_MAX, &n, &used);
	config = vmlinux ? config_in(vmlinux, n) : NULL;
	free(vmlinux);
	return config;
}

char *doctor_kernel_config(const uint8_t *img, size_t len)
{
	char *config = config_in(img, len);

	return config ? config : config_in_bzimage(img, len);
}

const char *doctor_config_value(const char *config, const char *option,
				char *buf, size_t size)
{
	size_t olen = strlen(option);
	const char *line;

	for (line = config; line && *line; line = strchr(line, '\n'),
	     line = line ? line + 1 : NULL)
		if (!strncmp(line, option, olen) && line[olen] == '=') {
			snprintf(buf, size, "%.*s",
				 (int)strcspn(line + olen + 1, "\n"),
				 line + olen + 1);
			return buf;
		}
	return NULL;	/* "# CONFIG_X is not set", or not there at all */
}

static unsigned long hex8(const uint8_t *p)
{
	char field[9];

	memcpy(field, p, 8);
	field[8] = '\0';
	return strtoul(field, NULL, 16);
}

struct module_list {
	char *names;		/* "\n"-separated */
	size_t used, size;
};

static void add_module(struct module_list *l, const char *name, size_t len)
{
	if (l->used + len + 2 > l->size)
		return;		/* enough to judge by */
	memcpy(l->names + l->used, name, len);
	l->used += len;
	l->names[l->used++] = '\n';
	l->names[l->used] = '\0';
}

/* The modules in one newc archive at a; returns the bytes it spans. */
static size_t list_cpio_modules(const uint8_t *a, size_t len,
				struct module_list *l)
{
	size_t pos = 0;

	while (len - pos >= NEWC_HEADER && !memcmp(a + pos, "070701", 6)) {
		unsigned long fsize = hex8(a + pos + 54);
		unsigned long nsize = hex8(a + pos + 94);
		const char *name = (const char *)a + pos + NEWC_HEADER;
		const char *base, *ko;
		bool last;

		if (nsize > len - pos - NEWC_HEADER)
			return len;
		last = nsize == 11 && !memcmp(name, "TRAILER!!!", 10);
		base = memrchr(name, '/', nsize);
		base = base ? base + 1 : name;
		ko = memmem(base, nsize - (base - name), ".ko", 3);
		if (ko)
			add_module(l, base, ko - base);
		pos += (NEWC_HEADER + nsize + 3) & ~3ul;
		if (pos > len || fsize > len - pos)
			return len;
		pos += (fsize + 3) & ~3ul;
		if (last)
			return MIN(pos, len);
	}
	return len;
}

char *doctor_initrd_modules(const uint8_t *img, size_t len)
{
	struct module_list l = { calloc(1, 1 << 16), 0, 1 << 16 };
	size_t pos = 0, n, used;

	if (!l.names)
		return NULL;
	/* archives one after another, each plain or gzip'd, zero padding */
	while (pos < len) {
		if (!img[pos]) {
			pos++;
		} else if (len - pos > 6 && !memcmp(img + pos, "070701", 6)) {
			pos += list_cpio_modules(img + pos, len - pos, &l);
		} else if (len - pos > 2 && img[pos] == 0x1f &&
			   img[pos + 1] == 0x8b) {
			uint8_t *a = gunzip(img + pos, len - pos, INFLATE_MAX,
					    &n, &used);

			if (a) {
				for (size_t at = 0; at < n; )
					at += n - at > 6 &&
					      !memcmp(a + at, "070701", 6) ?
					      list_cpio_modules(a + at, n - at, &l) :
					      1;
			}
			free(a);
			if (!a || !used)
				break;
			pos += used;
		} else {
			break;	/* xz, zstd, lz4...: not read here */
		}
	}
	return l.names;
}

bool doctor_config_path(const char *kernel, char *path, size_t size)
{
	static const char *const tree[] = { "/arch/x86/boot/bzImage", "/vmlinux" };
	const char *base = strrchr(kernel, '/');
	size_t dir, len = strlen(kernel), i;

	base = base ? base + 1 : kernel;
	dir = base - kernel;
	path[0] = '\0';
	if (!strncmp(base, "vmlinuz-", 8) || !strncmp(base, "vmlinux-", 8))
		snprintf(path, size, "%.*sconfig-%s", (int)dir, kernel,
			 base + 8);
	for (i = 0; !path[0] && i < ARRAY_SIZE(tree); i++) {
		size_t t = strlen(tree[i]);

		if (len >= t && !strcmp(kernel + len - t, tree[i]))
			snprintf(path, size, "%.*s/.config", (int)(len - t),
				 kernel);
	}
	return path[0] != '\0';
}

static char *config_beside(const char *kernel)
{
	char path[PATH_MAX];
	struct mapped_file f;
	char *config;
	int fd;

	/*
	 * A guess: a file that is not there is no error of the user's, so
	 * look before map_file() would complain. This runs at exit, under
	 * the main thread's seccomp filter: open(), not access().
	 */
	if (!doctor_config_path(kernel, path, sizeof(path)))
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	close(fd);
	if (map_file(path, "config", &f))
		return NULL;
	config = f.size < CONFIG_MAX ? strndup(f.data, f.size) : NULL;
	unmap_file(&f);
	return config;
}

struct doctor_files {
	struct doctor *d;
	const char *kernel, *initrd;
};

/* Under mapped_file_guard(): a file cut short while read is an error. */
static int doctor_read(void *arg)
{
	struct doctor_files *r = arg;
	struct mapped_file f;

	if (r->kernel && !map_file(r->kernel, "kernel", &f)) {
		r->d->config = doctor_kernel_config(f.data, f.size);
		r->d->config_embedded = r->d->config != NULL;
		unmap_file(&f);
	}
	if (!r->d->config && r->kernel)
		r->d->config = config_beside(r->kernel);
	if (r->initrd && !map_file(r->initrd, "initrd", &f)) {
		r->d->have_initrd = true;
		r->d->modules = doctor_initrd_modules(f.data, f.size);
		unmap_file(&f);
	}
	return 0;
}

struct doctor *doctor_open(const char *kernel, const char *initrd)
{
	struct doctor *d = calloc(1, sizeof(*d));
	struct doctor_files r = { d, kernel, initrd };

	if (d)
		mapped_file_guard(doctor_read, &r);
	return d;
}

void doctor_close(struct doctor *d)
{
	if (!d)
		return;
	free(d->config);
	free(d->modules);
	free(d);
}

static bool has_module(const struct doctor *d, const char *module)
{
	size_t n = strlen(module);
	const char *p;

	for (p = d->modules; p && (p = strstr(p, module)); p += n)
		if ((p == d->modules || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

/* One option and its module: a clause if something is missing. */
static bool explain_one(const struct doctor *d, const char *kconfig,
			const char *module, char *buf, size_t size)
{
	char val[16];
	const char *v = d->config ?
			doctor_config_value(d->config, kconfig, val, sizeof(val)) :
			NULL;

	if (d->config && !v) {
		snprintf(buf, size, "its kernel's %s has no %s",
			 d->config_embedded ? "embedded config" : "config",
			 kconfig);
		return true;
	}
	if (v && !strcmp(v, "y"))
		return false;
	if (v && !d->have_initrd) {
		snprintf(buf, size, "%s=%s, and it has no initramfs to load %s from",
			 kconfig, v, module);
		return true;
	}
	if (!d->modules || has_module(d, module))
		return false;
	if (v)
		snprintf(buf, size, "%s=%s, but its initramfs has no %s module",
			 kconfig, v, module);
	else
		snprintf(buf, size, "its initramfs has no %s module (or is %s built in?)",
			 module, kconfig);
	return true;
}

void doctor_explain(const struct doctor *d, const char *const kconfig[2],
		    const char *const module[2], char *buf, size_t size)
{
	unsigned int i;

	for (i = 0; i < 2; i++)
		if (d && kconfig[i] &&
		    explain_one(d, kconfig[i], module[i], buf, size))
			return;
	if (d && d->modules && has_module(d, module[0]))
		snprintf(buf, size, "its initramfs has the %s module: did its init load it?",
			 module[0]);
	else
		snprintf(buf, size, "does its kernel have %s%s%s (built in, or as modules its initramfs loads)?",
			 kconfig[0], kconfig[1] ? " and " : "",
			 kconfig[1] ? kconfig[1] : "");
}

/* Is this console= value one lkvm shows? */
static bool shown_console(const char *val, size_t len, bool virtio_console)
{
	return (len >= 5 && !strncmp(val, "ttyS0", 5) &&
		(len == 5 || val[5] == ',')) ||
	       (virtio_console && len >= 4 && !strncmp(val, "hvc0", 4)) ||
	       (len >= 7 && !strncmp(val, "uart", 4));
}

const char *doctor_console(const char *params, bool virtio_console,
			   char *buf, size_t size)
{
	const char *p = params, *other = NULL;
	size_t other_len = 0;
	bool any = false;

	while (p && (p = strstr(p, "console="))) {
		const char *val = p + 8;
		size_t len = strcspn(val, " \t");

		if (p == params || p[-1] == ' ' || p[-1] == '\t') {
			any = true;
			if (shown_console(val, len, virtio_console))
				return NULL;
			other = val;
			other_len = len;
		}
		p = val;
	}
	if (!params)
		return NULL;
	if (any)
		snprintf(buf, size, "the guest wrote nothing to lkvm's console: its command line sends the console to %.*s; lkvm shows console=%s",
			 (int)MIN(other_len, (size_t)64), other,
			 virtio_console ? "hvc0" : "ttyS0");
	else
		snprintf(buf, size, "the guest wrote nothing to lkvm's console: its command line has no console=%s",
			 virtio_console ? "hvc0" : "ttyS0");
	return buf;
}
