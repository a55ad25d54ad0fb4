# Nested virtio-net tests (tests/nested/test_net.py): a Linux guest under
# lkvm inside one QEMU TCG L1 guest pings L1 over a tap, per transport.
.PHONY: check-nested-net
check-nested-net:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/nested/test_net.py

CHECK_TARGETS += check-nested-net
