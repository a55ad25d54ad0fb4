# The test harness's own rules (tests/tier.py): what fails a tier, where a
# tier that needs a KVM runs, and that both places work on this machine
# (one tiny kit test forced into a nested L1, one forced onto the host).

.PHONY: check-harness
CHECK_TARGETS += check-harness

check-harness: $(LKVM_BIN) guest-kit
	$(TIER_RUN) harness tests/harness
