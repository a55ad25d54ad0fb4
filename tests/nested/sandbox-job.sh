#!/bin/sh
# The L1 side of the nested lkvm sandbox tests (tests/nested/test_sandbox.py).
# In L1, "the host" is L1 itself: lkvm sandbox shares L1's / (busybox) and
# the working directory with an L2 of Debian's generic kernel (9p and
# overlayfs as modules in /l2/initrd). Facts are "@@FACT sb_*" lines.
#
#   sandbox-job.sh status   exit status and output of a command, as root
#   sandbox-job.sh user     as an unprivileged caller: owner of new files
#   sandbox-job.sh overlay  writes to the read-only root stay in the guest
#   sandbox-job.sh files    a file-heavy workload over 9p, against L1's own
#   sandbox-job.sh rootdir  lkvm setup NAME; lkvm run -d NAME (9p root), rw, ro
#   sandbox-job.sh doctor   what lkvm says of a missing module, a hidden console
#   sandbox-job.sh balloon  lkvm balloon NAME --inflate 64 against Linux's driver
#   sandbox-job.sh isolation  what a guest reaches of L1 through its shares
#   sandbox-job.sh bench N  lkvm sandbox -- true and lkvm run, N times each
#
# Files: /l2/vmlinux, /l2/initrd, /l1/src.tar (a source tree).

what=$1
K=/l2/vmlinux
I=/l2/initrd
SB="lkvm sandbox -k $K -i $I -m 256 --timeout 120"

fact() { echo "@@FACT sb_$1=$2"; }

status_job() {
	mkdir -p /tmp/sb-status && cd /tmp/sb-status || exit 1
	out=$($SB -- sh -c 'uname -r; nproc; cat /proc/cmdline; pwd; exit 7')
	fact status_rc $?
	fact release "$(echo "$out" | sed -n 1p)"
	fact nproc "$(echo "$out" | sed -n 2p)"
	fact guest_cmdline_has_loglevel \
		"$(echo "$out" | sed -n 3p | grep -c 'loglevel=1')"
	fact pwd "$(echo "$out" | sed -n 4p)"
	fact l1_release "$(uname -r)"
	# a true command is status 0; a missing one is the shell's 127; -v
	# says that Landlock (ABI 2 in Debian 12's 6.1) confines the sandbox
	err=$($SB -v -- true 2>&1 >/dev/null)
	fact true_rc $?
	fact landlock "$(echo "$err" | sed -n 's/.*landlock: ABI \([0-9]*\):.*/\1/p')"
	$SB -- /no/such/command
	fact missing_rc $?
}

user_job() {
	grep -q '^tester:' /etc/passwd 2>/dev/null ||
		echo 'tester:x:1000:1000::/tmp:/bin/sh' >>/etc/passwd
	chmod 666 /dev/kvm
	mkdir -p /tmp/sb-user && chown 1000:1000 /tmp/sb-user
	cd /tmp/sb-user || exit 1
	out=$(su tester -s /bin/sh -c "$SB --virtio-transport mmio -- sh -c 'id -u; id -g; echo made >new.txt; mkdir sub; echo deep >sub/f'")
	fact user_rc $?
	fact user_ids "$(echo $out)"
	fact user_file "$(cat /tmp/sb-user/new.txt 2>/dev/null)"
	fact user_owner "$(stat -c %u:%g /tmp/sb-user/new.txt 2>/dev/null)"
	fact user_dir_owner "$(stat -c %u:%g /tmp/sb-user/sub 2>/dev/null)"
	fact user_deep "$(cat /tmp/sb-user/sub/f 2>/dev/null)"
}

overlay_job() {
	mkdir -p /tmp/sb-ov && cd /tmp/sb-ov || exit 1
	echo host >/tmp/sb-ov-outside
	out=$($SB --virtio-transport pci-legacy -- sh -c 'echo guest >/etc/sb-marker && cat /etc/sb-marker;
		rm -f /bin/busybox.x; echo changed >/tmp/sb-ov-outside;
		rm /l1/src.tar && echo removed; ls /l1/src.tar 2>&1 | grep -c "No such"')
	fact overlay_rc $?
	fact overlay_guest_read "$(echo "$out" | sed -n 1p)"
	fact overlay_guest_removed "$(echo "$out" | sed -n 2p)"
	fact overlay_guest_gone "$(echo "$out" | sed -n 3p)"
	fact overlay_host_marker "$([ -e /etc/sb-marker ] && echo 1 || echo 0)"
	fact overlay_host_tar "$([ -e /l1/src.tar ] && echo 1 || echo 0)"
	# /tmp in the guest is its own tmpfs, not the host's
	fact overlay_host_tmp "$(cat /tmp/sb-ov-outside)"
}

# The workload: unpack, checksum every file, rename and delete half.
WORKLOAD='set -e
tar xf /l1/src.tar
find src -type f | sort >list
xargs sha256sum <list >sums
n=0
for f in $(cat list); do
	n=$((n + 1))
	case $((n % 4)) in
	0) mv "$f" "$f.renamed" ;;
	1) rm "$f" ;;
	esac
done
find src | sort >after
find src -type f | sort | xargs sha256sum >sums-after
ls -la src | wc -l >count'

files_job() {
	rm -rf /tmp/sb-files-host /tmp/sb-files-guest
	mkdir -p /tmp/sb-files-host /tmp/sb-files-guest
	(cd /tmp/sb-files-host && sh -c "$WORKLOAD")
	fact files_host_rc $?
	cd /tmp/sb-files-guest || exit 1
	t0=$(cut -d' ' -f1 /proc/uptime)
	$SB --timeout 400 -- sh -c "$WORKLOAD"
	fact files_rc $?
	fact files_time "$(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $t0 }")"
	fact files_nr "$(wc -l </tmp/sb-files-host/list)"
	for f in list sums after sums-after count; do
		fact "files_same_$(echo $f | tr - _)" \
			"$(cmp -s /tmp/sb-files-host/$f /tmp/sb-files-guest/$f && echo 1 || echo 0)"
	done
	# and what the guest left is what L1 sees, byte for byte
	(cd /tmp/sb-files-guest && find src -type f | sort | xargs sha256sum) \
		>/tmp/sb-files-l1view
	fact files_l1_view "$(cmp -s /tmp/sb-files-l1view /tmp/sb-files-guest/sums-after && echo 1 || echo 0)"
}

# lkvm setup NAME, then lkvm run -d NAME: the folder is the guest's root
# over 9p (the generic kernel's initrd mounts it and moves in), rw and ro.
rootdir_job() {
	export LKVM_HOME=/tmp/lkvm-home
	P="console=ttyS0 quiet loglevel=1 panic=-1"
	lkvm setup t1 >/dev/null
	fact setup_rc $?
	fact setup_busybox "$([ -x $LKVM_HOME/t1/bin/busybox ] && [ -L $LKVM_HOME/t1/bin/sh ] && echo 1 || echo 0)"
	lkvm setup t1 2>&1 | grep -c "already exists" | sed 's/^/@@FACT sb_setup_again=/'
	out=$(lkvm run -k $K -i $I -m 256 --timeout 120 -d t1 \
		-p "$P lkvm.run=sh,-c,echo%20inside%20>/made;cat%20/etc/hostname;test%20-e%20/l1/src.tar||echo%20confined")
	fact rootdir_rc $?
	fact rootdir_out "$(echo $out)"
	fact rootdir_made "$(cat $LKVM_HOME/t1/made 2>/dev/null)"
	lkvm run -k $K -i $I -m 256 --timeout 120 -d t1,ro \
		-p "$P lkvm.run=sh,-c,echo%20x%20>/ro-made"
	fact rootdir_ro_rc $?
	fact rootdir_ro_made "$([ -e $LKVM_HOME/t1/ro-made ] && echo 1 || echo 0)"
}

# The kernel doctor: a disk the guest never initialises because its
# initramfs lacks virtio_blk (the config beside vmlinuz says =m), and a
# kernel that panics with its console on tty0.
doctor_job() {
	V=$(ls /l2/boot/vmlinuz-*)
	dd if=/dev/zero of=/tmp/doc.img bs=1M count=4 2>/dev/null
	err=$(lkvm run -k "$V" -i /l2/initrd-noblk -d /tmp/doc.img -m 256 \
		--timeout 120 -p "console=ttyS0 quiet panic=-1 lkvm.run=true" \
		2>&1 >/dev/null)
	fact doctor_rc $?
	echo "$err"
	fact doctor_blk "$(echo "$err" | grep -c "never initialised the virtio-blk disk '/tmp/doc.img': CONFIG_VIRTIO_BLK=m, but its initramfs has no virtio_blk module")"
	err=$(lkvm run -k "$V" -m 256 --timeout 60 -p "console=tty0 panic=-1" \
		2>&1 >/dev/null)
	fact doctor_console_rc $?
	echo "$err"
	fact doctor_console "$(echo "$err" | grep -c "its command line sends the console to tty0")"
}

# virtio-balloon with Linux's driver: a sandbox (named, --balloon) watches
# its MemTotal; L1 inflates the balloon by 64 MiB through lkvm balloon.
balloon_job() {
	mkdir -p /tmp/sb-bal && cd /tmp/sb-bal || exit 1
	: >out
	$SB --balloon --name bal -- sh /l1/balloon-guest.sh >out 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 120 ] && ! grep -q '^before' out; do
		sleep 1
		i=$((i + 1))
	done
	lkvm balloon bal --inflate 64
	fact balloon_cmd_rc $?
	wait $pid
	fact balloon_rc $?
	cat out
	fact balloon_before "$(sed -n 's/^before //p' out)"
	fact balloon_after "$(sed -n 's/^after //p' out)"
}

# What a guest that mounts a read-only share of L1's / itself reaches of
# L1 (/l1/isolation-guest.sh says what it tries): no process's memory or
# environment, no sysfs, no host lock held for it; and open, unlink,
# fstat, ftruncate works on the working directory's share.
isolation_job() {
	mkdir -p /tmp/sb-iso && cd /tmp/sb-iso || exit 1
	rm -f out held done
	echo lock-me >/l1/lock-target
	SB_SECRET=l1-secret sleep 300 &
	other=$!
	SB_SECRET=l1-secret $SB --9p /,hostroot,ro -- \
		sh /l1/isolation-guest.sh $other >out 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 120 ] && ! grep -q held held 2>/dev/null &&
		kill -0 $pid 2>/dev/null; do
		sleep 1
		i=$((i + 1))
	done
	fact iso_lock_held "$(cat held 2>/dev/null)"
	fact iso_lock_probe "$(/l1/p9-check probe /l1/lock-target)"
	touch done
	wait $pid
	fact iso_rc $?
	kill $other
	cat out
	for f in mounted procdir env_lkvm env_other mem_lkvm sys_names \
		root_env root_mem unlinked; do
		fact "iso_$f" "$(sed -n "s/^$f //p" out)"
	done
}

# Seconds a command takes, to the millisecond, from /proc/uptime.
elapsed() {
	t0=$(cut -d' ' -f1 /proc/uptime)
	"$@" >/dev/null 2>&1
	awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $t0 }"
}

bench_job() {
	mkdir -p /tmp/sb-bench && cd /tmp/sb-bench || exit 1
	i=0
	while [ $i -lt "$1" ]; do
		fact bench_sandbox_$i "$(elapsed $SB -- true)"
		fact bench_run_$i "$(elapsed lkvm run -k $K -i $I -m 256 --timeout 120 --append 'quiet loglevel=1 lkvm.status=port lkvm.run=true')"
		i=$((i + 1))
	done
}

case $what in
status) status_job ;;
user) user_job ;;
overlay) overlay_job ;;
files) files_job ;;
rootdir) rootdir_job ;;
doctor) doctor_job ;;
balloon) balloon_job ;;
isolation) isolation_job ;;
bench) bench_job "${2:-10}" ;;
*) echo "sandbox-job.sh: unknown job $what" >&2; exit 2 ;;
esac
