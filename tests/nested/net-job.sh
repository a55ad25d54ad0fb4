#!/bin/sh
# L1 side of the nested virtio-net tests (tests/nested/test_net.py): one L2
# boot per call, with one or more NICs on taps t0, t1, ... that lkvm creates
# inside L1 (L1 has no other network: every address and packet stays there).
#
#   net-job.sh NAME TRANSPORT TIMEOUT IPERF_SECS NIC... [-- LKVM_OPTION...]
#
# NIC is MAC/MIB[/OPTS]: the card's guest_mac, the MiB to move each way over
# it (0: none) and more options for its -n (say queues=4). LKVM_OPTIONs go
# to lkvm run as they are (say -c 2). TIMEOUT is lkvm's --timeout.
#
# NIC i is tap t$i with L1 at 169.254.$((77 + i)).1/24 and the guest at .2.
# With MIB > 0, /l1/net-blast (tests/nested/net-blast.c) listens on port
# 5000+2i for the guest's upload (and prints its size and md5) and on
# 5001+2i to send the download: MIB chunks, each an 8-digit chunk number
# and /l1/net-block.bin (1 MiB - 8 bytes), as the guest and the test on the
# host make them too. IPERF_SECS > 0: iperf3 servers on 5201 and 5202 for
# the guest's clients (over NIC 0; the second one runs -R).
#
# Output: lkvm's console and stderr as they come, then "@@FACT l1_*" lines:
# lkvm's status; per NIC what net-blast printed (l1_nic$i_up, _down: "bytes=N
# md5=HEX secs=S") and the tap's counters "rx_bytes rx_packets tx_bytes
# tx_packets" when it came up (l1_t$i_start), when the upload ended (_up) and
# when the download ended (_down); then "@@IPERF l1-fwd|l1-rev JSON" (the
# servers' reports) and "@@STATS JSON" (lkvm --stats).

name=$1 transport=$2 limit=$3 iperf=$4
shift 4
nics=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	nics="$nics $1"
	shift
done
[ "$1" = -- ] && shift

W=/tmp/net-$name
rm -rf "$W"
mkdir -p "$W"

fact() { echo "@@FACT $1=$2"; }
counters() {
	d=/sys/class/net/$1/statistics
	cat "$d/rx_bytes" "$d/rx_packets" "$d/tx_bytes" "$d/tx_packets" \
		2>/dev/null | tr '\n' ' '
}
# sh -c "$SPAWN" PIDFILE CMD...: CMD with its pid in PIDFILE, to kill it
# if it is still there when lkvm has gone.
SPAWN='echo $$ >"$0"; exec "$@"'
# serve I WHAT send|recv PORT [MIB BLOCK]: a net-blast listener for tap t$I
# in the background; its output goes to $W/WHAT$I.out, the tap's counters
# when it is done to $W/WHAT$I.cnt.
serve() {
	tap=t$1 out=$W/$2$1
	shift 2
	dir=$1 port=$2
	shift 2
	(sh -c "$SPAWN" "$out.pid" /l1/net-blast "$dir" listen "$port" "$@" \
		>"$out.out" 2>&1 </dev/null
	counters "$tap" >"$out.cnt") &
}

# Listeners first: the guest connects as soon as its NICs are up.
i=0 netargs='' guestargs=''
for nic in $nics; do
	mac=${nic%%/*} rest=${nic#*/}
	mib=${rest%%/*} opts=
	case $rest in */*) opts=,${rest#*/} ;; esac
	netargs="$netargs -n mode=tap,tapif=t$i,guest_mac=$mac$opts"
	guestargs="$guestargs,$mac/$mib"
	if [ "$mib" -gt 0 ]; then
		serve $i up recv $((5000 + 2 * i))
		serve $i down send $((5001 + 2 * i)) "$mib" /l1/net-block.bin
	fi
	i=$((i + 1))
done

# shellcheck disable=SC2086
lkvm run --timeout "$limit" -k /l2/vmlinux -i /l2/net-initrd -m 256 \
	--name "$name" --virtio-transport "$transport" $netargs \
	--stats "$W/stats.json" "$@" \
	-p "console=ttyS0 quiet panic=-1 lkvm.run=/net/net-check.sh,$iperf$guestargs" \
	2>&1 &
pid=$!

# lkvm creates the taps at start-up, in order.
i=0
for nic in $nics; do
	n=0
	while [ ! -e /sys/class/net/t$i ] && [ $n -lt 400 ]; do
		sleep 0.05
		n=$((n + 1))
	done
	ip addr add 169.254.$((77 + i)).1/24 dev t$i
	ip link set t$i up
	counters t$i >"$W/start$i.cnt"
	i=$((i + 1))
done
if [ "$iperf" -gt 0 ]; then
	iperf3 -s -1 -p 5201 -J >"$W/ipf.json" 2>&1 &
	echo $! >"$W/iperf-fwd.pid"
	iperf3 -s -1 -p 5202 -J >"$W/ipr.json" 2>&1 &
	echo $! >"$W/iperf-rev.pid"
fi

wait $pid
rc=$?
echo
fact l1_lkvm_rc $rc
# Listeners still there now never got (or finished) their connection
# (iperf3 -s -1 ends after one test).
n=0
while [ $n -lt 20 ]; do
	left=0
	for p in "$W"/*.pid; do
		[ -e "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null && left=1
	done
	[ $left = 0 ] && break
	sleep 0.05
	n=$((n + 1))
done
for p in "$W"/*.pid; do
	[ -e "$p" ] && kill "$(cat "$p")" 2>/dev/null &&
		fact l1_killed "$(basename "$p" .pid)"
done
sleep 0.1

i=0
for nic in $nics; do
	for s in up down; do
		[ -e "$W/$s$i.out" ] && fact l1_nic${i}_$s "$(cat "$W/$s$i.out")"
	done
	for s in start up down; do
		fact l1_t${i}_$s "$(cat "$W/$s$i.cnt" 2>/dev/null)"
	done
	i=$((i + 1))
done
if [ "$iperf" -gt 0 ]; then
	echo "@@IPERF l1-fwd $(tr -d ' \n\t' <"$W/ipf.json")"
	echo "@@IPERF l1-rev $(tr -d ' \n\t' <"$W/ipr.json")"
fi
echo "@@STATS $(tr -d '\n' <"$W/stats.json" 2>/dev/null)"
fact l1_done 1
