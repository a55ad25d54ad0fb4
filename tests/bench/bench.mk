# Boot benchmark: wall time, VMM CPU time and VMM memory to boot and end
# guest/kit/exit.elf with 1 and 2 vCPUs, with QEMU alongside when installed.

.PHONY: bench-boot
BENCH_TARGETS += bench-boot

bench-boot: $(LKVM_BIN) guest-kit
	/usr/bin/python3 tests/bench/boot_bench.py
