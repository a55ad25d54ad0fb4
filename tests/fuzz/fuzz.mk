# libFuzzer harnesses (clang). Not part of `make check`: run them by hand.
#
#   make fuzz-ring                    fuzz the split virtqueue for FUZZ_TIME s
#   make fuzz-ring FUZZ_TIME=600      longer
#
# Crashers land in build/fuzz/; keep minimised ones as unit tests.

FUZZ_CC		?= clang
FUZZ_TIME	?= 60
FUZZ_DIR	:= build/fuzz
FUZZ_CFLAGS	:= -g -O1 -std=gnu11 -Wall -Wextra -Werror \
		   -Wno-unused-parameter -D_GNU_SOURCE -Iinclude \
		   -fsanitize=fuzzer,address,undefined \
		   -fno-sanitize-recover=undefined

$(FUZZ_DIR)/fuzz_ring: tests/fuzz/fuzz_ring.c virtio/ring.c core/guest_mem.c \
		       $(wildcard include/lkvm/*.h include/lkvm/virtio/*.h)
	@mkdir -p $(FUZZ_DIR)/corpus-ring
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

.PHONY: fuzz-ring
fuzz-ring: $(FUZZ_DIR)/fuzz_ring
	cd $(FUZZ_DIR) && ./fuzz_ring -max_total_time=$(FUZZ_TIME) \
		-max_len=70000 -artifact_prefix=./ corpus-ring
