#!/bin/sh
# L2 side of the user-mode networking test (tests/nested/test_user_net.py),
# run by guest/init as lkvm.run=/net/user-net-check.sh: DHCP through
# busybox udhcpc, a download from L1's loopback through the gateway alias,
# and servers for L1 to reach through lkvm's hostfwd rules. Facts on the
# console as "@@FACT key=value".
#
# udhcpc runs this same script for its events (first argument bound,
# deconfig, ...): it applies the lease with ip.
fact() { echo "@@FACT $1=$2"; }
up() { cut -d' ' -f1 /proc/uptime; }

case $1 in
deconfig)
	ip -4 addr flush dev "$interface"
	ip link set "$interface" up
	exit 0 ;;
bound|renew)
	ip -4 addr flush dev "$interface"
	ip addr add "$ip/$mask" dev "$interface"
	ip route add default via "$router" dev "$interface"
	# udhcpc's output goes nowhere: the main flow prints these.
	{
		fact dhcp_ip "$ip"
		fact dhcp_mask "$mask"
		fact dhcp_router "$router"
		fact dhcp_dns "$dns"
	} >/tmp/dhcp-facts
	exit 0 ;;
leasefail|nak)
	exit 0 ;;
esac

i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
fact eth0 "$([ -e /sys/class/net/eth0 ] && echo yes || echo no)"
fact t_start "$(up)"
ip link set lo up
ip link set eth0 up
# Bounded: 5 discovers, 2 s apart, then give up (-n) or quit with a lease (-q).
udhcpc -i eth0 -f -q -n -t 5 -T 2 -s /net/user-net-check.sh >/dev/null 2>&1
fact udhcpc_rc $?
cat /tmp/dhcp-facts 2>/dev/null
fact t_dhcp "$(up)"
fact addr "$(ip -4 -o addr show dev eth0 | awk '{ print $4 }')"

# Servers for L1's hostfwd clients: a 2 MiB file over HTTP on port 80, and
# a listener on port 23 that L1 tells when it is done (its stdin is a FIFO
# held open: at EOF busybox nc would half-close before L1 has written).
mkdir -p /www
yes lkvm-guest-payload | head -c 2097152 >/www/blob
fact guest_blob_md5 "$(md5sum </www/blob | cut -d' ' -f1)"
echo ready >/www/ready
httpd -f -p 80 -h /www &
httpd_pid=$!
mkfifo /tmp/hold
nc -l -p 23 </tmp/hold >/tmp/go &
go_pid=$!
exec 3>/tmp/hold

# The gateway alias answers pings itself.
ping -c 2 -W 2 10.0.2.2 >/dev/null 2>&1
fact ping_rc $?

# 10.0.2.2 is L1's loopback: its httpd listens on 127.0.0.1:8000 only. A
# small file first, with a short bound: where L1's loopback is kept out of
# reach (host_loopback=off, restrict=on) nothing answers.
timeout 15 wget -q -O /tmp/gw-ready http://10.0.2.2:8000/ready
fact gw_rc $?
if [ "$(cat /tmp/gw-ready 2>/dev/null)" = l1 ]; then
	timeout 60 wget -q -O /tmp/blob http://10.0.2.2:8000/blob
	fact fetch_rc $?
	fact fetch_md5 "$(md5sum </tmp/blob | cut -d' ' -f1)"
	fact fetch_bytes "$(wc -c </tmp/blob)"
fi
fact t_fetch "$(up)"

# A hostile guest addresses L1's loopback itself: with route_localnet and a
# rule ahead of the local table, Linux sends 127.0.0.1 out of eth0 to the
# gateway, and libslirp would connect() to 127.0.0.1 for it.
echo 1 >/proc/sys/net/ipv4/conf/all/route_localnet
echo 1 >/proc/sys/net/ipv4/conf/eth0/route_localnet
ip route add 127.0.0.1/32 via 10.0.2.2 dev eth0 table 100
ip rule add pref 10 to 127.0.0.1 lookup 100
ip rule del pref 0 lookup local
ip rule add pref 20 lookup local
timeout 15 wget -q -O /tmp/lo-ready http://127.0.0.1:8000/ready
fact direct_rc $?
fact direct_got "$(cat /tmp/lo-ready 2>/dev/null)"
ip rule add pref 0 lookup local
ip rule del pref 20
ip rule del pref 10

# IPv6 as QEMU has it: the router advertises fec0::/64 (site scope).
i=0
while ! ip -6 addr show dev eth0 | grep -q ' fec0:' && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
fact addr6 "$(ip -6 -o addr show dev eth0 | awk '$4 ~ /^fec0:/ { print $4 }')"

# A disk, when L1 gave one: a pattern written through and read back.
if [ -b /dev/vda ]; then
	yes lkvm-disk-pattern | head -c 1048576 >/tmp/pattern
	fact disk_pattern_md5 "$(md5sum </tmp/pattern | cut -d' ' -f1)"
	dd if=/tmp/pattern of=/dev/vda bs=64k oflag=direct 2>/dev/null
	fact disk_write_rc $?
	fact disk_read_md5 "$(dd if=/dev/vda bs=64k count=16 iflag=direct \
		2>/dev/null | md5sum | cut -d' ' -f1)"
fi

# Wait (bounded) for L1 to fetch our file through hostfwd and say "go".
i=0
while kill -0 $go_pid 2>/dev/null && [ $i -lt 900 ]; do
	sleep 0.1
	i=$((i + 1))
done
exec 3>&-
fact go "$(cat /tmp/go)"
fact t_go "$(up)"
kill $httpd_pid $go_pid 2>/dev/null
exit 0
