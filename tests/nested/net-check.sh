#!/bin/sh
# L2 side of the virtio-net nested test, run by guest/init as
# lkvm.run=/net/net-check.sh,MAC: bring the NIC up with a link-local
# address, ping L1's end of the tap (inside L1 only), report facts.
mac=$1
fact() { echo "@@FACT $1=$2"; }

i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
fact eth0 "$([ -e /sys/class/net/eth0 ] && echo yes || echo no)"
fact mac "$(cat /sys/class/net/eth0/address 2>/dev/null)"
fact mac_expected "$mac"
fact driver "$(basename "$(readlink /sys/class/net/eth0/device/driver)" 2>/dev/null)"
ip link set eth0 up
ip addr add 169.254.77.2/24 dev eth0
fact carrier "$(cat /sys/class/net/eth0/carrier 2>/dev/null)"
# Bounded: 5 pings, 2 s each at most.
ping -c 5 -W 2 169.254.77.1 >/tmp/ping 2>&1
fact ping_rc $?
fact ping_summary "$(grep 'packets transmitted' /tmp/ping)"
# A larger transfer both ways: 1 MiB through nc would need a peer; a
# 1400-byte ping exercises full-size frames.
ping -c 3 -W 2 -s 1400 169.254.77.1 >/tmp/ping2 2>&1
fact bigping_rc $?
# TCP both ways through L1's busybox nc listeners (4 MiB each), md5 checked.
yes lkvm-net-payload | head -c 4194304 | nc -w 10 169.254.77.1 5000
fact send_rc $?
# Frames as the guest's NIC sent them: bigger than an MTU means TSO.
fact tx_bytes "$(cat /sys/class/net/eth0/statistics/tx_bytes)"
fact tx_packets "$(cat /sys/class/net/eth0/statistics/tx_packets)"
nc -w 10 169.254.77.1 5001 >/tmp/in.bin
fact recv_md5 "$(md5sum </tmp/in.bin | cut -d' ' -f1)"
fact recv_bytes "$(wc -c </tmp/in.bin)"
dmesg | grep -c -i "virtio_net.*\(error\|fail\)" >/tmp/neterr
fact net_errors "$(cat /tmp/neterr)"
exit 0
