#!/bin/bash
# Threads and processes born and exiting during the freeze: a group that
# keeps forking children and creating short-lived threads is frozen anyway
# (rescans catch the newborn), nothing moves, and it goes on after thaw.
. "$(dirname "$0")/lib.sh"
wl_start forker
for i in $(seq 10); do
	ibckpt freeze --persist 60 "$WL_PID" > "$T/f" || fail "freeze #$i: $(cat "$T/f")"
	a=$(wl_snap); sleep 0.3; b=$(wl_snap)
	wl_none_moved "$a" "$b"
	ibckpt thaw "$WL_PID" > /dev/null || fail "thaw #$i"
	sleep 0.2
	c=$(wl_snap)
	wl_all_moved "$b" "$c"
done
cat "$T/f"
kill -9 -- "-$WL_PID"
pass
