#!/bin/bash
# An unsignaled RDMA READ or atomic whose response is lost when a
# checkpoint comes lands its result all the same (restart.rst, "Exactly
# once"): tests/provider/readfence, A on rxe0 reading from (or adding to)
# B on rxe1, A's timeout 1.07 s. netem drops everything veth1 (rxe1's link)
# sends from just before A's one unsignaled request until 300 ms into
# `ibckpt checkpoint --leave-running`: the peer executed the request, its
# response is lost, and the release must wait for the provider's fence
# behind it (a zero-length READ; a FETCH_AND_ADD of 0 behind the atomic,
# B granting no reads) until A asks again. Before the fence the release
# forgot the request and readfence found nothing in its buffer (exit 1).
# Then the loss is kept 4.5 s, past what the first try waits for the fence
# (3 x 1.07 s + 0.1 s): that try is refused (EBUSY), the checkpoint thaws,
# tries again, waits for the same fence and succeeds (before, a provider's
# EBUSY ended the checkpoint at once). First, with nothing lost, what a
# fence costs.
# vm-timeout: 300
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
modprobe sch_netem || fail "modprobe sch_netem"
lift() { tc qdisc del dev veth1 root 2> /dev/null; }
trap lift EXIT

# MODE LOSS_SECS NAME: readfence MODE checkpointed with the loss lifted
# LOSS_SECS in ("none": no loss, the response long arrived)
run() {
	local mode=$1 loss=$2 n=$3 sid lifter dropped took kind
	setsid bash -c "IBCKPT_DEBUG=1 tests/provider/bin/readfence rxe0 rxe1 $mode $T/go.$n \
		> $T/out.$n 2> $T/err.$n; echo \$? > $T/rc.$n" < /dev/null &
	sid=$!
	for _ in $(seq 100); do grep -q ready "$T/out.$n" 2> /dev/null && break; sleep 0.1; done
	grep -q ready "$T/out.$n" || fail "readfence $n is not ready: $(cat "$T/err.$n")"
	[ "$loss" = none ] ||
		tc qdisc add dev veth1 root netem loss 100% || fail "tc qdisc add dev veth1 netem"
	touch "$T/go.$n"
	for _ in $(seq 100); do grep -q posted "$T/out.$n" && break; sleep 0.02; done
	grep -q posted "$T/out.$n" || fail "readfence $n did not post: $(cat "$T/err.$n")"
	sleep 0.05
	dropped="nothing dropped"
	if [ "$loss" != none ]; then
		dropped=$(tc -s qdisc show dev veth1 | grep -o 'dropped [0-9]*' | head -n 1)
		[ "${dropped#dropped }" -gt 0 ] 2> /dev/null ||
			fail "netem on veth1 dropped nothing ($dropped): rxe1's packets do not go that way"
		dropped="$dropped packets from rxe1 before the lift"
	fi
	(sleep "${loss/none/0}"; lift) &
	lifter=$!
	IBCKPT_TIMING=1 ibckpt checkpoint -D "$T/ck.$n" --leave-running --session "$sid" \
		> "$T/c.$n" 2> "$T/ce.$n" || fail "checkpoint ($n): $(cat "$T/ce.$n")"
	wait $lifter
	grep -q "released and reacquired in place" "$T/c.$n" ||
		fail "checkpoint said: $(cat "$T/c.$n")"
	touch "$T/go.$n.after"
	for _ in $(seq 300); do [ -s "$T/rc.$n" ] && break; sleep 0.1; done
	expect_eq 0 "$(cat "$T/rc.$n" 2> /dev/null)" \
		"readfence $n's exit status ($(grep readfence "$T/err.$n"))"
	kind="zero-length READ"
	[ "$mode" = atomic ] && kind="FETCH_AND_ADD 0"
	grep -q "fence posted ($kind)" "$T/err.$n" || fail "$n: no $kind fence posted"
	# completed in the first try, or (a loaded host) in a later one
	took=$(grep -o "fence completed in [0-9.]* ms\|fence of an earlier try: completed.*" \
		"$T/err.$n")
	[ -n "$took" ] || fail "$n: the fence did not complete: $(grep fence "$T/err.$n")"
	echo "$n: $dropped; $took;" \
		"$(grep -o 'timing: release [0-9.]* ms' "$T/ce.$n" | tr '\n' ' ')"
}

run read none quick
run read 0.3 read
run atomic 0.3 atomic
run read 4.5 long
grep -q "QP [0-9]*: the fence behind its RDMA READs and atomics has not completed" \
	"$T/ce.long" || fail "long: the first try was not refused for its fence: $(cat "$T/ce.long")"
grep -q "trying again (2 of 5)" "$T/ce.long" || fail "long: not tried again: $(cat "$T/ce.long")"
again=$(grep -o "the fence of an earlier try: completed after [0-9.]* ms more" "$T/err.long")
[ -n "$again" ] || fail "long: the fence was not waited for again: $(grep fence "$T/err.long")"
echo "long: $(grep -c 'trying again' "$T/ce.long") tries after the first; $again"
pass
