# libFuzzer targets (Debian's clang 14 and libclang-rt-14-dev). Every
# tests/fuzz/fuzz_NAME.c is one target, built with ASan + UBSan + libFuzzer
# against the VMM's own sources (compiled here with the same sanitizers and
# coverage) and the unit tests' fake VM, so a new target needs no change here.
#
#   make fuzz                   every target for FUZZ_TIME s (default 600)
#   make fuzz-NAME              one target, e.g. make fuzz-ring FUZZ_TIME=60
#   make fuzz-targets           build them only
#   make check-fuzz             the CI tier: each target for 60 s over its
#                               seeds, plus every kept crash input as a
#                               regression test (tests/fuzz/test_fuzz.py)
#
# Seeds live in tests/fuzz/corpus/NAME/ (in the repo); what a run finds grows
# a working copy in build/fuzz/corpus/NAME/. A crash input lands in
# build/fuzz/; once fixed, keep it in tests/fuzz/crashes/NAME/ so that every
# check replays it.

FUZZ_CC		?= clang
FUZZ_TIME	?= 600
FUZZ_DIR	:= build/fuzz
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS	:= -g -O1 -std=gnu11 -Wall -Wextra -Werror \
		   -Wno-unused-parameter -Wno-gnu-variable-sized-type-not-at-end \
		   -D_GNU_SOURCE -Iinclude \
		   $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(SLIRP_CFLAGS) \
		   -I$(GEN_DIR)

FUZZ_SRCS	:= $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES	:= $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS	:= $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_LIB_OBJS	:= $(addprefix $(FUZZ_DIR)/obj/,$(LIB_SRCS:.c=.o)) \
		   $(FUZZ_DIR)/obj/tests/unit/fake_vm.o
FUZZ_LIB	:= $(FUZZ_DIR)/liblkvm-fuzz.a

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/obj/core/seccomp.o: $(GEN_DIR)/syscall_names.h

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	$(AR) rcs $@ $^

$(FUZZ_BINS): $(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o \
				  $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o,$^) \
		$(FUZZ_LIB) -luring -lz -lseccomp -lpthread

# The transport targets share a device on a fake VM (blk_vm.c).
$(FUZZ_DIR)/fuzz_virtio_pci $(FUZZ_DIR)/fuzz_mmio: \
	$(FUZZ_DIR)/obj/tests/fuzz/blk_vm.o

.PHONY: fuzz fuzz-targets check-fuzz $(addprefix fuzz-,$(FUZZ_NAMES))
fuzz-targets: $(FUZZ_BINS)

$(addprefix fuzz-,$(FUZZ_NAMES)): fuzz-%: $(FUZZ_DIR)/fuzz_%
	@mkdir -p $(FUZZ_DIR)/corpus/$*
	$< -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_DIR)/$*- \
		$(FUZZ_DIR)/corpus/$* $(wildcard tests/fuzz/corpus/$*)

fuzz: $(addprefix fuzz-,$(FUZZ_NAMES))

# The fuzz binaries carry their own sanitizers: one run, in the plain pass.
check-fuzz: $(FUZZ_BINS)
	$(TIER_RUN) fuzz tests/fuzz

ifneq ($(SANITIZE),1)
CHECK_TARGETS	+= check-fuzz
endif
CLEAN_FILES	+=
