/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line parsing for `lkvm run`, kept apart so unit tests can drive it. */
#ifndef LKVM_CLI_H
#define LKVM_CLI_H

#include "lkvm/vm.h"

enum cli_result {
	CLI_OK,		/* cfg is ready to run */
	CLI_EXIT_OK,	/* help was printed: exit 0 */
	CLI_ERROR,	/* a one-line error was printed: exit 1 */
};

#define DEFAULT_MEM_MIB		256
#define MIN_MEM_MIB		4

/* Parse `lkvm run` arguments (argv[0] is "run"). */
enum cli_result cli_parse_run(int argc, char **argv, struct vm_config *cfg);

void cli_usage_run(void);

#endif
