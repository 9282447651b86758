#!/bin/bash
# Freeze parks every thread of the group - spinning, sleeping, blocked in
# read, poll and FUTEX_WAIT - invisibly (no stop state, no SIGCHLD), nothing
# moves while frozen, status says where each thread is; thaw lets every
# thread go on and every blocked call completes normally (no EINTR).
# vm-smp: 2
# (two vCPUs: a spinning thread runs on the other CPU while the freeze comes, as on a real machine)
. "$(dirname "$0")/lib.sh"
wl_start run 4
a=$(wl_snap); sleep 0.3; b=$(wl_snap)
wl_all_moved "$a" "$b"

ibckpt freeze --persist 60 "$WL_PID" | tee "$T/f" || fail "freeze failed"
grep -q "process group $WL_PID frozen: 10 threads parked, 0 exited" "$T/f" ||
	fail "freeze output: $(cat "$T/f")"
c=$(wl_snap); sleep 1; d=$(wl_snap)
wl_none_moved "$c" "$d"

ibckpt status "$WL_PID" | tee "$T/s"
grep -q "process group $WL_PID: frozen, 10 threads: 10 parked, 0 pending, 0 exited, persistent" "$T/s" ||
	fail "status"
[ "$(grep -c ' parked ' "$T/s")" = 10 ] || fail "status does not list 10 parked threads"
for nr in 0 7 202 230; do	# read, poll, futex, clock_nanosleep
	grep -Eq "parked +syscall $nr, resumes at 0x" "$T/s" || fail "no thread shown parked in syscall $nr"
done
ibckpt -j status "$WL_PID" | jq -e ".sessions[0].state == \"frozen\" and (.sessions[0].thread_list | length) == 10" > /dev/null ||
	fail "status -j"
ibckpt status "$WL_PID" -j | jq -e ".sessions[0].persist == true" > /dev/null ||
	fail "status PGID -j (-j after the command, persist a boolean)"
# invisible: no thread is stopped or traced, the parent saw no stop
ps -L -o stat= -p "$WL_PID" | grep -q '^[Tt]' && fail "a thread is in a stopped state"
grep -q '^TracerPid:[[:space:]]*0$' "/proc/$WL_PID/status" || fail "traced"

ibckpt thaw "$WL_PID" | grep -q "process group $WL_PID thawed" || fail "thaw"
sleep 0.5
e=$(wl_snap)
wl_all_moved "$d" "$e"
ibckpt status "$WL_PID" | grep -q "process group $WL_PID is not frozen" || fail "session left after thaw"
kill -9 "$WL_PID"
pass
