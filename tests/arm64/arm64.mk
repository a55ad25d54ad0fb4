# The nested arm64 tier: lkvm cross-built for arm64 (make ARCH=arm64)
# boots Debian's cloud-arm64 kernel inside arm64 QEMU TCG guests with an
# emulated EL2, once per GIC version (tests/arm64/test_arm64.py). About a
# minute, one core; needs no KVM on this host.

.PHONY: check-nested-arm64
check-nested-arm64:
	scripts/fetch-kernel.sh arm64 >/dev/null
	$(MAKE) --no-print-directory ARCH=arm64
	$(TIER_RUN) nested-arm64 tests/arm64/test_arm64.py

CHECK_TARGETS += check-nested-arm64
