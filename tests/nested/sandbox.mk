# Nested lkvm sandbox tests (tests/nested/test_sandbox.py): Debian's generic
# kernel as the sandbox's guest, inside one QEMU TCG L1 guest whose own
# files it shares. A few minutes, both cores.

# Runs in L1 and in the sandbox's guest (tests/nested/p9-check.c).
tests/nested/p9-check: tests/nested/p9-check.c
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -s -o $@ $<

CLEAN_FILES += tests/nested/p9-check

.PHONY: check-nested-sandbox
check-nested-sandbox:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init \
		tests/nested/p9-check
	$(TIER_RUN) nested-sandbox tests/nested/test_sandbox.py

CHECK_TARGETS += check-nested-sandbox
