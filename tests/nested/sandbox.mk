# Nested lkvm sandbox tests (tests/nested/test_sandbox.py): Debian's generic
# kernel as the sandbox's guest, inside one QEMU TCG L1 guest whose own
# files it shares. A few minutes, both cores.

.PHONY: check-nested-sandbox
check-nested-sandbox:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init
	$(TIER_RUN) nested-sandbox tests/nested/test_sandbox.py

CHECK_TARGETS += check-nested-sandbox
