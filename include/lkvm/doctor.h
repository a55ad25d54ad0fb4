/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel doctor: when a guest leaves a device alone or shows nothing
 * on the console, lkvm says at exit what is most likely missing, by name,
 * from what the guest's files say: the kernel's embedded configuration
 * (CONFIG_IKCONFIG: "IKCFG_ST", a gzip'd .config, "IKCFG_ED", readable
 * in an uncompressed vmlinux or a bzImage with a gzip payload; else the
 * config-VERSION beside a vmlinuz-VERSION, or a build tree's .config), the
 * modules its initramfs holds (a newc cpio, plain or gzip'd, several
 * concatenated), and the kernel command line's console= settings.
 */
#ifndef LKVM_DOCTOR_H
#define LKVM_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct doctor;

/*
 * Where a kernel without an embedded config may have one beside it:
 * Debian's /boot/config-VERSION next to vmlinuz-VERSION, or a build
 * tree's .config above arch/x86/boot/bzImage or beside vmlinux. Into
 * path; false when the kernel's name suggests none.
 */
bool doctor_config_path(const char *kernel, char *path, size_t size);

/* Read what kernel and initrd (either may be NULL) say; never NULL. */
struct doctor *doctor_open(const char *kernel, const char *initrd);
void doctor_close(struct doctor *d);

/*
 * Why a device the guest never initialised stayed unused: one clause
 * into buf, from the driver's option and module and its transport's
 * (say CONFIG_VIRTIO_BLK/virtio_blk and CONFIG_VIRTIO_PCI/virtio_pci).
 */
void doctor_explain(const struct doctor *d, const char *const kconfig[2],
		    const char *const module[2], char *buf, size_t size);

/*
 * The guest wrote nothing to the console lkvm shows: the sentence that
 * says which console= setting sent it elsewhere, or NULL.
 */
const char *doctor_console(const char *params, bool virtio_console,
			   char *buf, size_t size);

/* The parts, for unit tests: the config text in a kernel image (malloc'd,
 * NUL-terminated; NULL if none), a config's value of an option ("y", "m",
 * or NULL for unset), and the module names (basenames without .ko...) in
 * an initramfs image, "\n"-separated (malloc'd; NULL if unreadable). */
char *doctor_kernel_config(const uint8_t *img, size_t len);
const char *doctor_config_value(const char *config, const char *option,
				char *buf, size_t size);
char *doctor_initrd_modules(const uint8_t *img, size_t len);

#endif
