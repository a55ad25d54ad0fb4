# Guest kit: freestanding 64-bit test guests that lkvm boots via the PVH
# ELF note (guest/kit/<name>.elf), plus a raw real-mode firmware image.
# Built with the host compiler but none of the VMM's flags (SANITIZE=1 does
# not apply to code that runs inside the guest), objects in build/kit.

KIT_DIR		:= guest/kit
KIT_OBJ		:= build/kit
KIT_CC		?= gcc
KIT_CFLAGS	:= -std=gnu11 -O2 -g -Wall -Wextra -Werror \
		   -Wno-unused-parameter -ffreestanding -fno-builtin \
		   -nostdlib -fno-pic -no-pie -mno-red-zone \
		   -mgeneral-regs-only -fno-stack-protector \
		   -fno-asynchronous-unwind-tables -fno-unwind-tables \
		   -fcf-protection=none -mcmodel=small -m64 -MMD -MP
KIT_LDFLAGS	:= -nostdlib -static -no-pie -Wl,--build-id=none \
		   -Wl,-T,$(KIT_DIR)/kit.ld -Wl,-z,noexecstack \
		   -Wl,--no-warn-rwx-segments

KIT_TESTS	:= exit hang poweroff smp tables rtc selftest fault timer tsc pci kick spew \
		   count
# Guests that drive virtio devices link the kit's virtio driver too.
KIT_VIRTIO_TESTS := blk blkhdr hostile hostile_pci reqbench net netbench netctrl crashdisk \
		    rng hvc balloon p9
KIT_TESTS	+= $(KIT_VIRTIO_TESTS)
KIT_S_OBJS	:= $(addprefix $(KIT_OBJ)/,start.o trampoline.o)
KIT_C_OBJS	:= $(addprefix $(KIT_OBJ)/,kit.o acpi.o ap.o)
KIT_RT_OBJS	:= $(KIT_S_OBJS) $(KIT_C_OBJS)
KIT_ELFS	:= $(addprefix $(KIT_DIR)/,$(addsuffix .elf,$(KIT_TESTS)))
KIT_TEST_OBJS	:= $(addprefix $(KIT_OBJ)/,$(addsuffix .o,$(KIT_TESTS)))
KIT_FIRMWARE	:= $(KIT_DIR)/firmware.bin
KIT_VIRTIO_OBJ	:= $(KIT_OBJ)/virtio.o $(KIT_OBJ)/virtio_pci.o

# quick.elf stands alone (no runtime): the boot benchmark's guest.
KIT_QUICK	:= $(KIT_DIR)/quick.elf

ALL_TARGETS	+= $(KIT_ELFS) $(KIT_FIRMWARE) $(KIT_QUICK)
CLEAN_FILES	+= $(KIT_ELFS) $(KIT_FIRMWARE) $(KIT_QUICK)

.PHONY: guest-kit
guest-kit: $(KIT_ELFS) $(KIT_FIRMWARE) $(KIT_QUICK)

# Static pattern rules: explicit about which sources use the kit's flags.
$(KIT_C_OBJS) $(KIT_TEST_OBJS) $(KIT_VIRTIO_OBJ): $(KIT_OBJ)/%.o: $(KIT_DIR)/%.c $(KIT_DIR)/kit.mk
	@mkdir -p $(KIT_OBJ)
	$(KIT_CC) $(KIT_CFLAGS) -c -o $@ $<

$(KIT_S_OBJS): $(KIT_OBJ)/%.o: $(KIT_DIR)/%.S $(KIT_DIR)/kit.mk
	@mkdir -p $(KIT_OBJ)
	$(KIT_CC) $(KIT_CFLAGS) -c -o $@ $<

$(KIT_ELFS): $(KIT_DIR)/%.elf: $(KIT_OBJ)/%.o $(KIT_RT_OBJS) $(KIT_DIR)/kit.ld
	$(KIT_CC) $(KIT_CFLAGS) $(KIT_LDFLAGS) -o $@ $(filter %.o,$^)

$(addprefix $(KIT_DIR)/,$(addsuffix .elf,$(KIT_VIRTIO_TESTS))): $(KIT_VIRTIO_OBJ)

$(KIT_QUICK): $(KIT_DIR)/quick.S $(KIT_DIR)/kit.ld $(KIT_DIR)/kit.mk
	@mkdir -p $(KIT_OBJ)
	$(KIT_CC) $(KIT_CFLAGS) -c -o $(KIT_OBJ)/quick.o $<
	$(KIT_CC) $(KIT_CFLAGS) $(KIT_LDFLAGS) -o $@ $(KIT_OBJ)/quick.o

$(KIT_OBJ)/firmware.o: $(KIT_DIR)/firmware.S $(KIT_DIR)/kit.mk
	@mkdir -p $(KIT_OBJ)
	$(KIT_CC) -c -o $@ $<

$(KIT_OBJ)/firmware.elf: $(KIT_OBJ)/firmware.o
	$(LD) -m elf_x86_64 -Ttext=0 -e fw_start --build-id=none -o $@ $<

$(KIT_FIRMWARE): $(KIT_OBJ)/firmware.elf
	objcopy -O binary -j .text $< $@
	@test $$(stat -c %s $@) -eq 65536 || \
		{ echo "$@ is not 64 KiB"; rm -f $@; exit 1; }
