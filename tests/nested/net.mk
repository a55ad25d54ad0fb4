# Nested virtio-net tests (tests/nested/test_net.py): a Linux guest under
# lkvm inside one QEMU TCG L1 guest, one L2 boot per transport: pings, bulk
# TCP both ways (100 MiB on pci) over one and two NICs, offloads, iperf3.
# A few minutes, both cores. Needs iperf3 on the host (scripts/install-deps.sh).

# Runs in L1 and in the L2 guests (packed into their initramfs by test_net.py).
tests/nested/net-blast: tests/nested/net-blast.c
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -s -o $@ $<

CLEAN_FILES += tests/nested/net-blast

.PHONY: check-nested-net
check-nested-net:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init \
		tests/nested/net-blast
	$(TIER_RUN) nested-net tests/nested/test_net.py

CHECK_TARGETS += check-nested-net
