#!/bin/bash
# A thread that execs takes over its process's main thread's pid
# (de_thread()): a freeze must not take the new image for the main thread it
# parked before (review finding kmod #9: threads were identified by pid).
# A process that keeps re-executing itself from a new thread is frozen 30
# times; its image count must not move while it is frozen.
. "$(dirname "$0")/lib.sh"
wl_start exec
for i in $(seq 30); do
	ibckpt freeze --timeout 5000 --persist 30 "$WL_PID" > "$T/f" 2> "$T/e" ||
		fail "freeze #$i: $(cat "$T/e")"
	a=$(wl_snap); sleep 0.3; b=$(wl_snap)
	wl_none_moved "$a" "$b"
	ibckpt thaw "$WL_PID" > /dev/null || fail "thaw #$i"
	sleep "0.0$((RANDOM % 5))"
done
c=$(wl_snap)
wl_all_moved "$b" "$c"
echo "30 freezes of a process re-executing itself ($(echo "$c" | cut -d' ' -f2) images)"
kill -9 "$WL_PID"
pass
