/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qcow2 images (versions 2 and 3, as qemu-img makes them) behind struct
 * disk: the disk layer (disk/raw.c) detects the format and sends a qcow2
 * disk's requests here. Guest offsets are mapped through the L1/L2 tables;
 * clusters are allocated at the end of the file with their refcounts kept
 * exact; unallocated clusters read from the backing file (raw or qcow2,
 * opened read-only) or as zeroes; zlib-compressed clusters are read
 * (written ones are never compressed). Internal snapshots, encryption,
 * external data files and dirty images are refused with a message naming
 * them.
 *
 * Every metadata update is ordered so that a process killed between any
 * two writes leaves an image qemu-img check finds consistent (at worst a
 * leaked cluster): data before the refcount that owns it, the refcount
 * before the table entry that points at it.
 */
#ifndef LKVM_QCOW2_H
#define LKVM_QCOW2_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct disk;

/* Does the file start with the qcow2 magic? */
bool qcow2_is_qcow2(int fd);
/*
 * Take over disk (its fd open, locked, path set): check the header, load
 * the tables, open the backing chain; disk->size becomes the virtual size.
 * -1 with one error line naming the problem.
 */
int qcow2_open(struct disk *disk, unsigned int depth);
void qcow2_close(struct disk *disk);

/* As disk_readv()/disk_writev(): whole transfers, -errno on failure. */
int qcow2_rw(struct disk *disk, const struct iovec *iov, int iovcnt,
	     uint64_t offset, bool write);
/* Discard or write zeroes: the range reads back as zeroes; -errno. */
int qcow2_zero(struct disk *disk, uint64_t offset, uint64_t len);

#endif
