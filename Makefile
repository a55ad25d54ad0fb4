# lkvm - a small, fast KVM hypervisor.
#
#   make                 build ./lkvm and the test guests
#   make check           run every test tier: unit, guest kit, errors, nested
#   make check-fast      every tier but the nested-Linux ones
#   make bench           print benchmark figures
#   make SANITIZE=1 ...  the same with ASan + UBSan, built in build/sanitize
#                        (the VMM is then build/sanitize/lkvm)
#   make ARCH=arm64      a static arm64 VMM, build/arm64/lkvm (cross-built
#                        with aarch64-linux-gnu- on other hosts)
#
# Objects go to $(BUILD); sub-parts add themselves through the *.mk
# fragments included below, appending to ALL_TARGETS, CHECK_TARGETS,
# BENCH_TARGETS and CLEAN_FILES. Test scripts find the VMM in $LKVM.

CC	?= cc
CFLAGS	?= -O2 -g
CFLAGS	+= -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	   -D_GNU_SOURCE -Iinclude -MMD -MP
LDFLAGS	?=
LDLIBS	+= -luring -lz -lseccomp -lpthread

# The host's syscall names by number, for the seccomp death message (its
# SIGSYS handler cannot ask libseccomp, which allocates): made from
# <sys/syscall.h>, so they are the build's own architecture's.
GEN_DIR	:= build/gen
CFLAGS	+= -I$(GEN_DIR)

# libslirp (-n user) exists as a shared library only. lkvm does not link
# it: net/slirp_lib.c loads it (and glib with it) when a -n user card is
# opened, so that no other run pays for loading them; its headers are
# needed to build. lkvm.static is built without it (CONFIG_SLIRP unset),
# and there -n user says so. Debian's slirp.pc wants glib-2.0.pc
# (libglib2.0-dev), which lkvm does not need: then libslirp-dev's own paths.
SLIRP_CFLAGS := $(shell pkg-config --cflags slirp 2>/dev/null || \
		  echo -I/usr/include/slirp)

# The arch folder the board comes from: x86 (x86_64) or arm (arm64).
HOST_ARCH := $(shell uname -m | sed -e 's/aarch64/arm64/')
ARCH	?= $(HOST_ARCH)
ifeq ($(ARCH),arm64)
ARCH_DIR := arm
else ifeq ($(ARCH),x86_64)
ARCH_DIR := x86
else
$(error ARCH=$(ARCH): lkvm builds for x86_64 or arm64)
endif

ifneq ($(ARCH),$(HOST_ARCH))
# Cross-built: static, against the arm64 Debian libraries that
# scripts/arm64-sysroot.sh unpacks (installing them would replace the
# host's own -dev packages).
CROSS_COMPILE ?= aarch64-linux-gnu-
CC	:= $(CROSS_COMPILE)gcc
AR	:= $(CROSS_COMPILE)ar
SYSROOT	:= $(or $(LKVM_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/lkvm)/arm64-sysroot
CFLAGS	+= -isystem $(SYSROOT)/usr/include
LDFLAGS	+= -static -L$(SYSROOT)/usr/lib/aarch64-linux-gnu
BUILD	:= build/$(ARCH)
LKVM_BIN := $(BUILD)/lkvm
GUEST_INIT := $(BUILD)/guest/init/init
else ifeq ($(SANITIZE),1)
BUILD	:= build/sanitize
CFLAGS	+= -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined
LDFLAGS	+= -fsanitize=address,undefined
LKVM_BIN := $(BUILD)/lkvm
else
BUILD	:= build/default
LKVM_BIN := lkvm
endif
export LKVM := $(abspath $(LKVM_BIN))
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

GUEST_INIT ?= guest/init/init
ifeq ($(ARCH),arm64)
LDLIBS	+= -lfdt
endif

# The VMM proper: every C file in these folders; main.c is the only entry.
LIB_SRCS := $(sort $(wildcard core/*.c disk/*.c fs/*.c hw/*.c net/*.c virtio/*.c $(ARCH_DIR)/*.c))
LIB_SRCS := $(filter-out core/main.c,$(LIB_SRCS))
ifeq ($(ARCH),$(HOST_ARCH))
$(BUILD)/net/backend.o: CFLAGS += -DCONFIG_SLIRP
else
# A cross build is static, like lkvm.static: no libslirp to dlopen.
LIB_SRCS := $(filter-out net/slirp.c net/slirp_lib.c,$(LIB_SRCS))
endif
LIB_OBJS := $(addprefix $(BUILD)/,$(LIB_SRCS:.c=.o))
$(BUILD)/net/slirp.o $(BUILD)/net/slirp_lib.o: CFLAGS += $(SLIRP_CFLAGS)
LIBLKVM  := $(BUILD)/liblkvm.a

ALL_TARGETS	:= $(LKVM_BIN)
CHECK_TARGETS	:=
BENCH_TARGETS	:=
CLEAN_FILES	:= lkvm lkvm.static

.PHONY: all check check-fast bench clean
all: build-all

$(LIBLKVM): $(LIB_OBJS)
	$(AR) rcs $@ $^

# lkvm sandbox boots into guest/init/init, which lkvm carries inside.
SANDBOX_INIT := $(BUILD)/core/sandbox_init.o
$(SANDBOX_INIT): core/sandbox_init.S $(GUEST_INIT)
	@mkdir -p $(dir $@)
	$(CC) -DGUEST_INIT='"$(GUEST_INIT)"' -c -o $@ $<

$(LKVM_BIN): $(BUILD)/core/main.o $(SANDBOX_INIT) $(LIBLKVM)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A static build for the nested test tier, where L1 has none of our libraries:
# no libslirp, so its own net/backend.o without CONFIG_SLIRP.
STATIC_OBJS := $(BUILD)/core/main.o $(SANDBOX_INIT) \
	       $(BUILD)/static/net/backend.o \
	       $(filter-out $(BUILD)/net/slirp.o $(BUILD)/net/slirp_lib.o \
			    $(BUILD)/net/backend.o,$(LIB_OBJS))
lkvm.static: $(STATIC_OBJS)
	$(CC) $(LDFLAGS) -static -o $@ $^ $(LDLIBS)

$(BUILD)/static/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/core/seccomp.o: $(GEN_DIR)/syscall_names.h
$(GEN_DIR)/syscall_names.h:
	@mkdir -p $(dir $@)
	echo '#include <sys/syscall.h>' | $(CC) -dM -E - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$$/[\2] = "\1",/p' \
		> $@.tmp && mv $@.tmp $@

-include $(sort $(wildcard guest/*/*.mk guest/*/*/*.mk tests/*/*.mk))

ifneq ($(ARCH),$(HOST_ARCH))
# A cross build makes the VMM and the init it carries; the tests and the
# guests they boot are the host's (tests/unit/arm64.mk runs arm/'s tests).
ALL_TARGETS := $(LKVM_BIN)
$(GUEST_INIT): guest/init/init.c guest/init/sandbox.c guest/init/sandbox.h
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_INIT_CFLAGS) -static -s -o $@ $(filter %.c,$^)
$(LIB_OBJS) $(BUILD)/core/main.o: | arm64-sysroot
endif

.PHONY: build-all
build-all: $(ALL_TARGETS)

# Every check-NAME target runs its tier through tests/tier.py, which picks
# where it runs (a tier that needs a KVM goes into a nested L1 when the
# host has none), counts what ran and records it; a failure, a skip or a
# tier with no test fails it. Each tier runs even if an earlier one failed;
# the summary then lists them all and fails if an expected one never
# reported. TIER_KEEP=1 adds to the results of an earlier make check
# (scripts/test.sh: the plain tiers, then the sanitized ones).
TIER		:= /usr/bin/python3 tests/tier.py
TIER_RUN	:= $(TIER) run $(if $(filter 1,$(SANITIZE)),--sanitize)
TIER_SUFFIX	:= $(if $(filter 1,$(SANITIZE)),:sanitize)
FAST_TARGETS	 = $(filter-out check-nested%,$(CHECK_TARGETS))

define run_tiers
	@$(if $(TIER_KEEP),,$(TIER) reset;) failed=; for t in $(1); do \
		$(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
	done; $(TIER) summary --expect \
		$(patsubst check-%,%$(TIER_SUFFIX),$(1)) || failed=1; \
	if [ -n "$$failed" ]; then exit 1; fi
endef

check: $(ALL_TARGETS)
	$(call run_tiers,$(CHECK_TARGETS))

check-fast: $(ALL_TARGETS)
	$(call run_tiers,$(FAST_TARGETS))

bench: $(ALL_TARGETS) $(BENCH_TARGETS)

# The tiers this build has (scripts/test.sh runs them in its own order).
.PHONY: print-tiers
print-tiers:
	@echo $(CHECK_TARGETS)

clean:
	rm -rf build $(CLEAN_FILES)

-include $(shell find build -name '*.d' 2>/dev/null)
