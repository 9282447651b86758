#!/bin/bash
# A thread that cannot reach a safe point (a stopped process: SIGSTOP does
# not let it run its park request) makes the freeze time out: a clear error
# naming it once ("not every thread parked within 500 ms; the job was left
# running"), exit 1, and the job is left as it was. Its park request, still
# queued, keeps the module from unloading: rmmod is refused at once ("in
# use") rather than hanging, until SIGCONT lets the thread run it. A
# persistent freeze's watchdog thaws the group by itself.
# vm-guest: own
# (it unloads the module, and stops a thread on purpose)
. "$(dirname "$0")/lib.sh"
wl_start spin 1
kill -STOP "$WL_PID"
ibckpt freeze --timeout 500 "$WL_PID" > "$T/o" 2> "$T/e"
expect_eq 1 $? "exit status of a timed-out freeze"
cat "$T/e"
grep -q "not every thread parked within 500 ms; the job was left running" "$T/e" || fail "message"
grep -q "thread $WL_PID (process $WL_PID) never parked" "$T/e" || fail "straggler not named"
[ "$(grep -c 'never parked' "$T/e")" = 1 ] || fail "a thread named twice"
ibckpt status "$WL_PID" | grep -q "process group $WL_PID is not frozen" || fail "aborted session left behind"
# the park request is still queued (it cannot be withdrawn): the module is
# in use, rmmod says so at once instead of hanging
timeout 20 rmmod ibckpt 2> "$T/rm" && fail "rmmod with a park request queued worked"
[ $? != 124 ] || fail "rmmod hung behind a queued park request"
grep -q "in use" "$T/rm" || fail "rmmod: $(cat "$T/rm")"
kill -CONT "$WL_PID"
sleep 0.3
a=$(wl_snap); sleep 0.3; b=$(wl_snap)
wl_all_moved "$a" "$b"
kill -9 "$WL_PID"
rmmod ibckpt || fail "rmmod once the park request ran"
modprobe ibckpt || fail "modprobe"

# (5 s: on the debug kernel under load, the freeze's return and two
# snapshots a second apart took more than 2 s, and the watchdog thawed
# inside the window that must see nothing move)
wl_start run 1
ibckpt freeze --persist 5 "$WL_PID" > /dev/null || fail "persistent freeze"
a=$(wl_snap); sleep 1; b=$(wl_snap)
wl_none_moved "$a" "$b"
sleep 5
c=$(wl_snap)
wl_all_moved "$b" "$c"
dmesg | grep -q "watchdog expired, thawing" || fail "no watchdog message"
kill -9 "$WL_PID"
pass
