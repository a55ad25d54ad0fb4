# Boot benchmark: wall time, VMM CPU time and VMM memory to boot and end
# guest/kit/exit.elf with 1 and 2 vCPUs, with QEMU alongside when installed.

.PHONY: bench-boot
BENCH_TARGETS += bench-boot

# Benches that boot guests run where the guest kit runs: on the host's
# KVM, or in a nested L1 (figures then labelled TCG-distorted).
BENCH_EXEC = $(TIER) exec --needs-kvm

bench-boot: $(LKVM_BIN) guest-kit
	$(BENCH_EXEC) bench-boot /usr/bin/python3 tests/bench/boot_bench.py

# The host-thread virtio driver both ring benches link (ring_driver.c).
RING_DRIVER_OBJ := $(BUILD)/tests/bench/ring_driver.o

# virtio-blk driven from a host thread (no guest instructions in the way),
# next to fio on the same image.
BLK_RING_BENCH := $(BUILD)/tests/bench/blk_ring_bench
$(BLK_RING_BENCH): $(BUILD)/tests/bench/blk_ring_bench.o $(RING_DRIVER_OBJ) $(LIBLKVM)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: bench-blk-ring
BENCH_TARGETS += bench-blk-ring
bench-blk-ring: $(BLK_RING_BENCH)
	/usr/bin/python3 tests/bench/blk_ring_bench.py $(BLK_RING_BENCH)

# Notify cost: kicks through ioeventfd against kicks that exit to a vCPU,
# and kvmtool's where it is installed (scripts/peers/build-kvmtool.sh).
.PHONY: bench-notify
BENCH_TARGETS += bench-notify
bench-notify: $(LKVM_BIN) guest-kit peer-kit
	$(BENCH_EXEC) bench-notify /usr/bin/python3 tests/bench/notify_bench.py

# Request service: 4 KiB reads at QD1 and QD32 from a polling guest-kit
# driver (guest/kit/reqbench.elf) per transport: wall, VMM CPU, exits and
# interrupts per request.
.PHONY: bench-requests
BENCH_TARGETS += bench-requests
bench-requests: $(LKVM_BIN) guest-kit
	$(BENCH_EXEC) bench-requests /usr/bin/python3 tests/bench/request_bench.py

# virtio-net: lkvm's device driven from a host thread (net_ring_bench lkvm),
# the tap's own limit with the same frames (net_ring_bench tap), and a
# polling guest-kit driver (guest/kit/netbench.elf); 64-byte and 64 KiB
# (TSO) frames each way, each in a network namespace of its own.
NET_RING_BENCH := $(BUILD)/tests/bench/net_ring_bench
$(NET_RING_BENCH): $(BUILD)/tests/bench/net_ring_bench.o $(RING_DRIVER_OBJ) $(LIBLKVM)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: bench-net
BENCH_TARGETS += bench-net
bench-net: $(NET_RING_BENCH) $(LKVM_BIN) guest-kit
	/usr/bin/python3 tests/bench/net_bench.py $(NET_RING_BENCH)

# Virtqueue polling: one table of guest-kit runs (--no-ioeventfd, --poll
# off, auto), the host-thread ring drivers next to fio, and four disks on
# shared or separate I/O threads (tests/bench/poll_bench.py).
.PHONY: bench-poll
BENCH_TARGETS += bench-poll
bench-poll: $(LKVM_BIN) guest-kit $(BLK_RING_BENCH) $(NET_RING_BENCH)
	LKVM_BUILD=$(abspath $(BUILD)) /usr/bin/python3 tests/bench/poll_bench.py

# virtio-net TCP throughput (iperf3 each way) of a Debian guest under lkvm
# (--poll off, auto, on), kvmtool and QEMU, interleaved rounds in one nested
# L1 (tests/bench/net_peers_bench.py; 8-13 min, both cores). Missing peers
# are skipped, saying so; kvmtool: scripts/peers/build-kvmtool.sh.
.PHONY: bench-net-peers
BENCH_TARGETS += bench-net-peers
bench-net-peers:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init
	/usr/bin/python3 tests/bench/net_peers_bench.py

# Boot to init of Debian's cloud kernel under lkvm (bzImage, PVH, its
# default command line, a plain -p, no --stats, four initramfs compressions),
# kvmtool and QEMU (-M pc, -M microvm), interleaved rounds in one nested L1,
# and tiny guests' launch-to-exit (lkvm, kvmtool) in L1 and on the host
# (tests/bench/boot_peers_bench.py; about 6 min, both cores). Missing peers
# are skipped, saying so; kvmtool: scripts/peers/build-kvmtool.sh.
.PHONY: bench-boot-peers
BENCH_TARGETS += bench-boot-peers
bench-boot-peers:
	scripts/fetch-kernel.sh cloud >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init guest-kit \
		peer-kit
	/usr/bin/python3 tests/bench/boot_peers_bench.py

# lkvm sandbox -- true against lkvm run of the same kernel and initramfs,
# alternating, in one nested L1 (tests/bench/sandbox_bench.py; ~3 min).
.PHONY: bench-sandbox
BENCH_TARGETS += bench-sandbox
bench-sandbox:
	scripts/fetch-kernel.sh generic >/dev/null
	$(MAKE) --no-print-directory lkvm.static guest/init/init
	/usr/bin/python3 tests/bench/sandbox_bench.py
