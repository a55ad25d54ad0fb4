# Peer guests: guest-kit measurements rebuilt for other VMMs, to compare
# lkvm with them on the same machine. Not part of lkvm's own build: run
#   make -f guest/kit/peer/peer.mk            (from the top of the tree)
# or hook it into the top Makefile with, after its guest/*/*.mk include:
#   -include guest/kit/peer/peer.mk
#
# kick_kvmtool.bin      guest/kit/kick.c for kvmtool: a flat binary that
#                       kvmtool boots in real mode at 0x1000:0000; notifies
#                       virtio-blk queue 0 PEER_KICKS times (default 100000)
#                       through the BAR the device's transport implies.
# kick_kvmtool_pio.bin  the same, but with a modern device the doorbell is
#                       written with outw to BAR0 (kvmtool's PIO ioeventfd)
#                       instead of a 16-bit store to BAR1.
# kick_kvmtool_exit.bin the same as kick_kvmtool.bin with 4-byte doorbell
#                       writes (outl / movl), which kvmtool's 2-byte
#                       ioeventfds do not match: every kick is a vCPU exit
#                       (kvmtool has no --no-ioeventfd).
# quick_kvmtool.bin     guest/kit/quick.S for kvmtool: its first
#                       instructions end the VM, through the i8042 reset;
# quick_kvmtool_tf.bin  the same through a triple fault (QUICK_TRIPLE=1).
#
# Built with the host compiler and the guest kit's flags; objects in
# build/peer. PEER_KICKS=N rebuilds with another count (no cmdline in a
# flat binary).

PEER_DIR	:= guest/kit/peer
PEER_OBJ	:= build/peer
PEER_CC		?= gcc
PEER_OBJCOPY	?= objcopy
PEER_KICKS	?= 100000
PEER_CFLAGS	:= -std=gnu11 -O2 -g -Wall -Wextra -Werror \
		   -Wno-unused-parameter -ffreestanding -fno-builtin \
		   -nostdlib -fno-pic -no-pie -mno-red-zone \
		   -mgeneral-regs-only -fno-stack-protector \
		   -fno-asynchronous-unwind-tables -fno-unwind-tables \
		   -fcf-protection=none -mcmodel=small -m64
PEER_LDFLAGS	:= -nostdlib -static -no-pie -Wl,--build-id=none \
		   -Wl,-T,$(PEER_DIR)/kick_kvmtool.ld -Wl,-z,noexecstack \
		   -Wl,--no-warn-rwx-segments

PEER_BINS	:= $(PEER_DIR)/kick_kvmtool.bin $(PEER_DIR)/kick_kvmtool_pio.bin \
		   $(PEER_DIR)/kick_kvmtool_exit.bin $(PEER_DIR)/quick_kvmtool.bin \
		   $(PEER_DIR)/quick_kvmtool_tf.bin
PEER_DEPS	:= $(PEER_DIR)/kick_kvmtool.c $(PEER_DIR)/kick_kvmtool.S guest/kit/cpu.h guest/kit/paging.h \
		   $(PEER_DIR)/kick_kvmtool.ld $(PEER_DIR)/peer.mk

.PHONY: peer-kit
peer-kit: $(PEER_BINS)

ALL_TARGETS	+= $(PEER_BINS)
CLEAN_FILES	+= $(PEER_BINS)

# $(1): name, $(2): extra -D flags
define peer_kick
$(PEER_OBJ)/$(1).elf: $(PEER_DEPS) $(PEER_OBJ)/kicks.$(PEER_KICKS)
	@mkdir -p $(PEER_OBJ)
	$(PEER_CC) $(PEER_CFLAGS) -DKICKS=$(PEER_KICKS) $(2) -c -o $(PEER_OBJ)/$(1).o $(PEER_DIR)/kick_kvmtool.c
	$(PEER_CC) $(PEER_CFLAGS) -c -o $(PEER_OBJ)/$(1).S.o $(PEER_DIR)/kick_kvmtool.S
	$(PEER_CC) $(PEER_CFLAGS) $(PEER_LDFLAGS) -o $$@ $(PEER_OBJ)/$(1).S.o $(PEER_OBJ)/$(1).o

$(PEER_DIR)/$(1).bin: $(PEER_OBJ)/$(1).elf
	$(PEER_OBJCOPY) -O binary $$< $$@
endef

$(eval $(call peer_kick,kick_kvmtool,))
$(eval $(call peer_kick,kick_kvmtool_pio,-DNOTIFY_PIO=1))
$(eval $(call peer_kick,kick_kvmtool_exit,-DNOTIFY_EXIT=1))

# $(1): name, $(2): extra -D flags; assembly only, no kick count.
define peer_quick
$(PEER_OBJ)/$(1).elf: $(PEER_DIR)/quick_kvmtool.S $(PEER_DIR)/kick_kvmtool.ld $(PEER_DIR)/peer.mk
	@mkdir -p $(PEER_OBJ)
	$(PEER_CC) $(PEER_CFLAGS) $(2) -c -o $(PEER_OBJ)/$(1).o $(PEER_DIR)/quick_kvmtool.S
	$(PEER_CC) $(PEER_CFLAGS) $(PEER_LDFLAGS) -o $$@ $(PEER_OBJ)/$(1).o

$(PEER_DIR)/$(1).bin: $(PEER_OBJ)/$(1).elf
	$(PEER_OBJCOPY) -O binary $$< $$@
endef

$(eval $(call peer_quick,quick_kvmtool,))
$(eval $(call peer_quick,quick_kvmtool_tf,-DTRIPLE_FAULT=1))

# A stamp per kick count, so that changing PEER_KICKS rebuilds.
$(PEER_OBJ)/kicks.$(PEER_KICKS):
	@mkdir -p $(PEER_OBJ)
	@rm -f $(PEER_OBJ)/kicks.*
	@touch $@
