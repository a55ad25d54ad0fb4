#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# L2 side of tests/bench/boot_peers_bench.py, the same under every VMM (lkvm,
# kvmtool, QEMU), run by guest/init once it has loaded the virtio modules:
#
#   lkvm.run=/boot-peers.sh,END
#
# The marker line first, at once: "@@BOOTED up=SECONDS" (the guest's
# /proc/uptime), which the bench timestamps as it reaches the VMM's stdout;
# then the command line the guest got ("@@CMDLINE ..."), after the marker
# so that its length (kvmtool's defaults are long) costs no VMM the launch-
# to-init time. Shell builtins only: no fork before the marker.
# END says how the VM ends: "exit" leaves it to guest/init (power-off
# through ACPI: lkvm and QEMU); "reboot" signals init to reboot, which ends
# a VMM without ACPI through the i8042 reset (kvmtool's reboot=k).
read -r up _ </proc/uptime
echo "@@BOOTED up=$up"
read -r cmdline </proc/cmdline
echo "@@CMDLINE $cmdline"
if [ "$1" = reboot ]; then
	# As busybox reboot does: SIGTERM to init, which drains the console
	# and reboots. The VM ends before this sleep does.
	kill -TERM 1
	exec sleep 60
fi
exit 0
