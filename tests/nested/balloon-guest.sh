#!/bin/sh
# Inside a sandbox of tests/nested/sandbox-job.sh's balloon job: MemTotal
# now, then again once a second until it has dropped by 60 MiB or more
# (the host inflates the balloon by 64 MiB), for at most 60 s.
total() { awk '/^MemTotal/ { print $2 }' /proc/meminfo; }
t0=$(total)
echo "before $t0"
i=0
while [ $i -lt 60 ]; do
	t=$(total)
	if [ $((t0 - t)) -ge 61440 ]; then
		echo "after $t"
		exit 0
	fi
	sleep 1
	i=$((i + 1))
done
echo "after $(total)"
exit 1
