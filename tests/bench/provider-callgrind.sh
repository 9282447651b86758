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

# by_verb PROFILE [fine]: self instructions per group, the provider's code
# inlined into each verb counting as that verb's; fine: its out-of-line
# helpers too (post_send_*, post_recv_*, poll_* and retire_*)
by_verb() {
	callgrind_annotate --auto=no --threshold=100 --inclusive=no "$1" 2> /dev/null | awk -v fine="${2:-}" '
		$2 == "(" || $2 ~ /^\(/ {
			n = $1; gsub(",", "", n); fn = ""
			for (i = 2; i <= NF; i++) if ($i ~ /:/ && $i !~ /^\[/) { fn = $i; break }
			if (fn == "" || fn ~ /PROGRAM/) next
			if (fn ~ /:ibckpt_post_send(_xl)?$/ || (fine && fn ~ /:post_send_/)) g = "post_send"
			else if (fn ~ /:ibckpt_post_recv(_xl)?$/ || (fine && fn ~ /:post_recv_/)) g = "post_recv"
			else if (fn ~ /:ibckpt_poll_cq(_xl)?$/ || (fine && fn ~ /:(poll|retire)_/)) g = "poll_cq"
			else if (fn ~ /provider\/[a-z_]+\.[ch]:/) g = "provider_other"
			else g = "outside"
			s[g] += n
		}
		END { for (g in s) print g, s[g] }'
}

# added_by_group BASE RUN: per group, what $out/RUN.{a,b} (by_verb of the
# two iteration counts) add per round over $out/BASE.{a,b}, and the total
added_by_group() {
	awk -v n="$((n2 - n1))" -v base="$1" -v run="$2" '
		{ k = FILENAME; sub(/.*\//, "", k); v[k, $1] = $2 }
		END {
			split("post_send post_recv poll_cq provider_other outside", order, " ")
			for (i = 1; i <= 5; i++) {
				x = order[i]
				d = ((v[run ".b", x] - v[run ".a", x]) - (v[base ".b", x] - v[base ".a", x])) / n
				printf "%-15s %10.1f\n", x, d
				t += d
			}
			printf "%-15s %10.1f\n", "total", t
		}' "$out/$1.a" "$out/$1.b" "$out/$2.a" "$out/$2.b"
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
	[ -n "$d1" ] && [ -n "$d2" ] && [ -n "$i1" ] && [ -n "$i2" ] && [ -n "$ip2" ] ||
		{ echo "the callgrind runs failed" >&2; exit 1; }
	[ "$cfg" = 1:1 ] && { b1=$i1 b2=$i2 bp1=$ip1 bp2=$ip2; }
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
added_by_group direct ibckpt
echo "(outside: the vendor, libibverbs and libc; a control thread makes the process"
echo " multi-threaded, and glibc then wraps the vendor's doorbell write() for cancellation)"

# An empty poll: instructions per poll_cq of an empty CQ, through ibckpt
# minus direct, at two poll counts.
empty() {	# MODE POLLS: the run's instructions
	local envs=() cg=cg.empty.$1.$2
	[ "$1" = ibckpt ] && envs=(RDMAV_DRIVERS="$prov")
	(cd "$out" && env "${envs[@]}" valgrind --tool=callgrind --callgrind-out-file="$cg" \
		"$fp" --empty rxe0 "$2" > /dev/null 2>&1) || { echo "callgrind run failed" >&2; exit 1; }
	awk '/^summary:/ { print $2 }' "$out/$cg"
}
e1=$((n1 * 10)) e2=$((n1 * 30))
ea=$(empty direct "$e1") eb=$(empty direct "$e2") ec=$(empty ibckpt "$e1") ed=$(empty ibckpt "$e2")
[ -n "$ea" ] && [ -n "$eb" ] && [ -n "$ec" ] && [ -n "$ed" ] ||
	{ echo "the empty polls' runs failed" >&2; exit 1; }
echo
awk -v a="$ea" -v b="$eb" -v c="$ec" -v d="$ed" -v n="$((e2 - e1))" \
	'BEGIN { printf "empty poll: %.1f instructions direct, %.1f added by ibckpt\n", (b - a) / n,
		 ((d - c) - (b - a)) / n }'

# After a restart (the translating path): the same rounds through ibckpt,
# before and after a release and reacquire in place gave every object new
# vendor IDs behind the same virtual ones. fastpath --wait is set up, then
# waits in read() while it is frozen, released, thawed and reacquired; the
# whole program's instructions at two iteration counts cancel set-up and the
# reacquire.
restarted() {	# ITERS: "instructions polls" of a run reacquired before its rounds
	local cg=cg.xlate.$1 fifo=$out/go.$1 pid i
	mkfifo "$fifo"
	(cd "$out" && RDMAV_DRIVERS=$prov exec setsid valgrind --tool=callgrind \
		--callgrind-out-file="$cg" "$fp" --wait rxe0 "$1" 1 1 < "$fifo" > "xl.$1" 2> /dev/null) &
	pid=$!
	exec 3> "$fifo"
	for i in $(seq 600); do
		grep -q ready "$out/xl.$1" 2> /dev/null && break
		sleep 0.5
	done
	grep -q ready "$out/xl.$1" 2> /dev/null ||
		{ echo "fastpath --wait never got ready" >&2; exec 3>&-; kill "$pid"; exit 1; }
	{ ibckpt freeze --persist 600 --tree "$pid" && ibckpt release -D "$out/ck.$1" --tree "$pid" &&
	  ibckpt thaw --tree "$pid" && ibckpt reacquire -D "$out/ck.$1"; } > /dev/null ||
		{ echo "the release and reacquire in place failed" >&2; exec 3>&-; kill "$pid"; exit 1; }
	echo go >&3
	exec 3>&-
	wait "$pid" || { echo "callgrind run after a reacquire failed" >&2; exit 1; }
	echo "$(awk '/^summary:/ { print $2 }' "$out/$cg") $(awk '/^iters/ { print $4 }' "$out/xl.$1")"
}
read -r x1 xp1 <<< "$(restarted "$n1")"
read -r x2 xp2 <<< "$(restarted "$n2")"
# each run is a subshell: its exit only ends itself
[ -n "$x1" ] && [ -n "$xp1" ] && [ -n "$x2" ] && [ -n "$xp2" ] ||
	{ echo "the translating path's runs failed" >&2; exit 1; }
for m in ibckpt.$n1.1.1:id.a ibckpt.$n2.1.1:id.b xlate.$n1:xlate.a xlate.$n2:xlate.b; do
	by_verb "$out/cg.${m%%:*}" fine > "$out/${m#*:}"
done
echo
echo "after a restart (translating path), per round, over the identity path (each verb"
echo "with its out-of-line helpers: the general paths, the poll's retirement):"
printf '%-15s %10s\n' where added_per_round
added_by_group id xlate
awk -v a="$x1" -v b="$x2" -v c="$b1" -v d="$b2" -v p="$xp1" -v q="$xp2" -v r="$bp1" -v s="$bp2" \
	-v n="$((n2 - n1))" 'BEGIN { printf "(whole program: %.1f per round more than the identity path; " \
		"polls per round %.2f, identity %.2f)\n", ((b - a) - (d - c)) / n, (q - p) / n, (s - r) / n }'
rm -rf "$out"
