#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): what the provider adds on
# the identity fast path, in instructions (callgrind: whole-program counts
# through ibckpt minus direct, at two iteration counts so that set-up cancels
# out) and in ns (fastpath through ibckpt vs direct, medians of interleaved
# runs), with 1 or 10,000 MRs and 1 or 1,000 QPs present. One round is
# post_recv + post_send + the polls until both completions came.
#   tests/bench/provider-callgrind.sh [ITERS]
set -u
n1=${1:-1000}
n2=$((n1 * 3))
fp=$PWD/tests/bench/bin/fastpath
prov=$PWD/provider/libibckpt
out=$(mktemp -d)
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# ir MODE ITERS MRS QPS: "instructions polls" of one run under callgrind
ir() {
	local envs=()
	[ "$1" = ibckpt ] && envs=(RDMAV_DRIVERS="$prov")
	(cd "$out" && env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file=cg.out \
		"$fp" rxe0 "$2" "$3" "$4" > run.out 2> /dev/null) || { echo "callgrind run failed" >&2; exit 1; }
	echo "$(awk '/^summary:/ { print $2 }' "$out/cg.out") $(awk '{ print $4 }' "$out/run.out")"
}

printf '%-7s %-6s %14s %13s %13s %10s %10s %7s\n' MRs QPs added_per_round polls/round \
	added_per_verb direct_ns ibckpt_ns ratio
for cfg in "1 1" "10000 1" "1 1000"; do
	read -r mrs qps <<< "$cfg"
	read -r d1 dp1 <<< "$(ir direct "$n1" "$mrs" "$qps")"
	read -r d2 dp2 <<< "$(ir direct "$n2" "$mrs" "$qps")"
	read -r i1 ip1 <<< "$(ir ibckpt "$n1" "$mrs" "$qps")"
	read -r i2 ip2 <<< "$(ir ibckpt "$n2" "$mrs" "$qps")"
	added=$(awk -v a="$i1" -v b="$i2" -v c="$d1" -v d="$d2" -v n="$((n2 - n1))" \
		'BEGIN { printf "%.1f", ((b - a) - (d - c)) / n }')
	polls=$(awk -v a="$ip1" -v b="$ip2" -v n="$((n2 - n1))" 'BEGIN { printf "%.2f", (b - a) / n }')
	perverb=$(awk -v x="$added" -v p="$polls" 'BEGIN { printf "%.1f", x / (2 + p) }')
	d=() i=()
	for _ in 1 2 3; do
		d+=("$("$fp" rxe0 "$((n1 * 5))" "$mrs" "$qps" | awk '{ print $6 }')")
		i+=("$(RDMAV_DRIVERS=$prov "$fp" rxe0 "$((n1 * 5))" "$mrs" "$qps" | awk '{ print $6 }')")
	done
	dn=$(printf '%s\n' "${d[@]}" | median)
	in=$(printf '%s\n' "${i[@]}" | median)
	printf '%-7s %-6s %14s %13s %13s %10s %10s %7s\n' "$mrs" "$qps" "$added" "$polls" "$perverb" \
		"$dn" "$in" "$(awk -v a="$in" -v b="$dn" 'BEGIN { printf "%.3f", a / b }')"
done
echo "(instructions; a round = post_recv + post_send + polls until 2 completions; ns per round)"
rm -rf "$out"
