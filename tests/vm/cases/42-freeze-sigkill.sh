#!/bin/bash
# SIGKILL still kills a frozen process; the session records its threads as
# exited; thaw afterwards is clean. SIGTERM (default action) kills it too.
# vm-guest: own
# (its persistent freezes of groups that died stay in the module until their 60-s watchdog, which a batch finds left behind)
. "$(dirname "$0")/lib.sh"
for sig in KILL TERM; do
	wl_start run 2
	ibckpt freeze --persist 60 "$WL_PID" > /dev/null || fail "freeze"
	kill -$sig "$WL_PID"
	for _ in $(seq 100); do kill -0 "$WL_PID" 2> /dev/null || break; sleep 0.05; done
	kill -0 "$WL_PID" 2> /dev/null && fail "SIG$sig did not kill the frozen process"
	wait "$WL_PID" 2> /dev/null
	ibckpt status "$WL_PID" > "$T/s" 2>&1
	ibckpt thaw "$WL_PID" > "$T/t" 2>&1
	# the group is gone with its only process: either answer is a clean one
	grep -Eq "thawed|no such process group" "$T/t" || fail "thaw after SIG$sig: $(cat "$T/t")"
done
pass
