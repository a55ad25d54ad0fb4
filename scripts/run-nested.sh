#!/bin/sh
# Show lkvm booting Linux on a machine whose /dev/kvm is software-only, or
# that has none.
#
#   scripts/run-nested.sh [lkvm run options...]
#
# Such a KVM emulates every guest instruction and cannot boot Linux in
# useful time, but QEMU's TCG emulates AMD SVM with nested paging, so a
# Linux guest under QEMU (L1) has a working /dev/kvm. This script boots
# such an L1 with lkvm.static and the default guest (scripts/
# default-guest.sh) packed in its initramfs; guest/init in L1 runs
#
#   LKVM_DEFAULT_GUEST=/guest lkvm run [options...]
#
# on the console and hands lkvm's exit status back through QEMU's
# debug-exit device, so this script exits with lkvm's status (124 if the
# run outlived LKVM_NESTED_TIMEOUT).
#
# With a terminal on stdin the L2 guest gives you a shell (exit or poweroff
# ends it; ^A x kills QEMU). Without one, the guest prints a banner and
# powers off. Everything runs under TCG: expect ~10 s for L1 and ~15 s for
# the L2 kernel to boot.
#
# Environment: LKVM_NESTED_TIMEOUT (seconds; default 300 without a terminal,
# none with one), LKVM_NESTED_MEM (L1 MiB, default 1024),
# LKVM_DEFAULT_GUEST (the guest to boot), LKVM_BIN (the static lkvm to
# use, default ./lkvm.static).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
guest=${LKVM_DEFAULT_GUEST:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm/default}
mem=${LKVM_NESTED_MEM:-1024}
lkvm=${LKVM_BIN:-$top/lkvm.static}

echo "run-nested: /dev/kvm here is missing, or a software KVM that cannot" \
	"run Linux at speed; booting the guest under lkvm inside a QEMU TCG VM" \
	"(nested AMD SVM)."

for f in kernel initrd cmdline; do
	if [ ! -f "$guest/$f" ]; then
		echo "run-nested: no default guest in $guest; creating it" >&2
		"$top/scripts/default-guest.sh" "$guest" >&2
		break
	fi
done
if [ -z "${LKVM_BIN:-}" ] && [ ! -x "$lkvm" ]; then
	make -C "$top" --no-print-directory lkvm.static >&2
fi
make -C "$top" --no-print-directory -s guest/init/init guest/l1/kvm-hold >&2
# Sets generic_vmlinux and generic_modules (L1 runs the generic kernel,
# uncompressed through QEMU's PVH entry: no XZ decompression under TCG).
generic_vmlinux='' generic_modules=''
eval "$("$top/scripts/fetch-kernel.sh" generic)"
[ -n "$generic_vmlinux" ] || { echo "run-nested: no kernel" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lkvm-run-nested.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The user's options, quoted for L1's shell.
quote() { printf "'%s' " "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
args=
for a in "$@"; do
	args="$args$(quote "$a")"
done
if [ -t 0 ]; then
	interactive=1
	timeout=${LKVM_NESTED_TIMEOUT:-0}
else
	interactive=0
	timeout=${LKVM_NESTED_TIMEOUT:-300}
	# Nobody will type at the shell: banner, then power off.
	args="$args--append $(quote "lkvm.run=/etc/lkvm/run,--once")"
fi

cat >"$tmp/l1-run" <<EOF
#!/bin/sh
# L1 side of scripts/run-nested.sh, run by guest/init.
if [ ! -c /dev/kvm ]; then
	echo "run-nested: L1 has no /dev/kvm (kvm_amd did not load)"
	exit 1
fi
# An idle VM that keeps L1's kernel text unpatched (guest/l1/kvm-hold.c).
kvm-hold </dev/null &
echo "run-nested: L1 up in \$(cut -d' ' -f1 /proc/uptime) s; lkvm run $args"
LKVM_DEFAULT_GUEST=/guest lkvm run $args
EOF

"$top/guest/initramfs/mkinitramfs" -o "$tmp/l1.cpio" --compress none \
	--init "$top/guest/init/init" \
	--modules-dir "$generic_modules" --modules kvm_amd \
	--run "$tmp/l1-run" \
	--add "$lkvm:/bin/lkvm" \
	--add "$top/guest/l1/kvm-hold:/bin/kvm-hold" \
	--add "$guest/kernel:/guest/kernel" \
	--add "$guest/initrd:/guest/initrd" \
	--add "$guest/cmdline:/guest/cmdline"

# guest/init in L1 powers off when lkvm exits 0 and otherwise writes the
# status to port 0x501, where isa-debug-exit makes QEMU exit 2 * status + 1.
set -- qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m "$mem" \
	-nodefaults -nographic -no-reboot \
	-device isa-debug-exit,iobase=0x501,iosize=1 \
	-kernel "$generic_vmlinux" -initrd "$tmp/l1.cpio" \
	-append "console=ttyS0 quiet panic=-1 rdinit=/init"
if [ "$interactive" = 1 ]; then
	set -- "$@" -serial mon:stdio
else
	set -- "$@" -serial stdio
fi
if [ "$timeout" -gt 0 ]; then
	set -- timeout --foreground -k 5 "$timeout" "$@"
fi

rc=0
"$@" || rc=$?
if [ "$rc" -eq 124 ]; then
	echo "run-nested: timed out after $timeout s" >&2
	exit 124
fi
# 1 is QEMU's own failure: guest/init never writes 0 to the port.
if [ "$rc" -ne 1 ] && [ $((rc % 2)) -eq 1 ]; then
	rc=$(((rc - 1) / 2))
elif [ "$rc" -ne 0 ]; then
	echo "run-nested: QEMU failed (status $rc)" >&2
	exit 1
fi
echo "run-nested: lkvm exited with status $rc"
exit "$rc"
