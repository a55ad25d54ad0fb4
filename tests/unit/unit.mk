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

# Drive virtio-net and virtio-blk from a host thread, as the ring
# benchmarks do (blk_rig.c: the blk device over an image).
$(BUILD)/tests/unit/test_net_tx $(BUILD)/tests/unit/test_net_rx \
$(BUILD)/tests/unit/test_poll $(BUILD)/tests/unit/test_blk \
$(BUILD)/tests/unit/test_blk_reset $(BUILD)/tests/unit/test_blk_qcow2: \
	$(BUILD)/tests/bench/ring_driver.o $(BUILD)/tests/unit/fake_vm.o
$(BUILD)/tests/unit/test_poll $(BUILD)/tests/unit/test_blk \
$(BUILD)/tests/unit/test_blk_reset $(BUILD)/tests/unit/test_blk_qcow2: \
	$(BUILD)/tests/unit/blk_rig.o
$(BUILD)/tests/unit/test_net_tx $(BUILD)/tests/unit/test_net_rx: \
	$(BUILD)/tests/unit/net_rig.o
# The qcow2 tests' images and their helpers (qcow2_rig.c).
$(BUILD)/tests/unit/test_qcow2 $(BUILD)/tests/unit/test_qcow2_check \
$(BUILD)/tests/unit/test_qcow2_crash: \
	$(BUILD)/tests/unit/qcow2_rig.o
# Devices on a VM with no KVM under it (tests/unit/fake_vm.c).
$(BUILD)/tests/unit/test_virtio_transport $(BUILD)/tests/unit/test_rtc \
$(BUILD)/tests/unit/test_console $(BUILD)/tests/unit/test_acpi_pm \
$(BUILD)/tests/unit/test_boot_profile $(BUILD)/tests/unit/test_control: \
	$(BUILD)/tests/unit/fake_vm.o
# The arm64 board's pure parts, tested on any host (arm/ is not in an x86
# liblkvm.a).
$(BUILD)/tests/unit/test_arm_image: $(BUILD)/arm/image.o
$(BUILD)/tests/unit/test_arm_board: $(BUILD)/arm/board.o
$(BUILD)/tests/unit/test_arm_fdt: $(BUILD)/arm/fdt.o $(BUILD)/arm/board.o
$(BUILD)/tests/unit/test_arm_fdt: LDLIBS += -lfdt

# Every binary runs even after a failure, so one report shows them all.
check-unit: $(UNIT_BINS)
	$(TIER_RUN) --cmocka unit $(UNIT_BINS)

CHECK_TARGETS	+= check-unit
