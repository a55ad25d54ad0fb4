#!/bin/sh
# The L2 side of the nested virtio-blk tests (tests/nested/test_blk.py): run
# by guest/init inside a Linux guest of lkvm through
# lkvm.run=/blk/blk-check.sh,MODE,..., it exercises the disks lkvm gave it
# and prints what the tests assert on as "@@FACT key=value" lines. The L1
# side (tests/nested/blk-job.sh) sets up the images and checks their bytes
# once lkvm is gone.
#
#   blk-check.sh io TRANSPORT FS   the per-transport checks; FS is mkfs (make
#                                  an ext2 file system on the 32 MiB disk),
#                                  verify (mount it again, read the files
#                                  back), none (no third disk) or quick
#                                  (one disk, pattern I/O only)
#   blk-check.sh fio               fio verify on the data disk (fio from the
#                                  read-only tool disk), then a flushed write
#                                  and the marker after which L1 kills lkvm
#   blk-check.sh fioqd             fio randwrite + crc32c verify at iodepth 1
#                                  and 32 on the data disk, then power off
#
# The disks are told apart by size, not by name: 64 MiB data disk (rw, empty
# at start), 1 MiB disk holding /blk/two.bin (ro), 32 MiB file-system disk,
# and for fio the read-only ext2 image with fio and its libraries.
# /blk/pat.bin and /blk/two.bin are 1 MiB of pseudo-random bytes, the same
# files L1 compares the images with.

mode=$1
shift

MIB=1048576
DATA_SECTORS=131072	# 64 MiB
TWO_SECTORS=2048	# 1 MiB
FS_SECTORS=65536	# 32 MiB

fact() { echo "@@FACT $1=$2"; }
up() { cut -d' ' -f1 /proc/uptime; }

# Uptime when we start: what the boot took.
fact t_start "$(up)"

# The one /dev/vdX of a given size in 512-byte sectors (or with ro set).
disk_by_size() {
	for d in /sys/block/vd*; do
		[ "$(cat "$d/size")" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

disk_ro() {
	for d in /sys/block/vd*; do
		[ "$(cat "$d/ro")" = 1 ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# Modules are loaded before we run, but give device probing a moment.
wait_disks() {
	i=0
	while [ "$i" -lt 50 ]; do
		set -- "$1" /sys/block/vd*
		[ -e "$2" ] && [ $(($# - 1)) -ge "$1" ] && break
		set -- "$1"
		sleep 0.1
		i=$((i + 1))
	done
	fact disks "$(cd /sys/block && echo vd*)"
}

# same FILE1 FILE2 -> 1/0, without cmp's noise on the console.
same() { cmp -s "$1" "$2" && echo 1 || echo 0; }

# Read SIZE MiB at MiB offset OFF of a device with O_DIRECT (no page cache).
read_direct() { dd if="$1" bs=$MIB skip="$2" count="$3" iflag=direct 2>/dev/null; }

# The trouble virtio-blk can cause the kernel, from dmesg. The XSAVE
# warning of early boot (fpu/xstate.c) is left to test_boot.py's checks.
dmesg_facts() {
	dmesg >/tmp/dmesg
	fact io_errors "$(grep -c 'I/O error\|blk_update_request\|critical medium\|virtio_blk.*error' /tmp/dmesg)"
	fact kernel_warnings "$(grep 'WARNING:\|BUG:\|Oops' /tmp/dmesg | grep -vc 'fpu/xstate')"
	fact xstate_warnings "$(grep -c 'WARNING:.*fpu/xstate' /tmp/dmesg)"
	grep -i 'I/O error\|blk_update_request\|WARNING:\|BUG:\|Oops\|vd[a-z]' /tmp/dmesg |
		head -n 20 | sed 's/^/@@DMESG /'
}

finish() {
	dmesg_facts
	fact uptime "$(up)"
	fact "done" 1
}

do_io() {
	t=$1 fs=$2
	fact transport "$t"
	want=2
	case $fs in mkfs | verify) want=3 ;; quick) want=1 ;; esac
	wait_disks "$want"
	data=$(disk_by_size $DATA_SECTORS)
	two=$(disk_by_size $TWO_SECTORS)
	fact data_dev "$data"
	fact two_dev "$two"
	[ -n "$data" ] || { fact "done" 0; exit 10; }
	fact data_ro "$(cat /sys/block/"${data#/dev/}"/ro)"
	fact discard_max_bytes "$(cat /sys/block/"${data#/dev/}"/queue/discard_max_bytes)"
	fact write_zeroes_max_bytes "$(cat /sys/block/"${data#/dev/}"/queue/write_zeroes_max_bytes)"

	# A known 1 MiB at 1 MiB, written and read back past the page cache;
	# L1 finds it in the image afterwards.
	dd if=/blk/pat.bin of="$data" bs=$MIB seek=1 oflag=direct conv=notrunc,fsync 2>/tmp/err
	fact pattern_write_rc $?
	read_direct "$data" 1 1 >/tmp/back
	fact pattern_readback "$(same /tmp/back /blk/pat.bin)"
	# And once more through the page cache, after dropping it.
	sync
	echo 3 >/proc/sys/vm/drop_caches
	dd if="$data" bs=$MIB skip=1 count=1 2>/dev/null >/tmp/back
	fact pattern_readback_cached "$(same /tmp/back /blk/pat.bin)"
	fact t_pattern "$(up)"
	if [ "$fs" = quick ]; then
		finish
		exit 0
	fi

	# The second disk: other contents, read-only.
	fact two_ro "$(cat /sys/block/"${two#/dev/}"/ro)"
	read_direct "$two" 0 1 >/tmp/back
	fact two_content "$(same /tmp/back /blk/two.bin)"
	fact two_differs "$(cmp -s /blk/two.bin /blk/pat.bin && echo 0 || echo 1)"
	dd if=/blk/pat.bin of="$two" bs=4096 count=1 oflag=direct conv=notrunc 2>/tmp/err
	fact two_write_rc $?
	fact two_write_error "$(tail -n 1 /tmp/err)"
	echo 3 >/proc/sys/vm/drop_caches
	read_direct "$two" 0 1 >/tmp/back
	fact two_content_after "$(same /tmp/back /blk/two.bin)"

	fact t_two "$(up)"

	# Discard: 16 MiB at 16 MiB, written then discarded; 2 MiB at 40 MiB
	# kept as the control that writes do allocate. L1 measures the image.
	# (Every MiB moved costs ~0.3 s here: one dd per range, few processes.)
	cat /blk/pat.bin /blk/pat.bin /blk/pat.bin /blk/pat.bin >/tmp/f4
	cat /tmp/f4 /tmp/f4 /tmp/f4 /tmp/f4 >/tmp/f16
	dd if=/tmp/f16 of="$data" bs=$MIB seek=16 oflag=direct conv=notrunc 2>/dev/null
	rc=$?
	cat /blk/two.bin /blk/two.bin >/tmp/f2
	dd if=/tmp/f2 of="$data" bs=$MIB seek=40 oflag=direct conv=notrunc 2>/dev/null || rc=$?
	rm -f /tmp/f2 /tmp/f4 /tmp/f16
	fact discard_fill_rc $rc
	blkdiscard -o $((16 * MIB)) -l $((16 * MIB)) "$data" 2>/tmp/err
	fact discard_rc $?
	fact discard_error "$(tail -n 1 /tmp/err)"
	# (L1 checks that the range is zeros in the image.)

	fact t_discard "$(up)"

	case $fs in
	mkfs)
		fsd=$(disk_by_size $FS_SECTORS)
		fact fs_dev "$fsd"
		mke2fs -q -F -L lkvmblk "$fsd" >/tmp/err 2>&1
		fact mkfs_rc $?
		mount -t ext2 "$fsd" /mnt 2>>/tmp/err
		fact mount_rc $?
		echo "lkvm virtio-blk fs written over $t" >/mnt/hello.txt
		cp /blk/pat.bin /mnt/data.bin
		mkdir /mnt/dir && cp /blk/two.bin /mnt/dir/two.bin
		sync
		fact fs_write_ok "$(same /mnt/data.bin /blk/pat.bin)"
		fstrim -v /mnt >/tmp/trim 2>&1
		fact fstrim_rc $?
		fact fstrim_out "$(tail -n 1 /tmp/trim)"
		umount /mnt
		fact umount_rc $?
		fact fs_error "$(tail -n 1 /tmp/err)"
		;;
	verify)
		fsd=$(disk_by_size $FS_SECTORS)
		fact fs_dev "$fsd"
		mount -t ext2 "$fsd" /mnt 2>/tmp/err
		fact mount_rc $?
		fact fs_hello "$(cat /mnt/hello.txt 2>/dev/null)"
		fact fs_data_ok "$(same /mnt/data.bin /blk/pat.bin)"
		fact fs_two_ok "$(same /mnt/dir/two.bin /blk/two.bin)"
		umount /mnt
		fact umount_rc $?
		fact fs_error "$(tail -n 1 /tmp/err)"
		;;
	esac

	finish
	exit 0
}

# fio from the read-only tool disk (mounted at /opt) on $data, with crc32c
# verify: run_fio NAME [fio options...]; facts NAME_version, NAME_engine,
# NAME_rc, NAME_err, NAME_issued (reads,writes), NAME_verify_errors,
# NAME_write_iops, NAME_read_iops, NAME_write_bw.
run_fio() {
	run=$1
	shift
	# fio and its libraries, run through their own dynamic loader.
	fio="/opt/ld.so --library-path /opt/lib /opt/fio"
	for engine in libaio io_uring psync; do
		$fio --name=verify --filename="$data" --direct=1 \
			--ioengine=$engine --verify=crc32c --do_verify=1 \
			--randrepeat=1 "$@" >/tmp/fio.out 2>&1
		rc=$?
		# An engine the guest cannot use fails before any I/O.
		grep -q 'engine.*not loadable\|failed to load engine\|Operation not supported\|Function not implemented' /tmp/fio.out || break
	done
	sed "s/^/fio $run: /" /tmp/fio.out
	fact "${run}_version" "$(grep -m1 '^fio-' /tmp/fio.out)"
	fact "${run}_engine" "$engine"
	fact "${run}_rc" "$rc"
	fact "${run}_err" "$(sed -n 's/.*err= *\([0-9-]*\).*/\1/p' /tmp/fio.out | head -n 1)"
	# reads,writes issued: the verify pass reads back all it wrote.
	fact "${run}_issued" "$(sed -n 's/.*issued rwts: total=\([0-9]*,[0-9]*\).*/\1/p' /tmp/fio.out | head -n 1)"
	fact "${run}_verify_errors" "$(grep -ci 'verify failed\|bad magic\|bad header\|verify: bad' /tmp/fio.out)"
	fact "${run}_write_iops" "$(sed -n 's/^ *write: IOPS=\([^,]*\),.*/\1/p' /tmp/fio.out | head -n 1)"
	fact "${run}_read_iops" "$(sed -n 's/^ *read: IOPS=\([^,]*\),.*/\1/p' /tmp/fio.out | head -n 1)"
	fact "${run}_write_bw" "$(sed -n 's/^ *write: IOPS=[^,]*, BW=\([^ ]*\).*/\1/p' /tmp/fio.out | head -n 1)"
}

# The read-only tool disk (fio and its libraries) at /opt; false if none.
mount_tools() {
	tool=$(disk_ro)
	fact tool_dev "$tool"
	mkdir -p /opt
	[ -n "$tool" ] && mount -t ext2 -o ro "$tool" /opt 2>/tmp/err
}

do_fioqd() {
	wait_disks 2
	data=$(disk_by_size $DATA_SECTORS)
	fact data_dev "$data"
	[ -n "$data" ] || { fact "done" 0; exit 10; }
	if mount_tools; then
		run_fio qd1 --rw=randwrite --bs=4k --iodepth=1 --size=2M
		run_fio qd32 --rw=randwrite --bs=4k --iodepth=32 --size=8M \
			--offset=8M
		umount /opt
	else
		fact qd1_rc "no-tool-disk: $(tail -n 1 /tmp/err 2>/dev/null)"
	fi
	finish
	exit 0
}

do_fio() {
	wait_disks 2
	data=$(disk_by_size $DATA_SECTORS)
	fact data_dev "$data"
	[ -n "$data" ] || { fact "done" 0; exit 10; }
	if mount_tools; then
		run_fio fio --rw=randwrite --bs=4k --iodepth=32 --size=16M
		fact t_fio "$(up)"
		umount /opt
	else
		fact fio_rc "no-tool-disk: $(tail -n 1 /tmp/err 2>/dev/null)"
	fi

	# Flushed writes, then the marker: L1 kills lkvm with SIGKILL as soon
	# as it sees it, and must find both in the image. One is O_DIRECT
	# (plus fsync), the other goes through the page cache and is pushed
	# out by fsync (writes, then a FLUSH request).
	dd if=/blk/pat.bin of="$data" bs=$MIB seek=40 oflag=direct conv=notrunc,fsync 2>/dev/null
	fact kill_direct_rc $?
	dd if=/blk/two.bin of="$data" bs=$MIB seek=42 conv=notrunc,fsync 2>/dev/null
	fact kill_fsync_rc $?
	dmesg_facts
	fact uptime "$(up)"
	echo "BLK-KILL-NOW"
	# Not reached if L1 does its job; lkvm's --timeout ends it otherwise.
	sleep 600
	exit 11
}

case $mode in
io) do_io "$@" ;;
fio) do_fio "$@" ;;
fioqd) do_fioqd "$@" ;;
*) echo "blk-check.sh: unknown mode '$mode'" >&2; exit 12 ;;
esac
