#!/bin/sh
# The whole test suite on a fresh Debian 12 machine (what .ci/run runs):
# installs the packages it needs, builds, runs every tier (unit, bad input,
# guest kit, harness, nested Linux), then the host tiers again under ASan +
# UBSan. Each tier says where it ran (host KVM, or a nested L1 when this
# machine has none) and what passed, failed or was skipped; a skip, a tier
# with no test or a tier that never reported fails the run. The summary at
# the end lists them all (tests/tier.py).
#
#   scripts/test.sh
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
make -j"$jobs"
status=0
make check || status=1
make -j"$jobs" SANITIZE=1 >/dev/null
make SANITIZE=1 TIER_KEEP=1 check-fast || status=1
if [ $status = 0 ]; then
	echo "lkvm: all test tiers passed in $(($(date +%s) - start)) s"
else
	echo "lkvm: some test tiers FAILED (see above and the summary)"
fi
exit $status
