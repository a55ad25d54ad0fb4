#!/bin/sh
# Inside a sandbox of tests/nested/sandbox-job.sh's isolation job, as
# root: what the guest reaches of L1 through a read-only share of L1's /
# that it mounts itself ("hostroot", cache=none, as a hostile guest
# kernel could speak 9P to any share), and through the sandbox's own root
# (its overlay, bound elsewhere so that the guest's /proc is not on top).
# $1 is another L1 process of the same user; it and lkvm carry SB_SECRET
# in their environment, which the sandbox's command does not get. One
# "name result" line each; then a file opened, unlinked and changed in
# the working directory (the read-write share), and last a read lock on
# L1's /l1/lock-target held through hostroot until ./done appears.
C=/l1/p9-check
mkdir -p /tmp/h /tmp/r
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /tmp/h &&
	echo "mounted 1"
echo "procdir $([ -d /tmp/h/proc ] && echo 1 || echo 0)"
echo "env_lkvm $($C find /tmp/h/proc/self/environ SB_SECRET)"
echo "env_other $($C find /tmp/h/proc/$1/environ SB_SECRET)"
echo "mem_lkvm $($C mem /tmp/h/proc/self)"
echo "sys_names $(ls /tmp/h/sys/kernel 2>/dev/null | wc -l)"
mount -o bind / /tmp/r
echo "root_env $($C find /tmp/r/proc/self/environ SB_SECRET direct)"
echo "root_mem $($C mem /tmp/r/proc/self direct)"
echo "unlinked $($C unlinked .)"
$C hold /tmp/h/l1/lock-target done 60 >held
