/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Managing running VMs: each `lkvm run` listens on a UNIX socket named
 * after the VM in the user's runtime directory, and `lkvm list`, `stop`,
 * `pause`, `resume`, `stat` and `debug` talk to it.
 *
 * The directory is $LKVM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/lkvm, else
 * /tmp/lkvm-UID; lkvm makes it mode 0700 and refuses one that another user
 * owns, others can enter, or that is a symbolic link, since whoever
 * reaches a socket controls the VM.
 *
 * The protocol is one request line ("pause\n", "sysrq h\n") and one reply:
 * "ok\n" or "error MESSAGE\n", then the body (stat's JSON, the register
 * dump), then the server closes the connection.
 */
#ifndef LKVM_CONTROL_H
#define LKVM_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONTROL_NAME_MAX	64
#define CONTROL_SOCK_SUFFIX	".sock"

struct vm;
struct control;

/* A VM name is 1-64 of [A-Za-z0-9._-], not starting with '.'. */
bool control_name_valid(const char *name);

/*
 * The runtime directory into buf, made (0700) when create is set.
 * -1 with a one-line message: unusable, or another user's.
 */
int control_dir(char *buf, size_t size, bool create);
/* dir/NAME.sock into buf; -1 with a message when it does not fit. */
int control_sock_path(const char *dir, const char *name, char *buf,
		      size_t size);

/* Connect to a VM's socket: the fd, or -1 with errno (ECONNREFUSED: stale). */
int control_connect(const char *path);

/*
 * Remove the socket at path if nobody answers on it (its VM died), under
 * the runtime directory's lock, which every claim of a name holds too:
 * 1 removed, 0 left alone (live, gone, or not a socket), -1 on an error.
 */
int control_remove_stale(const char *path);

/*
 * Claim NAME for this VM: a socket another live VM answers on is refused
 * ("already running"), a stale one (its VM died) is replaced. The socket
 * listens before it takes the name, so a socket under a name always
 * answers while its VM lives. NULL with a one-line message. Call before
 * anything heavy starts.
 */
struct control *control_open(const char *name);
/* The listening fd, for the main loop's poll(). */
int control_fd(const struct control *ctl);
/* Where the socket is (NULL for NULL), which the VM removes at exit. */
const char *control_sock(const struct control *ctl);
/* Serve the connection waiting on the listening socket (main thread). */
void control_serve(struct control *ctl, struct vm *vm);
/* Remove the socket; NULL is fine. */
void control_close(struct control *ctl);

/*
 * Client side: send request to the VM's socket at path, copy the body of
 * an "ok" reply to out. 0 on ok; -1 with the server's message (or why it
 * could not be asked) in err.
 */
int control_request(const char *path, const char *request, FILE *out,
		    char *err, size_t err_size);

/* The management commands (`lkvm list` ...): argv[0] is the command. */
bool vmctl_command(const char *cmd);
int vmctl_main(int argc, char **argv);

#endif
