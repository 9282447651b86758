#!/bin/bash
# Freeze and thaw two processes in the middle of heavy verified RDMA traffic,
# at random moments, many times: the traffic generator's server and client
# (8 RC QPs and 1 UD QP, both sides through ibckpt). Each freeze
# (--persist 60, both groups) has the provider of each process quiesce
# (gate closed, CQs drained into private queues) before its threads park:
# each freeze asks one provider, and the session is frozen with its provider
# quiesced. Each thaw hands the drained completions back first. The cycles
# begin once the client reports progress. At the end the generator must
# report nothing lost, duplicated, reordered or corrupted; at least one
# completion must have been drained, and the client must have quiesced.
# Every IBCKPT_XCHECK_EVERY-th cycle (default: every one) each process's
# snapshot (`ibckpt dump -j`) is cross-checked against `rdma res show qp|mr`
# (tools/ibckpt-xcheck). IBCKPT_CYCLES sets the number of cycles (default
# 30; `make soak` runs this same case with 2,000, SOAK_CYCLES). The case
# reports the fetch-and-adds that completed without their result, which
# soft-RoCE does on its own (Documentation/testing.rst); the generator
# tolerates two per run and still checks each such add ran once. It reads
# the CLI's JSON with a shell helper (json_get in lib.sh), not jq, which
# costs a process start per call.
# vm-timeout: 900
# vm-smp: 2
# (two vCPUs: posts and polls on one CPU while the freeze closes their gates on the other)
. "$(dirname "$0")/lib.sh"
cycles=${IBCKPT_CYCLES:-30}
every=${IBCKPT_XCHECK_EVERY:-1}
checked=0
export RDMAV_DRIVERS=$PWD/provider/libibckpt IBCKPT_STATS=1
traffic_start_server rxe0 8
setsid "$IBTRAFFIC" -c 127.0.0.1 -d rxe1 -g 0 -p "$TRAFFIC_PORT" -q 8 -P 0.2 \
	> "$T/client.out" 2> "$T/client.err" &
client=$!
# Both sides registered and their traffic flowing (a fixed second was not
# always enough on a loaded host: the server had no provider yet).
traffic_wait_progress 2
spg=$TRAFFIC_SERVER
cpg=$client
drained=0
for i in $(seq "$cycles"); do
	sleep "0.0$((RANDOM % 10))"
	# alternate which side stops first, so that both drain completions
	order="$spg $cpg"
	[ $((i % 2)) = 0 ] && order="$cpg $spg"
	for g in $order; do
		ibckpt -j freeze --timeout 10000 --persist 60 "$g" > "$T/f" 2> "$T/fe" ||
			fail "cycle $i: freeze $g: $(cat "$T/fe")"
		json_get v "$T/f" providers
		[ "$v" = 1 ] || fail "cycle $i: group $g: $(cat "$T/f")"
		json_get v "$T/f" drained
		drained=$((drained + v))
	done
	ibckpt -j status "$spg" > "$T/s" || fail "cycle $i: status"
	json_get v "$T/s" state
	[ "$v" = frozen ] || fail "cycle $i: $(cat "$T/s")"
	json_get v "$T/s" quiesced
	[ "$v" = 1 ] || fail "cycle $i: not quiesced: $(cat "$T/s")"
	if [ $((i % every)) = 0 ]; then
		for g in $spg $cpg; do
			ibckpt -j dump "$g" > "$T/d.$g.json" || fail "cycle $i: dump $g"
		done
		# one run for both: starting python costs most of a second
		tools/ibckpt-xcheck "$T/d.$spg.json" "$T/d.$cpg.json" > "$T/x" 2>&1 ||
			fail "cycle $i: a snapshot differs from the kernel: $(cat "$T/x")"
		checked=$((checked + 2))
	fi
	for g in $spg $cpg; do
		ibckpt thaw "$g" > /dev/null 2> "$T/te" || fail "cycle $i: thaw $g: $(cat "$T/te")"
	done
done
kill -INT "$client"
wait "$client"
crc=$?
cat "$T/client.err" >&2
expect_eq 0 "$crc" "client exit status"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status"
traffic_expect_ops 1000
unanswered=$(grep '"event":"final"' "$T/client.out" | jq .unanswered)
echo "$cycles freeze/thaw cycles of both processes, $drained completions drained," \
	"$checked snapshots matched the kernel's view, ${unanswered:-?} fetch-and-adds" \
	"completed without their result (soft-RoCE's, tolerated: tests/traffic/atomic.c)"
[ "$drained" -gt 0 ] || fail "no freeze drained a completion: the drain is not exercised"
grep -Eq 'ibckpt: stats rxe1: .*quiesces [1-9][0-9]* drained [1-9]' "$T/client.err" ||
	fail "the client never drained a completion: $(grep 'ibckpt: stats' "$T/client.err")"
pass
