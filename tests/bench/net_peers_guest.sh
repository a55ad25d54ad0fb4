#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# L2 side of tests/bench/net_peers_bench.py, the same under every VMM (lkvm,
# kvmtool, QEMU), run by guest/init as
#
#   lkvm.run=/net/peers-guest.sh,SECS,MAC,END
#
# The NIC with MAC (the only one) gets 169.254.80.2/24 and waits until L1
# answers at .1 (the tap inside L1; nothing leaves L1). Then iperf3 runs SECS
# seconds guest -> L1 (port 5201), then L1 -> guest (-R, port 5202), each
# against a one-shot server of L1's. Output, one line each: "@@PEERS
# key=value..." and "@@IPERF fwd|rev JSON" (the client's report; its
# sum_received is the receiver's figure, which the servers' reports lack for
# -R). END says how the VM ends: "exit" leaves it to guest/init (power-off
# through ACPI: lkvm and QEMU); "reboot" signals init to reboot, which ends a
# VMM without ACPI through the i8042 reset (kvmtool's reboot=k).
secs=$1 mac=$2 end=$3
L1=169.254.80.1

up() { cut -d' ' -f1 /proc/uptime; }
# The interface with this MAC, if any.
ifname() {
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "$1" ] && basename "$d"
	done
}

t_init=$(up)
n=0 dev=
while [ -z "$dev" ] && [ $n -lt 100 ]; do
	dev=$(ifname "$mac")
	[ -n "$dev" ] || sleep 0.1
	n=$((n + 1))
done
if [ -n "$dev" ]; then
	ip link set "$dev" up
	ip addr add 169.254.80.2/24 dev "$dev"
	# The link may need a moment: up to 20 single pings before giving up.
	n=0
	until ping -c 1 -W 1 $L1 >/dev/null 2>&1 || [ $n -ge 20 ]; do
		n=$((n + 1))
	done
	ping=$n
	t0=$(up)
	iperf3 -c $L1 -p 5201 -t "$secs" -i 0 -J >/tmp/fwd.json 2>&1
	fwd_rc=$?
	iperf3 -c $L1 -p 5202 -t "$secs" -i 0 -J -R >/tmp/rev.json 2>&1
	rev_rc=$?
	t1=$(up)
fi
echo "@@PEERS dev=$dev driver=$(basename "$(readlink \
	/sys/class/net/"$dev"/device/driver 2>/dev/null)" 2>/dev/null)" \
	"ping_tries=$ping fwd_rc=$fwd_rc rev_rc=$rev_rc" \
	"t_init=$t_init t_iperf=$t0 t_done=$t1"
# Spaces go too (even inside strings): every console byte is an exit.
[ -e /tmp/fwd.json ] && echo "@@IPERF fwd $(tr -d ' \n\t' </tmp/fwd.json)"
[ -e /tmp/rev.json ] && echo "@@IPERF rev $(tr -d ' \n\t' </tmp/rev.json)"
if [ "$end" = reboot ]; then
	# busybox reboot: SIGTERM to init, which drains the console and
	# reboots. The VM ends before this sleep does.
	reboot
	sleep 60
fi
[ -n "$dev" ] && [ "$fwd_rc" = 0 ] && [ "$rev_rc" = 0 ]
