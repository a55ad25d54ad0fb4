#!/bin/sh
# The L2 side of the nested tests: run by guest/init inside a Linux guest
# of lkvm (lkvm.run=/check.sh,STATUS), it prints what the tests assert on
# as "@@FACT key=value" lines, then exits with STATUS, which guest/init
# turns into a power-off (0) or a debug-exit write (anything else), so that
# lkvm's own exit code is checked too.
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
# CPUID leaf 0xD against XCR0 (tests/nested/xsave-check.c).
[ -x /xsave-check ] && /xsave-check

# Trouble the kernel reports but survives: the tests want none of it.
dmesg >/tmp/dmesg
acpi='ACPI Error\|ACPI BIOS Error\|ACPI Warning'
cpuid='XSAVE consistency\|CPUID.*\(mismatch\|inconsisten\|bogus\|bug\)\|x86/fpu:.*\(problem\|mismatch\|invalid\)'
oops='WARNING:\|Call Trace\|BUG:\|Oops'
fact acpi_errors "$(grep -ci "$acpi" /tmp/dmesg)"
fact cpuid_warnings "$(grep -ci "$cpuid" /tmp/dmesg)"
fact kernel_warnings "$(grep -c "$oops" /tmp/dmesg)"
# The offending lines themselves, for the failure message.
{ grep -i "$acpi\|$cpuid" /tmp/dmesg; grep "$oops" /tmp/dmesg; } |
	head -n 20 | sed 's/^/@@DMESG /'

fact "done" 1
exit "$status"
