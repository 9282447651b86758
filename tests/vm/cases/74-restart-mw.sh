#!/bin/bash
# Memory windows survive a release and reacquire, twice in a row
# (restart.rst, "Memory windows"): tests/provider/mwcheck binds windows of
# both types, has some invalidated (LOCAL_INV, and a peer's SEND_WITH_INV
# left unpolled), one bound through a QP that fails afterwards, one whose
# second bind fails, and its peer context on the other device writes
# through them; then it waits while the process is checkpointed: in place
# (--leave-running), to disk and restarted, and restarted with the devices
# swapped. After each, the peer's old rkeys land where they did, the window
# of the failed QP is invalidated through another (free, 6.1's rxe would
# oops), a type 1 window is bound with IBV_WR_BIND_MW and a new window made
# and used by the peer; then a second checkpoint of the same kind, after
# which the peer's keys, those of the windows bound or made since too, still
# land; windows are bound again with ibv_inc_rkey() and ibv_bind_mw(),
# invalidations show the keys the application knows, and invalidated
# windows refuse their peer; `ibckpt dump` shows a type 2 window's QP. First
# the same program without ibckpt: rxe itself handles windows of both types.
# The two contexts are one process: a peer in another process is covered by
# the unit tests' identities (remap_test), not here.
# vm-timeout: 900
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
MW=tests/provider/bin/mwcheck

# rxe alone
touch "$T/go0" "$T/go0.2"
$MW rxe0 rxe1 "$T/go0" > "$T/out0" 2> "$T/err0" || fail "mwcheck without ibckpt: $(cat "$T/err0")"
grep -q "kept their binds" "$T/out0" || fail "mwcheck without ibckpt said: $(cat "$T/out0")"

export RDMAV_DRIVERS=$PWD/provider/libibckpt
start() {	# $1: a name for this run; sets sid
	rm -f "$T/go$1" "$T/go$1.2"
	setsid bash -c "$MW rxe0 rxe1 $T/go$1 > $T/out$1 2> $T/err$1; echo \$? > $T/rc$1" \
		< /dev/null &
	sid=$!
	ready "$1" ready
}
ready() {	# $1: the run's name, $2: the word mwcheck says when it waits
	for _ in $(seq 100); do grep -q "^$2 " "$T/out$1" 2> /dev/null && break; sleep 0.1; done
	grep -q "^$2 " "$T/out$1" ||
		fail "mwcheck $1 did not say $2: $(cat "$T/out$1" "$T/err$1" 2> /dev/null)"
}
finish() {	# $1: the run's name
	touch "$T/go$1.2"
	for _ in $(seq 300); do [ -s "$T/rc$1" ] && break; sleep 0.1; done
	expect_eq 0 "$(cat "$T/rc$1" 2> /dev/null)" "mwcheck $1's exit status ($(cat "$T/err$1"))"
	grep -q "kept their binds" "$T/out$1" || fail "mwcheck $1 said: $(cat "$T/out$1")"
}

# in place, twice
start inplace
for n in 1 2; do
	ibckpt checkpoint -D "$T/ck$n" --leave-running --session "$sid" > "$T/c" 2> "$T/ce" ||
		fail "checkpoint --leave-running ($n): $(cat "$T/ce")"
	grep -q "released and reacquired in place" "$T/c" || fail "checkpoint ($n) said: $(cat "$T/c")"
	if [ $n = 1 ]; then
		ibckpt dump -D "$T/ck1" > "$T/dump" || fail "ibckpt dump"
		grep -q "type 2 rkey .* through qp" "$T/dump" ||
			fail "no type 2 window bound through a QP: $(cat "$T/dump")"
		touch "$T/goinplace"
		ready inplace ready2
	fi
done
finish inplace

# to disk, killed, restarted, twice; then onto the other devices and back
for run in criu map; do
	start $run
	for n in 1 2; do
		dir=/run/ibckpt-mw-$run-$n
		ibckpt checkpoint -D "$dir" --session "$sid" > "$T/c" 2> "$T/ce" ||
			fail "checkpoint ($run $n): $(cat "$T/ce") $(tail -n 20 "$dir/dump.log" 2> /dev/null)"
		grep -q "the job is gone" "$T/c" || fail "checkpoint ($run $n) said: $(cat "$T/c")"
		wait "$sid" 2> /dev/null
		map=()
		[ $run = map ] && map=(--map rxe0=rxe1,rxe1=rxe0)
		ibckpt restart -D "$dir" "${map[@]}" > "$T/r" 2> "$T/re" ||
			fail "restart ($run $n): $(cat "$T/re") $(tail -n 20 "$dir/restore.log" 2> /dev/null)"
		rm -rf "$dir"
		if [ $n = 1 ]; then	# criu restores the session with its pids: $sid again
			touch "$T/go$run"
			ready $run ready2
		fi
	done
	finish $run
done
pass
