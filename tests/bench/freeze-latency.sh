#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): freeze and thaw latency of
# a job against its number of threads and processes, and for processes by
# how the job is named (process group, session, process tree, cgroup: the
# same processes each time). Freeze time is the module's (request to
# FROZEN), thaw time the CLI's round trip (until every thread has left its
# park). Medians of REPS cycles.
#   tests/bench/freeze-latency.sh [REPS]
#   IBCKPT_BENCH_SPECS="procs 8;sleepers 8192" to measure some workloads only
set -u
reps=${1:-20}
W=tests/freeze/bin/workload
T=$(mktemp -d)
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# field KEY: the number KEY has in the JSON line on standard input, without
# starting a process (jq's start costs seconds of emulated CPU when hundreds
# of threads spin beside it)
field() {
	local line re="\"$1\":(-?[0-9.]+)"
	IFS= read -r line
	[[ $line =~ $re ]] && echo "${BASH_REMATCH[1]}"
}
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
cg=/sys/fs/cgroup/ibckpt-bench.$$
mkdir -p "$cg"
printf '%-12s %8s %-10s %14s %14s\n' workload threads job freeze_ms thaw_ms
IFS=';' read -r -a specs <<< "${IBCKPT_BENCH_SPECS:-spin 1;spin 16;spin 256;sleepers 1024;sleepers 8192;procs 1;procs 8;procs 32}"
for spec in "${specs[@]}"; do
	set -- $spec
	# in the cgroup from the start, in a session and group of its own
	setsid bash -c "echo \$\$ > $cg/cgroup.procs && exec $W $1 $T/f $2" > /dev/null 2>&1 &
	pid=$!
	# every thread started (thousands take a while under emulation)
	want=$2
	[ "$1" = procs ] && want=1
	for _ in $(seq 600); do
		[ "$(ls "/proc/$pid/task" 2>/dev/null | wc -l)" -ge "$want" ] && break
		sleep 0.1
	done
	sleep 1
	n=$reps
	[ "$2" -ge 1024 ] && n=$(( reps < 5 ? reps : 5 ))
	jobs=("pgrp:$pid")
	[ "$1" = procs ] && jobs+=("session:--session $pid" "tree:--tree $pid" "cgroup:--cgroup $cg")
	for j in "${jobs[@]}"; do
		: > "$T/fr"; : > "$T/th"
		for _ in $(seq "$n"); do
			ibckpt -j freeze --timeout 120000 --persist 600 ${j#*:} | field freeze_us >> "$T/fr"
			ibckpt -j thaw ${j#*:} | field thaw_us >> "$T/th"
		done
		fr=$(median < "$T/fr"); th=$(median < "$T/th")
		printf '%-12s %8s %-10s %14.3f %14.3f\n' "$1 $2" "$2" "${j%%:*}" \
			"$(awk -v v="$fr" 'BEGIN{print v/1000}')" "$(awk -v v="$th" 'BEGIN{print v/1000}')"
	done
	kill -9 -- "-$pid"; wait 2> /dev/null
done
sleep 0.5
rmdir "$cg" 2>/dev/null
rm -rf "$T"
