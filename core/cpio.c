// SPDX-License-Identifier: GPL-2.0
/* newc cpio archives (see include/lkvm/cpio.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lkvm/cpio.h"
#include "lkvm/util.h"

#define NEWC_HEADER	110

int cpio_align(int fd)
{
	static const char zeroes[4];
	off_t pos = lseek(fd, 0, SEEK_CUR);

	if (pos < 0)
		return -1;
	return write_all(fd, zeroes, (4 - pos % 4) % 4);
}

int cpio_add(int fd, const char *name, mode_t mode, const void *data,
	     size_t len)
{
	static unsigned int ino = 1;
	char header[160];
	size_t namesize = strlen(name) + 1;

	if (S_ISDIR(mode))
		len = 0;
	if (len > 0xffffffffu)
		return -1;
	snprintf(header, sizeof(header),
		 "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		 ino++, (unsigned int)mode, 0, 0, S_ISDIR(mode) ? 2 : 1, 0,
		 (unsigned int)len, 0, 0, 0, 0, (unsigned int)namesize, 0);
	/* header and name, then the data, each padded to 4 bytes */
	if (write_all(fd, header, NEWC_HEADER) ||
	    write_all(fd, name, namesize) || cpio_align(fd))
		return -1;
	if (len && (write_all(fd, data, len) || cpio_align(fd)))
		return -1;
	return 0;
}

int cpio_end(int fd)
{
	return cpio_add(fd, "TRAILER!!!", 0, NULL, 0);
}
