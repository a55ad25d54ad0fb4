#!/bin/sh
# Fetch a stock Debian kernel for lkvm's Linux guests and nested tests.
#
#   scripts/fetch-kernel.sh [generic|cloud|arm64]...     (default: generic)
#
# For each flavour: resolve the current package behind linux-image-amd64 /
# linux-image-cloud-amd64, download it with apt-get, unpack it, run depmod
# (the .deb ships no modules.dep) and extract the uncompressed vmlinux from
# the bzImage, so that guests can be booted through the PVH entry without
# paying for XZ decompression inside the guest. arm64 is Debian's
# cloud-arm64 kernel, whose vmlinuz is already a raw Image (no vmlinux is
# made; <flavour>_bzimage names the Image).
#
# Everything lives in ${LKVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm}/
# kernels/<flavour>/; a second run with the same package is a no-op.
#
# Output on stdout, one "key=value" line each, shell-evaluable:
#   <flavour>_version=6.1.0-57-amd64
#   <flavour>_bzimage=/…/pkg/boot/vmlinuz-6.1.0-57-amd64
#   <flavour>_vmlinux=/…/vmlinux
#   <flavour>_modules=/…/pkg/lib/modules/6.1.0-57-amd64
# Progress and errors go to stderr.
set -eu

CACHE=${LKVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm}

log() { echo "fetch-kernel: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Debian's metapackage for a flavour; its one Depends names the versioned
# image package (linux-image-6.1.0-57-amd64 and so on).
meta_of() {
	case $1 in
	generic) echo linux-image-amd64 ;;
	cloud) echo linux-image-cloud-amd64 ;;
	arm64) echo linux-image-cloud-arm64:arm64 ;;
	*) die "unknown flavour '$1' (generic, cloud or arm64)" ;;
	esac
}

resolve() {
	apt-cache depends "$1" 2>/dev/null |
		sed -n 's/^ *Depends: *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1
}

# The kernel image is a bzImage; its setup header tells where the compressed
# payload lies (payload_offset, relative to the protected-mode part that
# follows the setup sectors, and payload_length). Debian compresses the
# generic kernel with XZ and the cloud kernel with LZ4 (legacy frames). The
# build appends the uncompressed size as 4 bytes, which lz4 and zstd would
# take for another frame, so those get the payload without it. If the header
# does not point at a known format, scan for an XZ stream.
extract_vmlinux() {
	bz=$1 out=$2
	setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" | tr -d ' ')
	[ "$setup_sects" -eq 0 ] && setup_sects=4
	poff=$(od -An -tu4 -j $((0x248)) -N4 "$bz" | tr -d ' ')
	plen=$(od -An -tu4 -j $((0x24c)) -N4 "$bz" | tr -d ' ')
	off=$(((setup_sects + 1) * 512 + poff))
	magic=$(od -An -tx1 -j "$off" -N6 "$bz" | tr -d ' \n')
	payload() { tail -c +$((off + 1)) "$bz" | head -c "$1"; }
	case $magic in
	fd377a585a00) payload "$plen" | xz -dc --single-stream ;;
	02214c18*) payload $((plen - 4)) | lz4 -dc ;;
	28b52ffd*) payload $((plen - 4)) | zstd -dcq ;;
	1f8b*) payload "$plen" | gzip -dc 2>/dev/null ;;
	*)
		log "$bz: unknown payload format ($magic); scanning for XZ"
		off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | head -n1 | cut -d: -f1)
		[ -n "$off" ] || die "$bz: no compressed payload found"
		tail -c +$((off + 1)) "$bz" | xz -dc --single-stream
		;;
	esac >"$out.tmp" || [ "${magic#1f8b}" != "$magic" ] ||
		die "$bz: decompression failed (format $magic; is xz/lz4/zstd installed?)"
	[ "$(od -An -tx1 -N4 "$out.tmp" | tr -d ' \n')" = 7f454c46 ] ||
		die "$bz: payload is not an ELF file"
	mv "$out.tmp" "$out"
}

# depmod from kmod if installed, else busybox's (CI images may lack kmod).
run_depmod() {
	if command -v depmod >/dev/null 2>&1; then
		depmod -b "$1" "$2"
	elif command -v busybox >/dev/null 2>&1; then
		busybox depmod -b "$1" "$2"
	else
		die "neither depmod (kmod) nor busybox found"
	fi
}

fetch() {
	flavour=$1
	meta=$(meta_of "$flavour")
	dir=$CACHE/kernels/$flavour
	mkdir -p "$dir"

	pkg=$(resolve "$meta")
	if [ -z "$pkg" ]; then
		if [ -f "$dir/ready" ]; then
			# Offline or no package lists: the cached kernel will do.
			pkg=$(cat "$dir/ready")
			log "$meta not resolvable; using cached $pkg"
		else
			log "$meta unknown to apt-cache; running apt-get update"
			apt-get update -qq >&2 || die "apt-get update failed"
			pkg=$(resolve "$meta")
			[ -n "$pkg" ] || die "cannot resolve $meta"
		fi
	fi

	if [ "$(cat "$dir/ready" 2>/dev/null)" != "$pkg" ]; then
		log "$flavour: fetching $pkg"
		rm -rf "$dir/pkg" "$dir/vmlinux" "$dir/ready" "$dir"/*.deb
		# apt-get download writes into the current directory.
		(cd "$dir" && apt-get download -q "$pkg" >&2) ||
			die "apt-get download $pkg failed"
		dpkg -x "$dir"/"${pkg%%:*}"_*.deb "$dir/pkg"
		kver=$(ls "$dir/pkg/lib/modules")
		run_depmod "$dir/pkg" "$kver"
		[ "$flavour" = arm64 ] ||
			extract_vmlinux "$dir/pkg/boot/vmlinuz-$kver" "$dir/vmlinux"
		# Only the package is needed again if the cache is rebuilt.
		rm -f "$dir"/*.deb
		echo "$pkg" >"$dir/ready"
	fi

	kver=$(ls "$dir/pkg/lib/modules")
	echo "${flavour}_version=$kver"
	echo "${flavour}_bzimage=$dir/pkg/boot/vmlinuz-$kver"
	[ "$flavour" = arm64 ] || echo "${flavour}_vmlinux=$dir/vmlinux"
	echo "${flavour}_modules=$dir/pkg/lib/modules/$kver"
}

[ $# -gt 0 ] || set -- generic
# One fetch at a time per cache (CI and a developer may share it).
mkdir -p "$CACHE/kernels"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$CACHE/kernels/.lock"
	flock 9
fi
for f in "$@"; do
	fetch "$f"
done
