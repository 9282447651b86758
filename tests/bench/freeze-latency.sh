#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): freeze and thaw latency of
# a process group against its number of threads and processes. Freeze time
# is the module's (request to FROZEN), thaw time the CLI's round trip (until
# every thread has left its park). Medians of REPS cycles.
#   tests/bench/freeze-latency.sh [REPS]
set -u
reps=${1:-20}
W=tests/freeze/bin/workload
T=$(mktemp -d)
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
printf '%-22s %8s %14s %14s\n' workload threads freeze_ms thaw_ms
for spec in "spin 1" "spin 16" "spin 256" "procs 1" "procs 8" "procs 32"; do
	set -- $spec
	setsid $W "$1" "$T/f" "$2" > /dev/null 2>&1 &
	pid=$!
	sleep 1
	: > "$T/fr"; : > "$T/th"
	for _ in $(seq "$reps"); do
		ibckpt -j freeze --persist 60 "$pid" | jq -r .freeze_us >> "$T/fr"
		ibckpt -j thaw "$pid" | jq -r .thaw_us >> "$T/th"
	done
	kill -9 -- "-$pid"; wait 2> /dev/null
	fr=$(median < "$T/fr"); th=$(median < "$T/th")
	printf '%-22s %8s %14.3f %14.3f\n' "$1 $2" "$2" "$(awk -v v="$fr" 'BEGIN{print v/1000}')" \
		"$(awk -v v="$th" 'BEGIN{print v/1000}')"
done
rm -rf "$T"
