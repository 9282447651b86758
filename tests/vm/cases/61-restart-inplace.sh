#!/bin/bash
# Release and reacquire in place (Documentation/restart.rst), the traffic
# generator's server (rxe0) and client (rxe1), 4 RC QPs and a UD QP each, as
# one job under full traffic: after a release neither process holds a
# descriptor or mapping of an RDMA device and the kernel lists none of their
# QPs; the thawed threads run but no verb gets through and nothing reopens a
# device; after the reacquire every QP has a new QPN and traffic resumes;
# once onto the other device each (--map rxe0=rxe1,rxe1=rxe0). Then 48
# in-place checkpoints (`checkpoint --leave-running`) at random moments (50
# in all). The generator verifies every message at the end (sequence,
# checksum, RDMA reads and writes, atomics, UD). A release that finds
# requests in flight exits 3 with nothing released (ibckpt.8): the case
# then thaws and freezes again a little later, as `checkpoint` does.
# vm-timeout: 900
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
traffic_start_session 4 -P 0.2
sid=$TRAFFIC_JOB server=$TRAFFIC_SERVER_PID client=$TRAFFIC_CLIENT_PID
traffic_wait_progress 2

device_files() {	# what of an RDMA device a process still holds
	local p=$1
	ls -l "/proc/$p/fd" 2> /dev/null | grep -E 'infiniband' || true
	grep infiniband "/proc/$p/maps" || true
}
# The kernel names a QP's creator by thread: a reacquire's is the control thread.
qpns() {
	local tids
	tids=$(ls "/proc/$1/task" | paste -sd, -)
	rdma -j res show qp | jq -r --argjson t "[$tids]" \
		'.[] | select(.pid as $p | $t | index($p)) | .lqpn' | sort -n | tr '\n' ' '
}

before_s=$(qpns "$server") before_c=$(qpns "$client")
[ -n "$before_s" ] && [ -n "$before_c" ] || fail "no QPs listed before: '$before_s' '$before_c'"
freeze_release "$sid" "$T/ck" "$server" "$client"
grep -q "2 processes released" "$T/r" || fail "release said: $(cat "$T/r")"
[ -s "$T/ck/ibckpt-job" ] || fail "no job file in the checkpoint directory"
for p in $server $client; do
	left=$(device_files "$p")
	[ -z "$left" ] || fail "process $p still holds after the release: $left"
	[ -z "$(qpns "$p")" ] || fail "the kernel still lists QPs of $p: $(qpns "$p")"
done
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
ibckpt status | grep -Eq "^ *($server|$client) " &&
	fail "a released process is still registered with /dev/ibckpt"
# running again, behind closed gates
sleep 1
[ -z "$(device_files "$client")" ] || fail "the client reopened a device while released"
ibckpt reacquire -D "$T/ck" > "$T/q" 2> "$T/qe" || fail "reacquire: $(cat "$T/qe")"
grep -q "2 processes reacquired" "$T/q" || fail "reacquire said: $(cat "$T/q")"
after_s=$(qpns "$server") after_c=$(qpns "$client")
[ -n "$after_s" ] && [ "$after_s" != "$before_s" ] ||
	fail "server QPNs before '$before_s', after '$after_s'"
[ -n "$after_c" ] && [ "$after_c" != "$before_c" ] ||
	fail "client QPNs before '$before_c', after '$after_c'"
ibckpt freeze --persist 60 --session "$sid" > /dev/null 2> "$T/fe" || fail "freeze after: $(cat "$T/fe")"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw after: $(cat "$T/te")"
# the same, onto the other device each (server rxe0 -> rxe1, client rxe1 -> rxe0):
# their GIDs change behind the ones the application knows
freeze_release "$sid" "$T/cks" "$server" "$client"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
ibckpt reacquire -D "$T/cks" --map rxe0=rxe1,rxe1=rxe0 > "$T/q" 2> "$T/qe" ||
	fail "reacquire on swapped devices: $(cat "$T/qe")"
rdma -j res show qp | jq -e --argjson p "[$(ls /proc/$server/task | paste -sd, -)]" \
	'[.[] | select(.pid as $x | $p | index($x)) | .ifname] | unique == ["rxe1"]' \
	> /dev/null || fail "the server's QPs are not on rxe1: $(rdma res show qp)"
sleep 1
for i in $(seq 48); do
	sleep "0.$((RANDOM % 5))"
	# every other one with -j: one JSON object, the checkpoint's report only
	j=()
	[ $((i % 2)) = 0 ] && j=(-j)
	ibckpt "${j[@]}" checkpoint -D "$T/ck$i" --leave-running --session "$sid" > "$T/c" 2> "$T/ce" ||
		fail "checkpoint $i: $(cat "$T/ce")"
	# (one jq at the end: a jq start costs a second under emulation)
	[ ${#j[@]} = 0 ] || { [ "$(wc -l < "$T/c")" = 1 ] && cat "$T/c" >> "$T/cj"; } ||
		fail "checkpoint -j $i printed: $(cat "$T/c")"
done
jq -e -s 'length == 24 and all(.[]; .checkpointed and .left_running)' "$T/cj" > /dev/null ||
	fail "checkpoint -j printed: $(cat "$T/cj")"
sleep 1
kill -INT "$client"
wait "$sid"
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 1000
echo "released and reacquired in place 50 times under traffic; QPNs $before_c -> $after_c"
pass
