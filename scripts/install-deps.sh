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
	liburing-dev zlib1g-dev qemu-utils"

missing=
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root, or install them)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
