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
prov=${IBCKPT_BENCH_PROV:-$PWD/provider/libibckpt}	# RDMAV_DRIVERS: the path without -rdmav34.so
out=$(mktemp -d)
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# ir MODE ITERS MRS QPS: "instructions polls" of one run under callgrind; the
# profile stays in $out/cg.MODE.ITERS.MRS.QPS
ir() {
	local envs=() cg=cg.$1.$2.$3.$4
	[ "$1" = ibckpt ] && envs=(RDMAV_DRIVERS="$prov")
	(cd "$out" && env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file="$cg" \
		"$fp" rxe0 "$2" "$3" "$4" > run.out 2> /dev/null) || { echo "callgrind run failed" >&2; exit 1; }
	echo "$(awk '/^summary:/ { print $2 }' "$out/$cg") $(awk '{ print $4 }' "$out/run.out")"
}

# by_verb PROFILE: self instructions per group, the provider's code inlined
# into each verb counting as that verb's
by_verb() {
	callgrind_annotate --auto=no --threshold=100 --inclusive=no "$1" 2> /dev/null | awk '
		$2 == "(" || $2 ~ /^\(/ {
			n = $1; gsub(",", "", n); fn = ""
			for (i = 2; i <= NF; i++) if ($i ~ /:/ && $i !~ /^\[/) { fn = $i; break }
			if (fn == "" || fn ~ /PROGRAM/) next
			if (fn ~ /:ibckpt_post_send$/) g = "post_send"
			else if (fn ~ /:ibckpt_post_recv$/) g = "post_recv"
			else if (fn ~ /:ibckpt_poll_cq$/) g = "poll_cq"
			else if (fn ~ /provider\/[a-z_]+\.[ch]:/) g = "provider_other"
			else g = "outside"
			s[g] += n
		}
		END { for (g in s) print g, s[g] }'
}

printf '%-7s %-6s %14s %13s %13s %10s %10s %7s\n' MRs QPs added_per_round polls/round \
	added_per_verb direct_ns ibckpt_ns ratio
# IBCKPT_BENCH_CFGS: MRS:QPS,... (default 1:1,10000:1,1:1000; 1:1 must be in)
for cfg in $(tr ',' ' ' <<< "${IBCKPT_BENCH_CFGS:-1:1,10000:1,1:1000}"); do
	IFS=: read -r mrs qps <<< "$cfg"
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

# Where the added instructions go (1 MR, 1 QP): the provider's own code by
# the verb it runs in (inline helpers included), the rest of the provider
# (settling the logs, slow paths), and what changes outside it.
echo
printf '%-15s %10s\n' where added_per_round
for m in direct ibckpt; do
	by_verb "$out/cg.$m.$n1.1.1" > "$out/$m.a"
	by_verb "$out/cg.$m.$n2.1.1" > "$out/$m.b"
done
awk -v n="$((n2 - n1))" '
	{ k = FILENAME; sub(/.*\//, "", k); v[k, $1] = $2; g[$1] = 1 }
	END {
		split("post_send post_recv poll_cq provider_other outside", order, " ")
		for (i = 1; i <= 5; i++) {
			x = order[i]
			d = ((v["ibckpt.b", x] - v["ibckpt.a", x]) - (v["direct.b", x] - v["direct.a", x])) / n
			printf "%-15s %10.1f\n", x, d
			t += d
		}
		printf "%-15s %10.1f\n", "total", t
	}' "$out/direct.a" "$out/direct.b" "$out/ibckpt.a" "$out/ibckpt.b"
echo "(outside: the vendor, libibverbs and libc; a control thread makes the process"
echo " multi-threaded, and glibc then wraps the vendor's doorbell write() for cancellation)"
rm -rf "$out"
