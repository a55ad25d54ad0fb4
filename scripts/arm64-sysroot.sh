#!/bin/sh
# A private arm64 sysroot for cross-building lkvm's arm64 parts: the
# headers and static libraries of the Debian arm64 packages it links
# (libfdt, zlib, liburing, libseccomp), cmocka for the unit tests, and
# busybox-static (bin/busybox) for the arm64 test guests' initramfs.
#
#   scripts/arm64-sysroot.sh        prints the sysroot's path
#
# The packages are fetched with `apt-get download` and unpacked with
# `dpkg -x`, never installed: `apt-get install libfdt-dev:arm64` would
# remove the amd64 libfdt-dev lkvm builds with. Needs arm64 among dpkg's
# architectures (scripts/install-deps.sh adds it). A second run with the
# same package versions is a no-op.
#
# It lives in ${LKVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm}/arm64-sysroot.
set -eu

CACHE=${LKVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm}
ROOT=$CACHE/arm64-sysroot
PACKAGES="libfdt-dev libfdt1 zlib1g-dev zlib1g liburing-dev liburing2
	libseccomp-dev libseccomp2 libcmocka-dev libcmocka0 busybox-static"

log() { echo "arm64-sysroot: $*" >&2; }

dpkg --print-foreign-architectures | grep -qx arm64 ||
	{ log "error: dpkg has no arm64 architecture (run scripts/install-deps.sh)"; exit 1; }

# The exact versions apt would fetch now: the sysroot is rebuilt when
# one changes.
want=
for p in $PACKAGES; do
	v=$(apt-cache policy "$p:arm64" 2>/dev/null |
		sed -n 's/^ *Candidate: *//p')
	[ -n "$v" ] && [ "$v" != "(none)" ] ||
		{ log "error: apt knows no $p:arm64 (apt-get update?)"; exit 1; }
	want="$want $p=$v"
done
if [ -f "$ROOT/.packages" ] && [ "$(cat "$ROOT/.packages")" = "$want" ]; then
	echo "$ROOT"
	exit 0
fi

log "fetching$want"
tmp=$(mktemp -d "$CACHE/arm64-sysroot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/root"
# apt's sandbox user must be able to write where it downloads
chmod 755 "$tmp" "$tmp/debs"
(cd "$tmp/debs" &&
	# shellcheck disable=SC2086
	apt-get download -q $(for p in $want; do echo "${p%%=*}:arm64=${p#*=}"; done) \
		>/dev/null 2>"$tmp/apt.err") ||
	{ cat "$tmp/apt.err" >&2; exit 1; }
for deb in "$tmp"/debs/*.deb; do
	dpkg -x "$deb" "$tmp/root"
done
echo "$want" >"$tmp/root/.packages"
rm -rf "$ROOT"
mv "$tmp/root" "$ROOT"
echo "$ROOT"
