# Guest-kit test tier: boots every guest/kit image under ./lkvm on the host
# KVM and checks exit statuses and console output (tests/kit/test_kit.py).
# Debian's python3 on purpose: it is the one with pytest installed. The
# VMM under test is $LKVM (exported by the top Makefile), else ./lkvm.

.PHONY: check-kit
CHECK_TARGETS += check-kit

check-kit: $(LKVM_BIN) guest-kit
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/kit
