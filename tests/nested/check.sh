#!/bin/sh
# The L2 side of the nested tests: run by guest/init inside a Linux guest
# of lkvm (lkvm.run=/check.sh,STATUS), it prints what the tests assert on
# as "@@FACT key=value" lines, then exits with STATUS, which guest/init
# turns into a power-off (0) or a debug-exit write (anything else), so that
# lkvm's own exit code is checked too. STATUS "panic" crashes the kernel
# at the end instead.
status=${1:-0}

fact() { echo "@@FACT $1=$2"; }

# First, so that it measures the boot and not this script.
fact uptime "$(cut -d' ' -f1 /proc/uptime)"
fact kernel "$(uname -r)"
fact cpus "$(grep -c '^processor' /proc/cpuinfo)"
fact cpus_online "$(cat /sys/devices/system/cpu/online)"
fact memtotal_kb "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
fact modules "$(wc -l </proc/modules)"
fact cmdline "$(cat /proc/cmdline)"
# Which tty /dev/console writes to, last: ttyS0, or hvc0 with --console virtio.
fact console_active "$(cat /sys/class/tty/console/active)"
# CPUID leaf 0xD against XCR0 (tests/nested/xsave-check.c).
[ -x /xsave-check ] && /xsave-check

# A virtio-blk disk, if lkvm was given one (-d): its size, the signature
# the test wrote at its start, where it sits (PCI or ACPI/virtio-mmio) and
# whether 256 KiB written at 1 MiB read back the same from the device.
if [ -b /dev/vda ]; then
	fact disk_sectors "$(cat /sys/block/vda/size)"
	fact disk_head "$(head -c 8 /dev/vda)"
	fact disk_path "$(readlink -f /sys/block/vda/device)"
	dd if=/dev/urandom of=/tmp/pattern bs=64k count=4 2>/dev/null
	dd if=/tmp/pattern of=/dev/vda bs=64k seek=16 conv=fsync 2>/dev/null
	echo 3 >/proc/sys/vm/drop_caches
	a=$(md5sum </tmp/pattern)
	b=$(dd if=/dev/vda bs=64k skip=16 count=4 2>/dev/null | md5sum)
	fact disk_rw "$([ "$a" = "$b" ] && echo same || echo differ)"
else
	fact disk_sectors 0
fi

# lkvm's --rng: the hw_random core's current source, and 64 bytes from it.
if [ -e /dev/hwrng ]; then
	fact hwrng "$(cat /sys/class/misc/hw_random/rng_current)"
	fact hwrng_bytes "$(dd if=/dev/hwrng bs=64 count=1 2>/dev/null | wc -c)"
else
	fact hwrng none
fi

# Trouble the kernel reports but survives: the tests want none of it.
dmesg >/tmp/dmesg
acpi='ACPI Error\|ACPI BIOS Error\|ACPI Warning'
cpuid='XSAVE consistency\|CPUID.*\(mismatch\|inconsisten\|bogus\|bug\)\|x86/fpu:.*\(problem\|mismatch\|invalid\)'
oops='WARNING:\|Call Trace\|BUG:\|Oops'
fact acpi_errors "$(grep -ci "$acpi" /tmp/dmesg)"
fact cpuid_warnings "$(grep -ci "$cpuid" /tmp/dmesg)"
fact kernel_warnings "$(grep -c "$oops" /tmp/dmesg)"
# What the guest waited for while booting (lkvm's default command line and
# CPUID leaves remove these): the searches of all PCI buses for an AGP
# bridge (for the AMD GART aperture, on CPUs of AMD family 0xf like TCG's), the IO-APIC timer check, legacy serial ports probed, and how the
# TSC rate was found (kvmclock's 'tsc: Detected', not a PIT calibration).
fact agp_searches "$(grep -c 'AGP: No AGP bridge found' /tmp/dmesg)"
fact uart_ports "$(sed -n 's/.*Serial: 8250\/16550 driver, \([0-9]*\) ports.*/\1/p' /tmp/dmesg)"
fact kvmclock "$(grep -c 'kvm-clock: Using msrs' /tmp/dmesg)"
fact tsc_detected "$(grep -c 'tsc: Detected .* MHz processor' /tmp/dmesg)"
fact tsc_calibrated "$(grep -ci 'TSC calibration\|calibrate TSC\|tsc: Unable' /tmp/dmesg)"
# The offending lines themselves, for the failure message.
{ grep -i "$acpi\|$cpuid" /tmp/dmesg; grep "$oops" /tmp/dmesg; } |
	head -n 20 | sed 's/^/@@DMESG /'

fact "done" 1
# STATUS "panic": crash the kernel instead; lkvm must say so (exit 4,
# through pvpanic), not see a reboot (panic=-1) or wait for its timeout.
if [ "$status" = panic ]; then
	echo c >/proc/sysrq-trigger
	sleep 5
fi
exit "$status"
