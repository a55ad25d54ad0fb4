# Guest-kit test tier: boots every guest/kit image under lkvm and checks
# exit statuses, console output and what the host side saw (tests/kit).
# On the host's KVM when it has one; else tests/tier.py runs the same files
# inside a nested L1 (QEMU TCG, tests/nested/l1shell.py). The VMM under
# test is $LKVM (exported by the top Makefile: the sanitized one with
# SANITIZE=1); tests marked sanitize_only run in that pass alone, and
# those marked plain_only (valgrind, which cannot run an ASan binary; the
# long crash-safety trials) in the plain one alone.

.PHONY: check-kit
CHECK_TARGETS += check-kit

check-kit: $(LKVM_BIN) guest-kit
	$(TIER_RUN) --needs-kvm kit \
		-m "not $(if $(filter 1,$(SANITIZE)),plain_only,sanitize_only)" \
		tests/kit
