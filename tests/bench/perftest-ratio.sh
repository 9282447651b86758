#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): perftest latency and bandwidth
# with and without the ibckpt provider, interleaved (direct, ibckpt, direct, ...)
# so that drift of the emulated machine hits both sides alike. Prints a table of
# medians and ratios (ibckpt / direct).
#
#   tests/bench/perftest-ratio.sh [REPS]
set -u
reps=${1:-5}
prov=$PWD/provider/libibckpt-rdmav34.so
# RDMAV_DRIVERS takes a path without the "-rdmav34.so" libibverbs appends
provstem=$PWD/provider/libibckpt
[ -f "$prov" ] || { echo "perftest-ratio: build the provider first" >&2; exit 1; }
port=21000

# run_pair TOOL FIELD ENV... : one server/client run; prints the client's FIELD
run_pair() {
	local tool=$1 field=$2; shift 2
	port=$((port + 1))
	env "$@" timeout 120 "$tool" -d rxe0 -x 0 -p $port $opts > /tmp/b.srv 2>&1 &
	local srv=$!
	for _ in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
	env "$@" timeout 120 "$tool" -d rxe1 -x 0 -p $port $opts 127.0.0.1 > /tmp/b.cli 2>&1
	wait $srv
	awk -v f="$field" '/^ *[0-9]+ +[0-9]+ / { v = $f } END { print v }' /tmp/b.cli
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-12s %-18s %12s %12s %8s\n' test metric direct ibckpt ratio
for spec in "ib_send_lat:5:t_typical[usec]:-n 2000" "ib_write_lat:5:t_typical[usec]:-n 2000" \
	    "ib_write_bw:4:BW_avg[MB/s]:-n 2000 -s 65536"; do
	IFS=: read -r tool field metric opts <<< "$spec"
	d=() i=()
	for _ in $(seq "$reps"); do
		d+=("$(run_pair "$tool" "$field" IBCKPT_BENCH=direct)")
		i+=("$(run_pair "$tool" "$field" RDMAV_DRIVERS="$provstem")")
	done
	dm=$(printf '%s\n' "${d[@]}" | median)
	im=$(printf '%s\n' "${i[@]}" | median)
	ratio=$(awk -v a="$im" -v b="$dm" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')
	printf '%-12s %-18s %12s %12s %8s\n' "$tool" "$metric" "$dm" "$im" "$ratio"
done
