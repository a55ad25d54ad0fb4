#!/bin/sh
# Populate lkvm's default guest: what `lkvm run` boots when given no kernel.
#
#   scripts/default-guest.sh [DIR]
#
# DIR defaults to $LKVM_DEFAULT_GUEST, else ${XDG_CACHE_HOME:-$HOME/.cache}/
# lkvm/default, the place lkvm looks. It gets:
#   kernel   Debian's generic amd64 kernel as an uncompressed vmlinux (PVH
#            entry, no in-guest decompression), from scripts/fetch-kernel.sh
#   initrd   busybox + guest/init + the virtio modules (guest/initramfs/
#            mkinitramfs), with guest/initramfs/welcome.sh as /etc/lkvm/run:
#            a banner, then a shell on the console; exit or poweroff ends it
#   cmdline  what the guest adds to lkvm's default kernel command line
#            (lkvm run --help shows it)
# Needs guest/init/init built (make guest/init/init); installs nothing.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${LKVM_DEFAULT_GUEST:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm/default}}

# Sets generic_version, generic_vmlinux, generic_modules (and _bzimage).
generic_version='' generic_vmlinux='' generic_modules=''
eval "$("$top/scripts/fetch-kernel.sh" generic)"
[ -n "$generic_vmlinux" ] || { echo "default-guest: no kernel" >&2; exit 1; }
[ -x "$top/guest/init/init" ] || make -C "$top" guest/init/init >&2

mkdir -p "$dir"
# A copy, not a link: the guest must survive a cache refresh that swaps
# the kernel under it, and must match the modules in its initrd.
cp "$generic_vmlinux" "$dir/kernel.tmp"
"$top/guest/initramfs/mkinitramfs" -o "$dir/initrd.tmp" \
	--modules-dir "$generic_modules" \
	--run "$top/guest/initramfs/welcome.sh"
echo "quiet" >"$dir/cmdline.tmp"
for f in kernel initrd cmdline; do
	mv "$dir/$f.tmp" "$dir/$f"
done
echo "default guest: $dir (Linux $generic_version)"
