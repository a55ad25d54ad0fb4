#!/bin/sh
# Install the Debian packages lkvm's build, tests and nested runs need.
# Quick when they are all there already: apt is asked only for what's missing.
#
#   scripts/install-deps.sh
set -eu

packages="gcc make libc6-dev linux-libc-dev libcmocka-dev acpica-tools
	python3 python3-pytest qemu-system-x86 busybox-static cpio xz-utils
	kmod strace util-linux fio lz4 libslirp-dev iperf3 e2fsprogs
	clang libclang-rt-14-dev valgrind libc6-dbg libseccomp-dev
	liburing-dev zlib1g-dev qemu-utils libfdt-dev gdb
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
	qemu-system-arm"

# The arm64 cross-build fetches its libraries as arm64 packages
# (scripts/arm64-sysroot.sh), which apt offers once dpkg knows arm64.
new_arch=
dpkg --print-foreign-architectures | grep -qx arm64 || new_arch=1

missing=
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && [ -z "$new_arch" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing${new_arch:+ and dpkg's arm64 architecture} (run as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
[ -n "$new_arch" ] && dpkg --add-architecture arm64
apt-get update -q >/dev/null
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
