#!/bin/sh
# Build kvmtool, statically linked, for the benchmarks that put lkvm side by
# side with it (make bench-notify; tests/bench/notify_bench.py finds it as
# $KVMTOOL, else ~/.cache/lkvm/peers/kvmtool). Not part of lkvm's build or
# tests. There is no network here: the source is a git directory of kvmtool
# (a clone, or the bare snapshot the tool library fetches).
#
#   scripts/peers/build-kvmtool.sh KVMTOOL_GIT_DIR [OUT]
#
# The one local change (kvmtool-no-hwvirt-check.patch): kvmtool refuses to
# start unless the host CPUID shows VMX or SVM, which a software KVM such
# as kvm_pvm does not; /dev/kvm and KVM_CREATE_VM stay the real test.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
git_dir=${1:?usage: $0 KVMTOOL_GIT_DIR [OUT]}
out=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/lkvm/peers}
[ -d "$git_dir/.git" ] && git_dir=$git_dir/.git
commit=$(git --git-dir="$git_dir" rev-parse HEAD)
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git --git-dir="$git_dir" archive "$commit" | tar -x -C "$src"
(cd "$src" && patch -s -p1 <"$here/kvmtool-no-hwvirt-check.patch" &&
	make -s -j"$(nproc)" lkvm-static >/dev/null)
mkdir -p "$out"
install -m 0755 "$src/lkvm-static" "$out/kvmtool"
echo "build-kvmtool: kvmtool $commit -> $out/kvmtool"
