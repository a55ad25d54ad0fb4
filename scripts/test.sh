#!/bin/sh
# The whole test suite on a fresh Debian 12 machine (what .ci/run runs):
# installs the packages it needs, builds, runs every tier (unit, guest kit,
# bad input, nested Linux), then the host tiers again under ASan + UBSan.
#
#   scripts/test.sh
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs"
status=0
make check || status=1
make -j"$jobs" SANITIZE=1 >/dev/null
make SANITIZE=1 check-fast || status=1
if [ $status = 0 ]; then
	echo "lkvm: all test tiers passed"
else
	echo "lkvm: some test tiers FAILED (see above)"
fi
exit $status
