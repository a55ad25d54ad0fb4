# Nested user-mode networking test (tests/nested/test_user_net.py): the
# dynamic ./lkvm (libslirp is shared-only) with its libraries in L1, run as
# an unprivileged user; DHCP, the gateway alias and hostfwd, one L2 boot.
.PHONY: check-nested-user-net
check-nested-user-net:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm guest/init/init
	$(TIER_RUN) nested-user-net tests/nested/test_user_net.py

CHECK_TARGETS += check-nested-user-net
