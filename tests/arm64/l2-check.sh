#!/bin/sh
# Inside the arm64 L2 guest (tests/arm64/test_arm64.py): report what the
# test checks as "@@L2 key=value" lines, then end with the status the
# command line asks for (arm64test.status=N), or through PSCI when it asks
# for arm64test.end=poweroff|reboot.
fact() { echo "@@L2 $1=$2"; }
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }

fact cpus "$(grep -c ^processor /proc/cpuinfo)"
fact model "$(cat /sys/firmware/devicetree/base/model 2>/dev/null)"
# the GIC's name in /proc/interrupts: GICv3, or GIC-0 for a GICv2
fact gic "$(grep -o -m1 -E 'GICv3|GIC-0' /proc/interrupts)"
fact disk "$(readlink -f /sys/block/vda/device)"
# the irqchips virtio's interrupts come through: ITS-MSI for MSI-X, the
# GIC itself for virtio-mmio and INTx (the chip is the column after the
# per-CPU counts)
fact virtio_irqs "$(grep virtio /proc/interrupts |
	awk -v n="$(grep -c ^processor /proc/cpuinfo)" '{ print $(n + 2) }' |
	sort -u | tr '\n' ' ')"

# 256 KiB of random bytes through the disk and back, past the page cache
if [ -b /dev/vda ]; then
	dd if=/dev/urandom of=/tmp/pat bs=4096 count=64 2>/dev/null
	dd if=/tmp/pat of=/dev/vda bs=4096 count=64 conv=fsync 2>/dev/null
	echo 3 >/proc/sys/vm/drop_caches
	dd if=/dev/vda of=/tmp/back bs=4096 count=64 2>/dev/null
	if cmp -s /tmp/pat /tmp/back; then
		fact blk ok
	else
		fact blk mismatch
	fi
fi

# the NIC: link up, and L1's end of the tap answers (bounded: 3 pings)
if [ -e /sys/class/net/eth0 ]; then
	ip link set eth0 up
	ip addr add 169.254.77.2/24 dev eth0
	i=0
	while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] &&
	      [ $i -lt 20 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	fact carrier "$(cat /sys/class/net/eth0/carrier 2>/dev/null)"
	if ping -c 3 -W 2 169.254.77.1 >/dev/null 2>&1; then
		fact ping ok
	else
		fact ping lost
	fi
fi

case $(arg arm64test.end) in
poweroff) poweroff -f ;;
reboot) reboot -f ;;
esac
exit "$(arg arm64test.status)"
