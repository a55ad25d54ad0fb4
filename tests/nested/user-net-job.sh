#!/bin/sh
# L1 side of the user-mode networking test (tests/nested/test_user_net.py).
# lkvm runs as uid/gid 1000, which may open /dev/kvm through its group and
# nothing else: no tap, no CAP_NET_ADMIN. L1 serves a file on its loopback
# only (the guest reaches it as 10.0.2.2) and fetches the guest's file
# through hostfwd.
#
#   user-net-job.sh SETPRIV TIMEOUT DISK_MIB NETOPTS [WRAPPER...]
#
# DISK_MIB > 0 gives the guest a disk of that size too (it writes and reads
# back a pattern); NETOPTS ("-" for none) is added to -n's settings, such
# as ",host_loopback=off"; WRAPPER (valgrind and its options) runs lkvm.
setpriv=$1
timeout=$2
disk_mib=$3
netopts=$4
[ "$netopts" = - ] && netopts=
shift 4
fact() { echo "@@FACT $1=$2"; }

ip link set lo up
chgrp 1000 /dev/kvm
chmod 0660 /dev/kvm
mkdir -p /srv
yes lkvm-l1-payload | head -c 2097152 >/srv/blob
echo l1 >/srv/ready
fact l1_blob_md5 "$(md5sum </srv/blob | cut -d' ' -f1)"
httpd -f -p 127.0.0.1:8000 -h /srv &
httpd_pid=$!

# valgrind runs lkvm through its JIT, which a seccomp filter would stop
# (and valgrind 3.19 has no seccomp(2), nor Landlock's syscalls).
confine=
[ $# = 0 ] || confine="--no-seccomp --no-landlock"
disk=
if [ "$disk_mib" -gt 0 ]; then
	dd if=/dev/zero of=/tmp/user-net-disk bs=1M count="$disk_mib" 2>/dev/null
	chown 1000:1000 /tmp/user-net-disk
	disk="-d /tmp/user-net-disk"
fi

# Two rules: the guest address left to DHCP, and given explicitly.
# shellcheck disable=SC2086 # $disk and $confine are words or none
"$setpriv" --reuid=1000 --regid=1000 --clear-groups \
	"$@" lkvm run -v $confine --timeout "$timeout" -k /l2/vmlinux \
	-i /l2/user-net-initrd \
	-m 256 $disk \
	-n mode=user,hostfwd=tcp::8080-:80,hostfwd=tcp:127.0.0.1:2323-10.0.2.15:23$netopts \
	-p "console=ttyS0 quiet panic=-1 lkvm.run=/net/user-net-check.sh" \
	>/tmp/user-net-out 2>&1 &
pid=$!
# (Under valgrind the process is named after the tool: then no facts.)
i=0
while [ "$(cat /proc/$pid/comm 2>/dev/null)" != lkvm ] && [ $i -lt 100 ] &&
	[ $# = 0 ]; do
	sleep 0.05
	i=$((i + 1))
done
fact lkvm_comm "$(cat /proc/$pid/comm 2>/dev/null)"
fact lkvm_uid "$(awk '/^Uid:/ { print $2 "," $3 }' /proc/$pid/status)"
fact lkvm_gid "$(awk '/^Gid:/ { print $2 "," $3 }' /proc/$pid/status)"
fact lkvm_groups "$(awk '/^Groups:/ { print $2 }' /proc/$pid/status)"

# The guest's httpd is up once it has its lease: probe with a small file
# and a short bound (slirp retries a SYN the guest cannot answer yet with
# growing delays), then fetch the big one.
i=0
while [ $i -lt 120 ] && kill -0 $pid 2>/dev/null &&
	! timeout 3 wget -q -O /tmp/ready http://127.0.0.1:8080/ready \
		2>/dev/null; do
	sleep 0.5
	i=$((i + 1))
done
fact fwd_ready "$(cat /tmp/ready 2>/dev/null)"
timeout 90 wget -q -O /tmp/fwd.bin http://127.0.0.1:8080/blob
fact fwd_rc $?
fact fwd_md5 "$(md5sum </tmp/fwd.bin | cut -d' ' -f1)"
fact fwd_bytes "$(wc -c </tmp/fwd.bin)"
echo go | timeout 20 nc 127.0.0.1 2323
fact go_rc $?

wait $pid
fact lkvm_rc $?
# Landlock confined it (ABI 2 in Debian 12's 6.1; not under valgrind)
fact landlock "$(sed -n 's/.*landlock: ABI \([0-9]*\):.*/\1/p' /tmp/user-net-out)"
kill $httpd_pid
cat /tmp/user-net-out
