#!/bin/sh
# L2 side of the nested virtio-net tests, run by guest/init as
#
#   lkvm.run=/net/net-check.sh,IPERF_SECS,MAC/MIB[,MAC/MIB...]
#
# for the NICs that tests/nested/net-job.sh gave lkvm, in its order. NIC i is
# found by its MAC (the kernel names interfaces as it likes), gets
# 169.254.$((77 + i)).2/24 and pings L1 at .1 (inside L1 only); then, one NIC
# after the other, MIB MiB go to L1 (port 5000+2i) and come back (5001+2i):
# the same payload as net-job.sh makes (8-digit chunk number + /net/block.bin
# per MiB; tests/nested/net-blast.c sends it and hashes what it receives).
# With IPERF_SECS > 0, iperf3 runs IPERF_SECS seconds each way over NIC 0
# (-J, one line each: "@@IPERF fwd|rev JSON"), one after the other, or at
# once from different CPUs when NIC 0 has several queue pairs. Everything else is
# "@@FACT key=value".
iperf=$1
shift
BLOCK=/net/block.bin

fact() { echo "@@FACT $1=$2"; }
up() { cut -d' ' -f1 /proc/uptime; }
counters() {
	d=/sys/class/net/$1/statistics
	cat "$d/rx_bytes" "$d/rx_packets" "$d/tx_bytes" "$d/tx_packets" | tr '\n' ' '
}
# The interface with this MAC, if any.
ifname() {
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "$1" ] && basename "$d"
	done
}

# How many network interfaces besides lo.
nics() {
	c=0
	for d in /sys/class/net/*; do
		[ "${d##*/}" = lo ] || c=$((c + 1))
	done
	echo $c
}

fact t_start "$(up)"
n=0
while [ "$(nics)" -lt $# ] && [ $n -lt 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
fact nics "$(nics)"

i=0
for spec; do
	mac=${spec%%/*}
	dev=$(ifname "$mac")
	fact nic${i}_if "$dev"
	if [ -n "$dev" ]; then
		fact nic${i}_driver "$(basename "$(readlink /sys/class/net/"$dev"/device/driver)")"
		ip link set "$dev" up
		ip addr add 169.254.$((77 + i)).2/24 dev "$dev"
	fi
	i=$((i + 1))
done
i=0
for spec; do
	dev=$(ifname "${spec%%/*}")
	peer=169.254.$((77 + i)).1
	fact nic${i}_carrier "$(cat /sys/class/net/"$dev"/carrier 2>/dev/null)"
	# Bounded: 5 pings 0.2 s apart, 2 s for the last answer; then
	# full-size frames (1472 + 28 bytes of headers: the MTU).
	ping -c 5 -i 0.2 -W 2 $peer >/tmp/ping 2>&1
	fact nic${i}_ping_rc $?
	fact nic${i}_ping_summary "$(grep 'packets transmitted' /tmp/ping)"
	ping -c 3 -i 0.2 -W 2 -s 1472 $peer >/tmp/ping 2>&1
	fact nic${i}_bigping_rc $?
	i=$((i + 1))
done

# TCP through L1's net-blast listeners; the guest's NIC counters around
# each transfer show how big the frames were.
i=0
for spec; do
	dev=$(ifname "${spec%%/*}")
	mib=${spec#*/}
	peer=169.254.$((77 + i)).1
	[ "$mib" -gt 0 ] || { i=$((i + 1)); continue; }
	fact nic${i}_cnt_before "$(counters "$dev")"
	out=$(/net/net-blast send $peer $((5000 + 2 * i)) "$mib" $BLOCK 2>&1)
	fact nic${i}_send_rc $?
	fact nic${i}_send "$out"
	fact nic${i}_cnt_sent "$(counters "$dev")"
	out=$(/net/net-blast recv $peer $((5001 + 2 * i)) 2>&1)
	fact nic${i}_recv_rc $?
	fact nic${i}_recv "$out"
	fact nic${i}_cnt_received "$(counters "$dev")"
	i=$((i + 1))
done

# Queue pairs NIC 0's driver uses (more than one with queues=N and N vCPUs).
dev0=$(ifname "${1%%/*}")
fact nic0_rx_queues "$(ls -d /sys/class/net/"$dev0"/queues/rx-* | wc -l)"
fact nic0_tx_queues "$(ls -d /sys/class/net/"$dev0"/queues/tx-* | wc -l)"
if [ "$iperf" -gt 0 ] && [ "$(nproc)" -gt 1 ] &&
	[ -e /sys/class/net/"$dev0"/queues/tx-1 ]; then
	# Multi-queue: both tests at once, one pinned to each CPU. The driver
	# maps CPU i's transmits to queue pair i (XPS), and the tap sends a
	# flow's frames back on the queue the guest sent it on.
	t0=$(up)
	taskset 1 iperf3 -c 169.254.77.1 -p 5201 -t "$iperf" -i 0 -J \
		>/tmp/fwd.json 2>&1 &
	fwd=$!
	taskset 2 iperf3 -c 169.254.77.1 -p 5202 -t "$iperf" -i 0 -J -R \
		>/tmp/rev.json 2>&1
	fact iperf_rev_rc $?
	wait $fwd
	fact iperf_fwd_rc $?
	fact iperf_s "$(awk "BEGIN { print $(up) - $t0 }")"
elif [ "$iperf" -gt 0 ]; then
	t0=$(up)
	iperf3 -c 169.254.77.1 -p 5201 -t "$iperf" -i 0 -J >/tmp/fwd.json 2>&1
	fact iperf_fwd_rc $?
	iperf3 -c 169.254.77.1 -p 5202 -t "$iperf" -i 0 -J -R >/tmp/rev.json 2>&1
	fact iperf_rev_rc $?
	fact iperf_s "$(awk "BEGIN { print $(up) - $t0 }")"
fi
if [ "$iperf" -gt 0 ]; then
	# Spaces go too (even inside strings): every console byte is an exit.
	echo "@@IPERF fwd $(tr -d ' \n\t' </tmp/fwd.json)"
	echo "@@IPERF rev $(tr -d ' \n\t' </tmp/rev.json)"
fi

# Anything the kernel found wrong on the way.
dmesg | grep -i -e 'virtio_net.*\(error\|fail\)' -e 'NETDEV WATCHDOG' \
	-e 'WARNING:' -e 'Call Trace' -e 'BUG:' >/tmp/bad
fact dmesg_bad "$(wc -l </tmp/bad)"
sed 's/^/@@DMESG /' /tmp/bad
fact t_end "$(up)"
exit 0
