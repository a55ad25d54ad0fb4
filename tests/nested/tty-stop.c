// SPDX-License-Identifier: GPL-2.0
/*
 * tty-stop BEFORE AFTER: writes BEFORE lines of a numbered pattern to
 * stdout (the console), stops the console's output (TCOOFF), writes AFTER
 * lines and an end marker (they stay queued: keep them under the UART's
 * 4 KiB buffer, or the write blocks for good) and exits. The queue is then
 * behind a transmitter that will not move on its own, which is what a lost
 * THR-empty interrupt leaves; guest/init must still get every byte out
 * before it powers off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

static void pattern(long from, long to)
{
	for (; from < to; from++)
		printf("@@PAT %05ld %s\n", from,
		       "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long before = argc > 1 ? atol(argv[1]) : 16;
	long after = argc > 2 ? atol(argv[2]) : 40;

	pattern(0, before);
	if (tcdrain(STDOUT_FILENO) || tcflow(STDOUT_FILENO, TCOOFF)) {
		perror("tty-stop");
		return 1;
	}
	pattern(before, before + after);
	printf("@@FACT tty_stop_end=%ld\n", before + after);
	fflush(stdout);
	return 0;
}
