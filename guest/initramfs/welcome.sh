#!/bin/sh
# /etc/lkvm/run of the default guest (scripts/default-guest.sh): say what
# booted and how to leave, then give the user a shell on the console.
# Leaving the shell (exit, ^D) or typing poweroff ends the VM.
# With --once (lkvm.run=/etc/lkvm/run,--once) it only prints the banner and
# exits 0, which powers the VM off: for runs without a user at the console.
ncpu=$(grep -c ^processor /proc/cpuinfo)
mem=$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
echo "lkvm guest: Linux $(uname -r), $ncpu CPU(s), $mem MiB," \
	"up $(cut -d' ' -f1 /proc/uptime) s."
if [ "${1:-}" = --once ]; then
	echo "No terminal input: powering off."
	exit 0
fi
echo "Type 'poweroff' or 'exit' to end the VM."
export PS1='lkvm:\w# '
exec /bin/sh
