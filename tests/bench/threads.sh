#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): tests/bench/mtverbs, threads
# sharing one context, with and without the ibckpt provider, interleaved
# (direct, ibckpt, direct, ...) so that drift of the emulated machine hits
# both sides alike. Prints the medians of REPS runs and their ratio
# (ibckpt / direct): a cache line the provider made every thread write per
# verb shows as a ratio that falls as threads are added.
#
#   tests/bench/threads.sh [REPS [SECONDS]]
set -u
reps=${1:-3}
secs=${2:-3}
prov=$PWD/provider/libibckpt-rdmav34.so
provstem=${IBCKPT_BENCH_PROV:-$PWD/provider/libibckpt}
bin=$PWD/tests/bench/bin/mtverbs
[ -f "$prov" ] && [ -x "$bin" ] || { echo "threads: build the provider and tests/bench first" >&2; exit 1; }

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
one() {	# one MODE THREADS ENV...: ops/s of one run
	local mode=$1 t=$2
	shift 2
	env "$@" timeout $((secs + 60)) "$bin" rxe0 "$mode" "$t" "$secs" |
		awk '/^mode/ { print $NF }'
}

echo "guest CPUs: $(nproc); $reps runs of $secs s each, medians"
printf '%-9s %7s %14s %14s %7s\n' mode threads direct ibckpt ratio
rc=0
for spec in poll:1 poll:2 poll:4 pingpong:1 pingpong:2 pingpong:4 pipeline:2; do
	IFS=: read -r mode t <<< "$spec"
	d=() i=()
	for _ in $(seq "$reps"); do
		d+=("$(one "$mode" "$t" IBCKPT_BENCH=direct)")
		i+=("$(one "$mode" "$t" RDMAV_DRIVERS="$provstem")")
	done
	dm=$(printf '%s\n' "${d[@]}" | median)
	im=$(printf '%s\n' "${i[@]}" | median)
	[ -n "$dm" ] && [ -n "$im" ] || { echo "threads: $mode $t: a run failed" >&2; rc=1; continue; }
	ratio=$(awk -v a="$im" -v b="$dm" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')
	printf '%-9s %7s %14.0f %14.0f %7s\n' "$mode" "$t" "$dm" "$im" "$ratio"
done
exit $rc
