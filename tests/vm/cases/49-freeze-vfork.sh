#!/bin/bash
# A vfork() in flight (posix_spawn() and system() use one) does not keep a
# job from freezing: the thread waiting in vfork() counts as parked once its
# child is, since it cannot run before the child execs or exits; status
# shows it in system call 58 (vfork on x86-64). Nothing moves while frozen;
# after the thaw the child goes on, and the parent after it. A job that
# keeps spawning /bin/true with posix_spawn() freezes 15 times in a row.
. "$(dirname "$0")/lib.sh"
wl_start vfork 5
ibckpt freeze --timeout 3000 --persist 30 "$WL_PID" > "$T/f" 2> "$T/e" ||
	fail "a vfork parent kept the freeze from converging: $(cat "$T/e")"
grep -q "frozen: 2 threads parked, 0 exited" "$T/f" || fail "freeze: $(cat "$T/f")"
ibckpt status "$WL_PID" > "$T/s"
cat "$T/s"
grep -Eq "^  $WL_PID +$WL_PID +parked +syscall 58," "$T/s" ||
	fail "the vfork parent is not shown parked in vfork (58)"
a=$(wl_snap)
ibckpt thaw "$WL_PID" > /dev/null || fail "thaw"
wl_snap > /dev/null
sleep 6	# the child ends its sleep and exits; then the parent ticks
b=$(wl_snap)
[ "$(echo "$b" | cut -d' ' -f2)" -ge 1 ] || fail "the parent never resumed ($a -> $b)"
kill -9 -- "-$WL_PID"

wl_start spawn
wl_freeze_cycles 15 0.1
kill -9 -- "-$WL_PID"
pass
