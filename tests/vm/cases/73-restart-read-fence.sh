#!/bin/bash
# An unsignaled RDMA READ or atomic whose response is lost when a
# checkpoint comes lands its result all the same (restart.rst, "Exactly
# once"): tests/provider/readfence, A on rxe0 reading from (or adding to)
# B on rxe1, A's timeout 1.07 s. netem drops everything veth1 (rxe1's link)
# sends from just before A's one unsignaled request until 300 ms into
# `ibckpt checkpoint --leave-running`: the peer executed the request, its
# response is lost, and the release must wait for the provider's fence
# behind it until A asks again. The fence is the one B's QP grants (the
# CLI reads it in B's snapshot): a zero-length WRITE if B grants writes,
# else a zero-length READ (naming the atomic's key behind an atomic), else
# a FETCH_AND_ADD of 0. Before the fence the release forgot the request
# and readfence found nothing in its buffer (exit 1).
# Then the loss is kept 4.5 s, past what the first try waits for the fence
# (3 x 1.07 s + 0.1 s): behind a READ that try is refused (EBUSY), the
# checkpoint thaws, tries again, waits for the same fence and succeeds;
# behind an atomic (B granting atomics only) the job must not run while
# the FETCH_AND_ADD 0 is outstanding: PREPARE says EINPROGRESS, the CLI
# asks again with the job still frozen, and the same fence completes.
# Last, two pairs whose second A's queue is full (its one slot held by
# the READ): the release posts the first A's fence, finds no room for the
# second's, waits for the first before it refuses (a refusal no retry
# cures: exit 1 at once, no "trying again"), and both READs land. First,
# with nothing lost, what a fence costs.
# vm-timeout: 420
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
modprobe sch_netem || fail "modprobe sch_netem"
lift() { tc qdisc del dev veth1 root 2> /dev/null; }
trap lift EXIT

# MODE GRANTS LOSS_SECS NAME [fail]: readfence MODE GRANTS checkpointed with
# the loss lifted LOSS_SECS in ("none": no loss, the response long arrived);
# "fail": the checkpoint is to fail (exit 1), the job running on
run() {
	local mode=$1 grants=$2 loss=$3 n=$4 want=${5:-ok} sid lifter dropped took kind rc
	setsid bash -c "IBCKPT_DEBUG=1 tests/provider/bin/readfence rxe0 rxe1 $mode $grants \
		$T/go.$n > $T/out.$n 2> $T/err.$n; echo \$? > $T/rc.$n" < /dev/null &
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
		> "$T/c.$n" 2> "$T/ce.$n"
	rc=$?
	wait $lifter
	if [ "$want" = fail ]; then
		expect_eq 1 "$rc" "checkpoint ($n)'s exit status ($(cat "$T/ce.$n"))"
	else
		[ "$rc" = 0 ] || fail "checkpoint ($n): $(cat "$T/ce.$n")"
		grep -q "released and reacquired in place" "$T/c.$n" ||
			fail "checkpoint said: $(cat "$T/c.$n")"
	fi
	touch "$T/go.$n.after"
	for _ in $(seq 300); do [ -s "$T/rc.$n" ] && break; sleep 0.1; done
	expect_eq 0 "$(cat "$T/rc.$n" 2> /dev/null)" \
		"readfence $n's exit status ($(grep readfence "$T/err.$n"))"
	case $grants in
	*w*) kind="zero-length WRITE" ;;
	*r*) kind="zero-length READ" ;;
	*) kind="FETCH_AND_ADD 0" ;;
	esac
	grep -q "fence posted ($kind)" "$T/err.$n" || fail "$n: no $kind fence posted:" \
		"$(grep fence "$T/err.$n")"
	# completed in the first try, or (a loaded host) in a later one
	took=$(grep -o "fence completed in [0-9.]* ms\|fence of an earlier try: completed.*" \
		"$T/err.$n" | head -n 1)
	[ -n "$took" ] || fail "$n: the fence did not complete: $(grep fence "$T/err.$n")"
	echo "$n: $kind; $dropped; $took;" \
		"$(grep -o 'timing: release [0-9.]* ms' "$T/ce.$n" | tr '\n' ' ')"
}

run read r none quick
run read r 0.3 read
run read rw 0.3 write
run atomic a 0.3 atomic
run atomic ra 0.3 atomread
grep -q "fence posted (zero-length READ)" "$T/err.atomread" ||
	fail "atomread: not a READ behind the atomic: $(grep fence "$T/err.atomread")"

run read r 4.5 long
grep -q "QP [0-9]*: the fence behind its RDMA READs and atomics has not completed" \
	"$T/ce.long" || fail "long: the first try was not refused for its fence: $(cat "$T/ce.long")"
grep -q "trying again (2 of 5)" "$T/ce.long" || fail "long: not tried again: $(cat "$T/ce.long")"
again=$(grep -o "the fence of an earlier try: completed after [0-9.]* ms more" "$T/err.long")
[ -n "$again" ] || fail "long: the fence was not waited for again: $(grep fence "$T/err.long")"
echo "long: $(grep -c 'trying again' "$T/ce.long") tries after the first; $again"

run atomic a 4.5 atomlong
grep -q "its fence, a FETCH_AND_ADD of 0 at its peer, has not completed in [0-9]* ms:" \
	"$T/ce.atomlong" || fail "atomlong: not kept frozen for the add: $(cat "$T/ce.atomlong")"
grep -q "asking again (2 of 4), the job frozen" "$T/ce.atomlong" ||
	fail "atomlong: not asked again: $(cat "$T/ce.atomlong")"
! grep -q "trying again" "$T/ce.atomlong" ||
	fail "atomlong: thawed with the add outstanding: $(cat "$T/ce.atomlong")"
again=$(grep -o "the fence of an earlier try: completed after [0-9.]* ms more" \
	"$T/err.atomlong")
[ -n "$again" ] || fail "atomlong: the add was not waited for again: $(grep fence "$T/err.atomlong")"
echo "atomlong: $(grep -c 'asking again' "$T/ce.atomlong") more PREPAREs, frozen; $again"

run full r 0.3 full fail
grep -q "its send queue has no room for a fence behind its RDMA READs and atomics" \
	"$T/ce.full" || fail "full: not refused for the full queue: $(cat "$T/ce.full")"
! grep -q "trying again" "$T/ce.full" || fail "full: tried again: $(cat "$T/ce.full")"
[ "$(grep -c "fence posted" "$T/err.full")" = 1 ] ||
	fail "full: not one fence posted: $(grep fence "$T/err.full")"
grep -q "fence completed in" "$T/err.full" ||
	fail "full: the fence posted was not waited for: $(grep fence "$T/err.full")"
pass
