#!/bin/sh
# Build lkvm, fetch a Debian kernel, build the default guest and boot it:
# the one command a fresh Debian 12 machine needs. Extra arguments go to
# `lkvm run` (e.g. -c 2 -m 512).
#
# Where /dev/kvm cannot run Linux at speed (a software KVM such as
# kvm_pvm) or there is no KVM at all, lkvm runs the same guest inside a
# QEMU TCG virtual machine whose own KVM works (scripts/run-nested.sh),
# and says so. A /dev/kvm that is there but unusable (no permission) is an
# error to fix, not a reason to emulate.
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" lkvm guest/init/init >/dev/null
scripts/default-guest.sh >&2

set +e
probe=$(./lkvm probe)
verdict=$?
set -e
case $verdict in
0)
	exec ./lkvm run "$@"
	;;
2|3)
	echo "lkvm: $probe" >&2
	echo "lkvm: falling back to a nested set-up: lkvm runs inside a QEMU TCG guest with a working KVM (slower, about a minute)" >&2
	make lkvm.static >/dev/null
	exec scripts/run-nested.sh "$@"
	;;
*)
	echo "lkvm: $probe" >&2
	exit 1
	;;
esac
