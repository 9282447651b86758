#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): the downtime a freeze adds
# (freeze, quiesce included, + thaw, as the CLI reports them) for a process
# group busy on verbs through ibckpt, against its QPs, MRs and processes.
# Medians of 5 cycles.
#   tests/bench/downtime.sh [CYCLES]
# IBCKPT_BENCH_PROV: another provider build to measure (the path without
# -rdmav34.so), as in threads.sh and provider-callgrind.sh.
set -u
cycles=${1:-5}
export RDMAV_DRIVERS=${IBCKPT_BENCH_PROV:-$PWD/provider/libibckpt}
fp=$PWD/tests/bench/bin/fastpath
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-6s %-6s %-6s %12s %12s %14s\n' QPs MRs procs freeze_ms thaw_ms downtime_ms
for cfg in "1 1 1" "64 1 1" "1024 1 1" "1 1000 1" "1 10000 1" "1 1 2" "1 1 8" "1 1 32"; do
	read -r qps mrs procs <<< "$cfg"
	setsid "$fp" --hold rxe0 "$mrs" "$qps" "$procs" > /tmp/hold.out 2> /tmp/hold.err &
	pg=$!
	for _ in $(seq 600); do grep -q ready /tmp/hold.out && break; sleep 0.1; done
	grep -q ready /tmp/hold.out || { echo "load did not start: $(cat /tmp/hold.err)"; exit 1; }
	sleep 1	# every process of the group set up and running
	f=() t=()
	for _ in $(seq "$cycles"); do
		ibckpt -j freeze --timeout 30000 --persist 60 "$pg" > /tmp/f.json || exit 1
		[ "$(jq .providers /tmp/f.json)" = "$procs" ] ||
			{ echo "expected $procs providers: $(cat /tmp/f.json)"; exit 1; }
		f+=("$(jq '.freeze_us / 1000' /tmp/f.json)")
		ibckpt -j thaw "$pg" > /tmp/t.json || exit 1
		t+=("$(jq '.thaw_us / 1000' /tmp/t.json)")
		sleep 0.2
	done
	kill -TERM -- "-$pg"
	wait "$pg"
	fm=$(printf '%s\n' "${f[@]}" | median)
	tm=$(printf '%s\n' "${t[@]}" | median)
	printf '%-6s %-6s %-6s %12.1f %12.1f %14.1f\n' "$qps" "$mrs" "$procs" "$fm" "$tm" \
		"$(awk -v a="$fm" -v b="$tm" 'BEGIN { print a + b }')"
done
