# The arm64 board's pure parts (arm/*.c: the Image header, the device
# tree), their unit tests cross-built for arm64 and run under qemu-user,
# so their byte order, alignment and type sizes are arm64's own. The same
# tests also run natively in the unit tier.
#
#   make check-unit-arm64
#
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user-static
# (scripts/install-deps.sh) and the private sysroot that
# scripts/arm64-sysroot.sh fetches; binfmt_misc is not set up on these
# machines, so qemu-aarch64-static is named explicitly.

ARM64_CC	:= aarch64-linux-gnu-gcc
ARM64_BUILD	:= build/arm64-unit
ARM64_SYSROOT	:= $(or $(LKVM_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/lkvm)/arm64-sysroot
ARM64_LIBDIR	 = $(ARM64_SYSROOT)/usr/lib/aarch64-linux-gnu
ARM64_CFLAGS	 = -O2 -g -std=gnu11 -Wall -Wextra -Werror \
		   -Wno-unused-parameter -D_GNU_SOURCE -Iinclude \
		   -isystem $(ARM64_SYSROOT)/usr/include -MMD -MP
# cmocka comes only as a shared library: the tests find it by rpath, and
# qemu-user finds arm64's libc under -L.
ARM64_LDFLAGS	 = -L$(ARM64_LIBDIR) -Wl,-rpath,$(ARM64_LIBDIR)
ARM64_RUNNER	:= qemu-aarch64-static -L /usr/aarch64-linux-gnu

# the parts that need no VM; arch.c, cpu.c and gic.c drive KVM
ARM64_LIB_SRCS	:= arm/board.c arm/fdt.c arm/image.c core/log.c
ARM64_LIB_OBJS	:= $(addprefix $(ARM64_BUILD)/,$(ARM64_LIB_SRCS:.c=.o))
ARM64_UNIT_SRCS	:= $(sort $(wildcard tests/unit/test_arm_*.c))
ARM64_UNIT_BINS	:= $(addprefix $(ARM64_BUILD)/,$(ARM64_UNIT_SRCS:.c=))

# Made or checked once per make run (a no-op when it is up to date).
.PHONY: arm64-sysroot
arm64-sysroot:
	scripts/arm64-sysroot.sh >/dev/null

$(ARM64_BUILD)/%.o: %.c | arm64-sysroot
	@mkdir -p $(dir $@)
	$(ARM64_CC) $(ARM64_CFLAGS) -c -o $@ $<

# An archive, so that each test takes only the objects it calls.
$(ARM64_BUILD)/libarm.a: $(ARM64_LIB_OBJS)
	aarch64-linux-gnu-ar rcs $@ $^

$(ARM64_UNIT_BINS): %: %.o $(ARM64_BUILD)/libarm.a
	$(ARM64_CC) $(ARM64_LDFLAGS) -o $@ $^ -l:libfdt.a -lcmocka

.PHONY: unit-tests-arm64 check-unit-arm64
unit-tests-arm64: $(ARM64_UNIT_BINS)

check-unit-arm64: $(ARM64_UNIT_BINS)
	$(TIER) run --cmocka --runner "$(ARM64_RUNNER)" unit-arm64 \
		$(ARM64_UNIT_BINS)

# Sanitizers under qemu-user add nothing the native unit tier's do not.
ifneq ($(SANITIZE),1)
CHECK_TARGETS	+= check-unit-arm64
endif
