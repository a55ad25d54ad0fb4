/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the qcow2 unit tests share (qcow2_rig.c): a scratch folder, shell
 * commands (qemu-img makes and checks the images), reading and patching
 * an image's big-endian fields, an image's layout from its header, and
 * the error line a refused open printed.
 */
#ifndef TESTS_UNIT_QCOW2_RIG_H
#define TESTS_UNIT_QCOW2_RIG_H

#include <stdbool.h>
#include <stdint.h>

#include "lkvm/disk.h"

#define MIB		(1ULL << 20)

/* mkdtemp() a folder for the images (0), and remove it with them. */
int rig_setup(const char *name);
void rig_teardown(void);
/* The folder itself. */
const char *rig_dir(void);
/* name in the folder (four at a time stay valid) */
const char *path(const char *name);
/* A shell command's exit status (qemu-img's); its output is the caller's. */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Big-endian fields of 1, 2, 4 or 8 bytes, at a byte offset. */
uint64_t img_get(const char *name, uint64_t off, unsigned int bytes);
void img_put(const char *name, uint64_t off, unsigned int bytes, uint64_t v);
/* The whole file, malloc()ed; its length in *len. */
uint8_t *img_read(const char *name, size_t *len);

/* Where an image's tables are, as its header says. */
struct img_layout {
	uint64_t cluster_size;
	uint64_t l1_offset;
	uint32_t l1_size;
	uint64_t reftable_offset;
	uint64_t refblock0;		/* reftable[0] */
	uint64_t l2_0;			/* L1[0]'s table, 0: none */
	uint64_t data0;			/* L2[0] of that table's offset, 0: none */
};
void img_layout(const char *name, struct img_layout *l);

/*
 * Open name (read-write unless ro) with what lkvm prints on stderr caught:
 * NULL when it opened (it is closed again), else the message, malloc()ed.
 */
char *open_error(const char *name, bool ro);
/* What fn(arg) printed on stderr, malloc()ed; its result in *ret. */
char *catch_stderr(int (*fn)(void *), void *arg, int *ret);

#endif
