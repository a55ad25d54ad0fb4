// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel doctor (core/doctor.c): a kernel image's embedded config
 * found and read, options looked up, the modules of an initramfs listed
 * (plain and gzip'd archives, concatenated as lkvm sandbox makes them),
 * and what it says for each way a device can go missing, and for a
 * command line that sends the console elsewhere.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "lkvm/cpio.h"
#include "lkvm/doctor.h"

static const char config[] =
	"#\n# Automatically generated file; DO NOT EDIT.\n"
	"CONFIG_VIRTIO=y\nCONFIG_VIRTIO_PCI=y\n"
	"# CONFIG_VIRTIO_MMIO is not set\n"
	"CONFIG_VIRTIO_BLK=m\nCONFIG_VIRTIO_BLK_SCSI=y\n"
	"CONFIG_VIRTIO_NET=m\n";

/* gzip of len bytes: its length in *out_len. */
static uint8_t *gzip(const void *data, size_t len, size_t *out_len)
{
	z_stream z = { .next_in = (void *)data, .avail_in = len };
	uint8_t *out = malloc(len + 1024);

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	z.next_out = out;
	z.avail_out = len + 1024;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* A fake kernel: noise, IKCFG_ST, gzip'd config, IKCFG_ED, noise. */
static size_t fake_kernel(uint8_t *buf, bool with_config)
{
	size_t n = 0, zlen;
	uint8_t *z = gzip(config, strlen(config), &zlen);

	memset(buf, 0x90, 4096);
	n = 4096;
	if (with_config) {
		memcpy(buf + n, "IKCFG_ST", 8);
		memcpy(buf + n + 8, z, zlen);
		memcpy(buf + n + 8 + zlen, "IKCFG_ED", 8);
		n += 16 + zlen;
	}
	memset(buf + n, 0xcc, 4096);
	free(z);
	return n + 4096;
}

static void test_kernel_config(void **state)
{
	static uint8_t img[16384];
	size_t len = fake_kernel(img, true);
	char *cfg = doctor_kernel_config(img, len);
	char val[8];

	assert_non_null(cfg);
	assert_string_equal(doctor_config_value(cfg, "CONFIG_VIRTIO_BLK", val,
						sizeof(val)), "m");
	assert_string_equal(doctor_config_value(cfg, "CONFIG_VIRTIO_PCI", val,
						sizeof(val)), "y");
	/* not a prefix match: CONFIG_VIRTIO_BLK_SCSI is another option */
	assert_null(doctor_config_value(cfg, "CONFIG_VIRTIO_BLK_SCS", val,
					sizeof(val)));
	assert_null(doctor_config_value(cfg, "CONFIG_VIRTIO_MMIO", val,
					sizeof(val)));
	free(cfg);
	len = fake_kernel(img, false);
	assert_null(doctor_kernel_config(img, len));
	/* a start marker and garbage: nothing, no crash */
	{
		static const char junk[] = "IKCFG_ST\x1f\x8b\x08garbageIKCFG_ED";

		memcpy(img + 100, junk, sizeof(junk) - 1);
	}
	assert_null(doctor_kernel_config(img, len));
}

/* The same kernel as a bzImage's gzip'd payload (boot protocol 2.08+). */
static void test_config_in_a_bzimage(void **state)
{
	static uint8_t vmlinux[16384], img[65536];
	size_t len = fake_kernel(vmlinux, true), zlen;
	uint8_t *z = gzip(vmlinux, len, &zlen);
	const size_t code = 5 * 512;
	char *cfg, val[8];

	memset(img, 0, sizeof(img));
	img[0x1f1] = 4;				/* setup_sects */
	memcpy(img + 0x202, "HdrS", 4);
	img[0x248] = 0x40;			/* payload_offset */
	memcpy(img + 0x24c, &(uint32_t){ zlen }, 4);
	memcpy(img + code + 0x40, z, zlen);
	cfg = doctor_kernel_config(img, code + 0x40 + zlen);
	assert_non_null(cfg);
	assert_string_equal(doctor_config_value(cfg, "CONFIG_VIRTIO_NET", val,
						sizeof(val)), "m");
	free(cfg);
	/* a payload_length past the file: nothing read, no crash */
	memcpy(img + 0x24c, &(uint32_t){ 0x7fffffff }, 4);
	assert_null(doctor_kernel_config(img, code + 0x40 + zlen));
	free(z);
}

/* An initramfs file: [gzip'd archive of mods1][plain archive of mods2]. */
static char *fake_initrd(const char *const *mods1, const char *const *mods2)
{
	static char path[] = "/tmp/lkvm-doctor-test.XXXXXX";
	char part[] = "/tmp/lkvm-doctor-part.XXXXXX";
	int fd, pfd = mkstemp(part);
	uint8_t raw[65536], *z;
	size_t zlen;
	ssize_t n;

	strcpy(path, "/tmp/lkvm-doctor-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0 && pfd >= 0);
	assert_int_equal(cpio_add(pfd, "init", S_IFREG | 0755, "x", 1), 0);
	for (; mods1 && *mods1; mods1++)
		assert_int_equal(cpio_add(pfd, *mods1, S_IFREG | 0644, "ko", 2),
				 0);
	assert_int_equal(cpio_end(pfd), 0);
	n = pread(pfd, raw, sizeof(raw), 0);
	assert_true(n > 0);
	z = gzip(raw, n, &zlen);
	assert_int_equal(write(fd, z, zlen), (ssize_t)zlen);
	free(z);
	if (mods2) {
		assert_int_equal(cpio_align(fd), 0);
		for (; *mods2; mods2++)
			assert_int_equal(cpio_add(fd, *mods2, S_IFREG | 0644,
						  "ko", 2), 0);
		assert_int_equal(cpio_end(fd), 0);
	}
	close(fd);
	close(pfd);
	unlink(part);
	return path;
}

static void test_initrd_modules(void **state)
{
	const char *const gz[] = {
		"lib/modules/6.1/kernel/drivers/virtio/virtio_pci.ko",
		"lib/modules/6.1/kernel/drivers/net/virtio_net.ko.xz", NULL,
	};
	const char *const plain[] = { "lib/modules/x/9pnet_virtio.ko", NULL };
	const char *const kc[2] = { "CONFIG_VIRTIO_NET", "CONFIG_VIRTIO_PCI" };
	const char *const km[2] = { "virtio_net", "virtio_pci" };
	const char *const bc[2] = { "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_PCI" };
	const char *const bm[2] = { "virtio_blk", "virtio_pci" };
	char *path = fake_initrd(gz, plain), why[256];
	struct doctor *d = doctor_open(NULL, path);

	doctor_explain(d, bc, bm, why, sizeof(why));
	assert_non_null(strstr(why, "no virtio_blk module"));
	doctor_explain(d, kc, km, why, sizeof(why));
	assert_non_null(strstr(why, "has the virtio_net module"));
	{
		const char *const pc[2] = { "CONFIG_NET_9P_VIRTIO", NULL };
		const char *const pm[2] = { "9pnet_virtio", NULL };

		/* from the second, plain archive */
		doctor_explain(d, pc, pm, why, sizeof(why));
		assert_non_null(strstr(why, "has the 9pnet_virtio module"));
	}
	doctor_close(d);
	unlink(path);
}

static void test_explain_with_config(void **state)
{
	static uint8_t img[16384];
	const char *const bc[2] = { "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_MMIO" };
	const char *const bm[2] = { "virtio_blk", "virtio_mmio" };
	const char *const pc[2] = { "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_PCI" };
	const char *const pm[2] = { "virtio_blk", "virtio_pci" };
	const char *const none[] = { "lib/modules/x/virtio_net.ko", NULL };
	char kernel[] = "/tmp/lkvm-doctor-kernel.XXXXXX", why[256];
	int fd = mkstemp(kernel);
	size_t len = fake_kernel(img, true);
	char *initrd;
	struct doctor *d;

	assert_int_equal(write(fd, img, len), (ssize_t)len);
	close(fd);
	/* a module with nothing to load it from */
	d = doctor_open(kernel, NULL);
	doctor_explain(d, bc, bm, why, sizeof(why));
	assert_string_equal(why, "CONFIG_VIRTIO_BLK=m, and it has no initramfs to load virtio_blk from");
	doctor_close(d);
	/* =m, and the initramfs lacks it */
	initrd = fake_initrd(none, NULL);
	d = doctor_open(kernel, initrd);
	doctor_explain(d, pc, pm, why, sizeof(why));
	assert_string_equal(why, "CONFIG_VIRTIO_BLK=m, but its initramfs has no virtio_blk module");
	doctor_close(d);
	unlink(initrd);
	/* built in, but the transport is not in the config */
	initrd = fake_initrd((const char *const []){
		"lib/modules/x/virtio_blk.ko", NULL }, NULL);
	d = doctor_open(kernel, initrd);
	doctor_explain(d, bc, bm, why, sizeof(why));
	assert_string_equal(why, "its kernel's embedded config has no CONFIG_VIRTIO_MMIO");
	doctor_close(d);
	unlink(initrd);
	unlink(kernel);
	/* nothing known: the question, naming both options */
	d = doctor_open(NULL, NULL);
	doctor_explain(d, pc, pm, why, sizeof(why));
	assert_non_null(strstr(why, "CONFIG_VIRTIO_BLK and CONFIG_VIRTIO_PCI"));
	doctor_close(d);
}

/* Debian's layout: /boot/vmlinuz-VERSION and /boot/config-VERSION. */
static void test_config_beside_the_kernel(void **state)
{
	char dir[] = "/tmp/lkvm-doctor-boot.XXXXXX", path[128], why[256];
	const char *const bc[2] = { "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_PCI" };
	const char *const bm[2] = { "virtio_blk", "virtio_pci" };
	struct doctor *d;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config-6.1.0-test", dir);
	f = fopen(path, "w");
	fputs(config, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/vmlinuz-6.1.0-test", dir);
	f = fopen(path, "w");
	fputs("not a kernel", f);
	fclose(f);
	d = doctor_open(path, NULL);
	doctor_explain(d, bc, bm, why, sizeof(why));
	assert_string_equal(why, "CONFIG_VIRTIO_BLK=m, and it has no initramfs to load virtio_blk from");
	doctor_close(d);
	unlink(path);
	snprintf(path, sizeof(path), "%s/config-6.1.0-test", dir);
	unlink(path);
	rmdir(dir);
}

static void test_console(void **state)
{
	char buf[256];

	assert_null(doctor_console("console=ttyS0 quiet", false, buf,
				   sizeof(buf)));
	assert_null(doctor_console("console=tty0 console=ttyS0,115200", false,
				   buf, sizeof(buf)));
	assert_null(doctor_console("console=hvc0", true, buf, sizeof(buf)));
	assert_non_null(doctor_console("console=tty0 panic=-1", false, buf,
				       sizeof(buf)));
	assert_non_null(strstr(buf, "sends the console to tty0"));
	assert_non_null(doctor_console("console=hvc0", false, buf,
				       sizeof(buf)));
	assert_non_null(doctor_console("quiet panic=-1", false, buf,
				       sizeof(buf)));
	assert_non_null(strstr(buf, "no console=ttyS0"));
	/* not a console= word of its own */
	assert_non_null(doctor_console("xconsole=ttyS0", false, buf,
				       sizeof(buf)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_config),
		cmocka_unit_test(test_config_in_a_bzimage),
		cmocka_unit_test(test_initrd_modules),
		cmocka_unit_test(test_explain_with_config),
		cmocka_unit_test(test_config_beside_the_kernel),
		cmocka_unit_test(test_console),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
