# lkvm - a small, fast KVM hypervisor.
#
#   make            build ./lkvm (and the test guests)
#   make check      run every test tier: unit, guest kit, nested Linux
#   make bench      print benchmark figures
#   make SANITIZE=1 build with ASan + UBSan (same tests must pass)
#
# Sub-parts add themselves through the *.mk fragments included at the end:
# they append to ALL_TARGETS, CHECK_TARGETS, BENCH_TARGETS and CLEAN_FILES.

CC	?= cc
CFLAGS	?= -O2 -g
CFLAGS	+= -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	   -D_GNU_SOURCE -Iinclude -MMD -MP
LDFLAGS	?=
LDLIBS	+= -lpthread

ifeq ($(SANITIZE),1)
CFLAGS	+= -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined
LDFLAGS	+= -fsanitize=address,undefined
endif

ifeq ($(STATIC),1)
LDFLAGS	+= -static
endif

# The VMM proper: every C file in these folders; main.c is the only entry.
LIB_SRCS := $(sort $(wildcard core/*.c hw/*.c virtio/*.c x86/*.c))
LIB_SRCS := $(filter-out core/main.c,$(LIB_SRCS))
LIB_OBJS := $(LIB_SRCS:.c=.o)

ALL_TARGETS	:= lkvm
CHECK_TARGETS	:=
BENCH_TARGETS	:=
CLEAN_FILES	:= lkvm liblkvm.a core/main.o $(LIB_OBJS)

.PHONY: all check bench clean
all: build-all

liblkvm.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

lkvm: core/main.o liblkvm.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

%.o: %.c
	$(CC) $(CFLAGS) -c -o $@ $<

-include $(sort $(wildcard guest/*/*.mk tests/*/*.mk))

.PHONY: build-all
build-all: $(ALL_TARGETS)

check: $(ALL_TARGETS)
	@set -e; for t in $(CHECK_TARGETS); do \
		$(MAKE) --no-print-directory $$t; done

bench: $(ALL_TARGETS) $(BENCH_TARGETS)

clean:
	rm -f $(CLEAN_FILES) $(shell find . -name '*.d' -not -path './.git/*')

-include $(shell find . -name '*.d' -not -path './.git/*' 2>/dev/null)

# A static build for the nested test tier, where L1 has none of our libraries.
lkvm.static: core/main.o liblkvm.a
	$(CC) $(LDFLAGS) -static -o $@ $^ $(LDLIBS)
CLEAN_FILES += lkvm.static
