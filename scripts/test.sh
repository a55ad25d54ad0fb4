#!/bin/sh
# The whole test suite on a fresh Debian 12 machine (what .ci/run runs). It
# installs the packages it needs and builds everything first (lkvm plain and
# with ASan + UBSan, the guests, the fuzz targets), then runs every tier:
#
#   1. the host tiers (unit, arm64 units, bad input, harness), then unit and
#      bad input again under the sanitizers;
#   2. the guest kit, plain then sanitized, with the fuzz tier beside it when
#      the kit runs on this host's KVM: each takes about one core (a kit
#      guest is one vCPU thread, a libFuzzer target one process). When the
#      kit needs a nested L1, which takes both cores, one after the other;
#   3. the nested-Linux tiers, one at a time: each takes both cores.
#
# Each tier says where it ran (the host, the host's KVM, or a nested L1 when
# this machine has no usable KVM) and what passed, failed or was skipped; a
# failure, a skip, a tier with no test or a tier that never reported fails
# the run. The summary at the end lists them all (tests/tier.py).
#
#   scripts/test.sh
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
tier="/usr/bin/python3 tests/tier.py"

make -j"$jobs"
make -j"$jobs" SANITIZE=1 >/dev/null
make -j"$jobs" fuzz-targets >/dev/null
plain=$(make -s print-tiers)

status=0
run() {
	make --no-print-directory "$@" || status=1
}

$tier reset
for t in $plain; do
	case $t in
	check-kit | check-fuzz | check-nested*) ;;
	*) run "$t" ;;
	esac
done
run SANITIZE=1 check-unit
run SANITIZE=1 check-errors

case " $plain " in *" check-fuzz "*) fuzz=check-fuzz ;; *) fuzz= ;; esac
if [ -n "$fuzz" ] && [ "$($tier where --needs-kvm)" = host ]; then
	mkdir -p build/tiers
	log=build/tiers/fuzz-beside-kit.log
	echo "test.sh: the fuzz tier runs beside the guest kit (its output: $log, shown after the kit)"
	(make --no-print-directory check-fuzz >"$log" 2>&1; echo $? >"$log.status") &
	fuzz_pid=$!
	run check-kit
	run SANITIZE=1 check-kit
	wait "$fuzz_pid" || true
	cat "$log"
	[ "$(cat "$log.status" 2>/dev/null)" = 0 ] || status=1
else
	run check-kit
	run SANITIZE=1 check-kit
	[ -z "$fuzz" ] || run check-fuzz
fi

for t in $plain; do
	case $t in check-nested*) run "$t" ;; esac
done

expect="$(echo "$plain" | sed 's/check-//g') unit:sanitize errors:sanitize kit:sanitize"
# shellcheck disable=SC2086
$tier summary --expect $expect || status=1
if [ $status = 0 ]; then
	echo "lkvm: all test tiers passed in $(($(date +%s) - start)) s"
else
	echo "lkvm: some test tiers FAILED (see above and the summary)"
fi
exit $status
