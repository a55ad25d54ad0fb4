# Nested virtio-blk tests (tests/nested/test_blk.py): Debian's generic kernel
# under lkvm inside one QEMU TCG L1 guest, five L2 boots over the three
# virtio transports (pattern I/O, two disks, ro, discard, ext2 across boots,
# ioeventfd counters, fio verify, data surviving kill -9). A few minutes,
# both cores. Needs fio and e2fsprogs on the host (scripts/install-deps.sh).

.PHONY: check-nested-blk
check-nested-blk:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init
	$(TIER_RUN) nested-blk tests/nested/test_blk.py

CHECK_TARGETS += check-nested-blk
