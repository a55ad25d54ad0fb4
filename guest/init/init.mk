# The static /init for Linux guests (see guest/init/init.c). It is built
# with its own flags: it runs inside the guest, so SANITIZE=1 and the VMM's
# libraries do not apply to it, and it must be static for any initramfs.
GUEST_INIT_CFLAGS := -std=gnu11 -Os -Wall -Wextra -Werror -D_GNU_SOURCE

guest/init/init: guest/init/init.c guest/init/sandbox.c guest/init/sandbox.h
	$(CC) $(GUEST_INIT_CFLAGS) -static -s -o $@ $(filter %.c,$^)

ALL_TARGETS += guest/init/init
CLEAN_FILES += guest/init/init
