#!/bin/sh
# L1 side of tests/arm64/test_arm64.py, run by guest/init inside an arm64
# QEMU TCG guest with a working /dev/kvm (emulated EL2). Boots the arm64
# L2 guest under lkvm once per line of /l1/boots (lkvm options, then
# " | " and words for the L2 command line) and prints "@@L1 exit=N" after
# each. Every address and packet stays in L1: t0 is a tap lkvm creates,
# L1 at 169.254.77.1.
echo "@@L1 kvm=$([ -c /dev/kvm ] && echo yes || echo no)"
printf '#!/bin/sh\nip addr add 169.254.77.1/24 dev "$1" && ip link set "$1" up\n' \
	>/tmp/ifup
chmod +x /tmp/ifup
dd if=/dev/zero of=/tmp/disk.img bs=1M count=8 2>/dev/null
# the list on fd 3: lkvm reads the console's stdin
while IFS='|' read -r opts words <&3; do
	[ -n "$opts" ] || continue
	echo "@@L1 boot=$opts"
	# shellcheck disable=SC2086
	/l1/lkvm run -k /l1/Image -i /l1/l2.gz -m 256 --timeout 120 \
		-d /tmp/disk.img -n tap,tapif=t0,script=/tmp/ifup $opts \
		-p "console=ttyS0 quiet panic=-1 $words"
	echo "@@L1 exit=$?"
	if [ -e /tmp/lkvm.dtb ]; then
		echo "@@L1 dtb=$(base64 -w0 /tmp/lkvm.dtb)"
		rm -f /tmp/lkvm.dtb
	fi
done 3</l1/boots
