# Tier 3: real Debian kernels booted by lkvm inside a QEMU TCG guest with a
# nested (emulated AMD SVM) /dev/kvm. See tests/nested/README.md. Slow
# (a few minutes, both cores): one L1 boot runs the whole L2 boot matrix.
# Other fragments here (blk.mk) run their own test files.

# Runs inside the L2 guests (packed into their initramfs by nested.py).
tests/nested/xsave-check: tests/nested/xsave-check.c
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -s -o $@ $<

tests/nested/tty-stop: tests/nested/tty-stop.c
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -s -o $@ $<

CLEAN_FILES += tests/nested/xsave-check tests/nested/tty-stop

.PHONY: check-nested
check-nested:
	scripts/fetch-kernel.sh generic cloud >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init \
		tests/nested/xsave-check tests/nested/tty-stop
	$(TIER_RUN) nested tests/nested/test_runner.py \
		tests/nested/test_mkinitramfs.py tests/nested/test_init.py \
		tests/nested/test_boot.py

CHECK_TARGETS += check-nested
