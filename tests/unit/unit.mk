# Tier 1 unit tests (cmocka). Every tests/unit/test_*.c is one test binary
# linked against liblkvm.a, so a new test needs no change here.
#
#   make unit-tests     build them
#   make check-unit     build and run them all; fails if any fails
#
# They use the VMM's CFLAGS/LDFLAGS, so SANITIZE=1 covers them too (after a
# `make clean`, since the objects must all be built the same way).

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:.c=)

.PHONY: unit-tests check-unit
unit-tests: $(UNIT_BINS)

# A static pattern rule: it keeps make's built-in "%: %.c" away and the
# objects from being deleted as intermediates.
$(UNIT_BINS): %: %.o liblkvm.a
	$(CC) $(LDFLAGS) -o $@ $< liblkvm.a -lcmocka $(LDLIBS)

# Run every binary even after a failure, so one report shows them all.
check-unit: $(UNIT_BINS)
	@failed=; for t in $(UNIT_BINS); do \
		echo "== $$t"; ./$$t || failed="$$failed $$t"; done; \
	if [ -n "$$failed" ]; then echo "unit tests FAILED:$$failed"; \
		exit 1; fi; echo "unit tests: all $(words $(UNIT_BINS)) passed"

CHECK_TARGETS	+= check-unit
CLEAN_FILES	+= $(UNIT_BINS) $(UNIT_SRCS:.c=.o)
