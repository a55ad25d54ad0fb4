#!/bin/sh
# L1 side of the virtio-net nested test: lkvm creates tap t0 (inside L1,
# which has no other network), L1 gives it the peer address once it
# appears, and the L2 guest pings it. Usage: net-job.sh TRANSPORT MAC [lkvm args]
t=$1
mac=$2
shift 2
yes lkvm-net-payload | head -c 4194304 >/tmp/payload
# The receiving listener's stdin is a FIFO this script holds open: at EOF
# busybox nc would close the connection and the guest's writes meet a reset.
mkfifo /tmp/hold
nc -l -p 5000 </tmp/hold >/tmp/rx.bin 2>/dev/null &
rx=$!
exec 3>/tmp/hold
nc -l -p 5001 </tmp/payload >/dev/null 2>&1 &
lkvm run --timeout 90 -k /l2/vmlinux -i /l2/net-initrd -m 256 \
	-n mode=tap,tapif=t0,guest_mac=$mac --virtio-transport "$t" \
	-p "console=ttyS0 quiet panic=-1 lkvm.run=/net/net-check.sh,$mac" \
	--stats /tmp/net-stats.json "$@" >/tmp/net-out 2>&1 &
pid=$!
i=0
while [ ! -e /sys/class/net/t0 ] && [ $i -lt 400 ]; do
	sleep 0.05
	i=$((i + 1))
done
ip addr add 169.254.77.1/24 dev t0
ip link set t0 up
wait $pid
echo "@@FACT lkvm_rc=$?"
exec 3>&-
i=0
while kill -0 $rx 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill $rx 2>/dev/null
echo "@@FACT l1_rx_md5=$(md5sum </tmp/rx.bin | cut -d' ' -f1)"
echo "@@FACT l1_rx_bytes=$(wc -c </tmp/rx.bin)"
echo "@@FACT payload_md5=$(md5sum </tmp/payload | cut -d' ' -f1)"
cat /tmp/net-out
echo "@@STATS $(cat /tmp/net-stats.json)"
