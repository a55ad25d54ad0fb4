# What runs in a nested L1 (QEMU TCG) besides lkvm: kvm-hold, the idle VM
# that keeps L1's kernel text from being patched by every lkvm run (see
# guest/l1/kvm-hold.c). Static: L1's initramfs has no libraries.

guest/l1/kvm-hold: guest/l1/kvm-hold.c
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -s -o $@ $<

CLEAN_FILES += guest/l1/kvm-hold
