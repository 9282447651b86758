#!/bin/bash
# A freeze belongs to the CLI that asked for it: kill the holding
# `ibckpt freeze` and the group thaws by itself. Interrupting it thaws too.
. "$(dirname "$0")/lib.sh"
wl_start run 2
for how in KILL INT; do
	ibckpt freeze "$WL_PID" > "$T/f" 2>&1 &
	cli=$!
	for _ in $(seq 100); do grep -q holding "$T/f" && break; sleep 0.05; done
	grep -q "frozen: 8 threads parked" "$T/f" || fail "freeze: $(cat "$T/f")"
	a=$(wl_snap); sleep 0.5; b=$(wl_snap)
	wl_none_moved "$a" "$b"
	kill -$how "$cli"
	wait "$cli"
	rc=$?
	[ $how = INT ] && { expect_eq 0 $rc "exit status of an interrupted freeze"; }
	sleep 0.5
	c=$(wl_snap)
	wl_all_moved "$b" "$c"
	ibckpt status "$WL_PID" | grep -q "process group $WL_PID is not frozen" || fail "session outlived its owner"
done
# a holding freeze also ends when someone else thaws
ibckpt freeze "$WL_PID" > "$T/f" 2>&1 &
cli=$!
for _ in $(seq 100); do grep -q holding "$T/f" && break; sleep 0.05; done
ibckpt thaw "$WL_PID" > /dev/null || fail "thaw"
wait "$cli" || fail "the holding freeze did not end cleanly after thaw"
kill -9 "$WL_PID"
pass
