# Tier 1 unit tests (cmocka). Every tests/unit/test_*.c is one test binary
# linked against liblkvm.a, so a new test needs no change here.
#
#   make unit-tests     build them
#   make check-unit     build and run them all; fails if any fails
#
# They are built in $(BUILD) with the VMM's flags, so SANITIZE=1 covers them.

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(addprefix $(BUILD)/,$(UNIT_SRCS:.c=))

.PHONY: unit-tests check-unit
unit-tests: $(UNIT_BINS)

# A static pattern rule keeps make's built-in "%: %.c" away and the objects
# from being deleted as intermediates.
$(UNIT_BINS): %: %.o $(LIBLKVM)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBLKVM) -lcmocka $(LDLIBS)

# Drives virtio-net from a host thread, as the ring benchmarks do.
$(BUILD)/tests/unit/test_net_tx: $(BUILD)/tests/bench/ring_driver.o

# Run every binary even after a failure, so one report shows them all.
check-unit: $(UNIT_BINS)
	@failed=; for t in $(UNIT_BINS); do \
		echo "== $$t"; ./$$t || failed="$$failed $$t"; done; \
	if [ -n "$$failed" ]; then echo "unit tests FAILED:$$failed"; \
		exit 1; fi; echo "unit tests: all $(words $(UNIT_BINS)) passed"

CHECK_TARGETS	+= check-unit
