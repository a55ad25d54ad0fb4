#!/bin/sh
# The L1 side of the nested virtio-blk tests (tests/nested/test_blk.py): one
# L2 boot per call. It makes the disk images in L1's /tmp (tmpfs, which
# punches holes), runs lkvm with them, and once lkvm is gone checks the
# images' bytes and allocation with busybox. Its facts are "@@FACT l1_*"
# lines; the L2 guest's (tests/nested/blk-check.sh) come through lkvm's
# console in the same job block.
#
#   blk-job.sh NAME io TRANSPORT FS TIMEOUT [lkvm options...]
#   blk-job.sh NAME fio TRANSPORT - TIMEOUT [lkvm options...]
#   blk-job.sh NAME fioqd TRANSPORT DISKOPTS TIMEOUT [lkvm options...]
#
# FS: mkfs (a fresh 32 MiB third disk, /tmp/blk-fs.img), verify (the same
# image again, from an earlier job), none, or quick (the data disk alone,
# pattern I/O only). The fio job boots, waits for the
# guest's BLK-KILL-NOW marker and kills lkvm with SIGKILL. DISKOPTS: the
# fioqd data disk's own options (say aio=sync), or -, or qcow2: the data
# disk is then /l1/top.qcow2 on its backing file /l1/base.img.
#
# Files (packed into L1 by test_blk.py): /l2/vmlinux, /l2/initrd,
# /l2/fio.img (optional), /l1/pat.bin, /l1/two.bin (1 MiB each).

name=$1 mode=$2 t=$3 fs=$4 limit=$5
shift 5

MIB=1048576
W=/tmp/blk-$name
FS_IMG=/tmp/blk-fs.img
PARAMS="console=ttyS0 quiet panic=-1"

fact() { echo "@@FACT $1=$2"; }
same() { cmp -s "$1" "$2" && echo 1 || echo 0; }
# region IMG OFF_MIB LEN_MIB: those bytes of an image on stdout.
region() { dd if="$1" bs=$MIB skip="$2" count="$3" 2>/dev/null; }
# Allocated KiB of a file: du counts blocks, not the apparent size.
alloc_kb() { du -k "$1" | cut -f1; }
md5() { md5sum | cut -d' ' -f1; }

rm -rf "$W"
mkdir -p "$W"
data=$W/data.img
# 64 MiB, sparse: nothing allocated until the guest writes.
dd if=/dev/null of="$data" bs=$MIB seek=64 2>/dev/null
fact l1_data_alloc_kb_before "$(alloc_kb "$data")"

run_io() {
	cp /l1/two.bin "$W/two.img"
	disks="-d $data -d $W/two.img,ro"
	case $fs in
	quick) disks="-d $data" ;;
	mkfs)
		rm -f "$FS_IMG"
		dd if=/dev/null of="$FS_IMG" bs=$MIB seek=32 2>/dev/null
		disks="$disks -d $FS_IMG"
		;;
	verify)
		fact l1_fs_image "$([ -f "$FS_IMG" ] && echo 1 || echo 0)"
		disks="$disks -d $FS_IMG"
		;;
	esac
	# shellcheck disable=SC2086
	lkvm run -k /l2/vmlinux -i /l2/initrd -m 256 -c 1 --name "$name" \
		--virtio-transport "$t" --timeout "$limit" \
		--stats "$W/stats.json" $disks "$@" \
		-p "$PARAMS lkvm.run=/blk/blk-check.sh,io,$t,$fs"
	rc=$?
	echo
	fact l1_lkvm_rc $rc
	fact l1_stats "$(tr -d '\n' <"$W/stats.json" 2>/dev/null)"

	# The pattern at 1 MiB.
	region "$data" 1 1 >"$W/r"
	fact l1_pattern_in_image "$(same "$W/r" /l1/pat.bin)"
	fact l1_data_size "$(stat -c %s "$data")"
	[ "$fs" = quick ] && return
	# The read-only disk: not a byte changed.
	fact l1_two_unchanged "$(same "$W/two.img" /l1/two.bin)"
	# Discard: [16, 32) MiB was written, then discarded: it must be zeros
	# and, on tmpfs, unallocated; [40, 42) MiB holds 2 copies of two.bin.
	fact l1_discarded_md5 "$(region "$data" 16 16 | md5)"
	fact l1_zeros_md5 "$(dd if=/dev/zero bs=$MIB count=16 2>/dev/null | md5)"
	fact l1_control_md5 "$(region "$data" 40 2 | md5)"
	fact l1_control_expected_md5 "$(cat /l1/two.bin /l1/two.bin | md5)"
	fact l1_data_alloc_kb "$(alloc_kb "$data")"
	case $fs in
	mkfs | verify)
		# The ext2 superblock magic 0xef53 at byte 1080.
		fact l1_fs_magic "$(od -An -tx1 -j 1080 -N 2 "$FS_IMG" | tr -d ' ')"
		fact l1_fs_alloc_kb "$(alloc_kb "$FS_IMG")"
		;;
	esac
}

run_fio() {
	disks="-d $data"
	[ -f /l2/fio.img ] && disks="$disks -d /l2/fio.img,ro"
	out=$W/console
	# In the background, console to a file: we kill it at the marker.
	# shellcheck disable=SC2086
	lkvm run -k /l2/vmlinux -i /l2/initrd -m 256 -c 1 --name "$name" \
		--virtio-transport "$t" --timeout "$limit" $disks "$@" \
		-p "$PARAMS lkvm.run=/blk/blk-check.sh,fio" >"$out" 2>&1 </dev/null &
	pid=$!
	seen=0 i=0
	while [ $i -lt $((limit * 20)) ]; do
		if grep -q BLK-KILL-NOW "$out"; then
			seen=1
			break
		fi
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	kill -9 $pid 2>/dev/null
	wait $pid
	rc=$?
	cat "$out"
	echo
	fact l1_marker_seen $seen
	fact l1_lkvm_rc $rc
	fact l1_polls $i
	region "$data" 40 1 >"$W/r"
	fact l1_kill_direct_in_image "$(same "$W/r" /l1/pat.bin)"
	region "$data" 42 1 >"$W/r"
	fact l1_kill_fsync_in_image "$(same "$W/r" /l1/two.bin)"
}

# fio verify at iodepth 1 and 32 (the lkvm options set polling and I/O
# threads); the stats say how the queues were served.
run_fioqd() {
	disks="-d $data"
	if [ "$fs" = qcow2 ]; then
		# a qcow2 overlay on a raw base, both made by qemu-img on the host
		cp /l1/base.img /l1/top.qcow2 "$W/"
		disks="-d $W/top.qcow2"
		fact l1_top_kb_before "$(alloc_kb "$W/top.qcow2")"
	elif [ "$fs" != - ]; then
		disks="$disks,$fs"
	fi
	[ -f /l2/fio.img ] && disks="$disks -d /l2/fio.img,ro"
	# shellcheck disable=SC2086
	lkvm run -k /l2/vmlinux -i /l2/initrd -m 256 -c 1 --name "$name" \
		--virtio-transport "$t" --timeout "$limit" \
		--stats "$W/stats.json" $disks "$@" \
		-p "$PARAMS lkvm.run=/blk/blk-check.sh,fioqd"
	rc=$?
	echo
	fact l1_lkvm_rc $rc
	fact l1_stats "$(tr -d '\n' <"$W/stats.json" 2>/dev/null)"
	if [ "$fs" = qcow2 ]; then
		fact l1_base_unchanged "$(same "$W/base.img" /l1/base.img)"
		fact l1_top_kb "$(alloc_kb "$W/top.qcow2")"
		q=/l1/qemu-img
		if [ -f $q/ld.so ]; then
			$q/ld.so --library-path $q/lib $q/qemu-img check \
				"$W/top.qcow2" >"$W/check" 2>&1
			fact l1_qemu_img_check $?
			tail -n 3 "$W/check"
		fi
	fi
}

case $mode in
io) run_io "$@" ;;
fio) run_fio "$@" ;;
fioqd) run_fioqd "$@" ;;
*) echo "blk-job.sh: unknown mode '$mode'"; exit 2 ;;
esac
fact l1_done 1
