#!/bin/bash
# Parked threads do not block system suspend: the PM core's task freezer
# (pm_test=freezer: freeze every task, wait, thaw) succeeds while a group is
# frozen by ibckpt, and the group stays frozen until ibckpt thaws it.
# vm-guest: own
# (it has the PM core freeze every task)
. "$(dirname "$0")/lib.sh"
wl_start run 2
ibckpt freeze --persist 120 "$WL_PID" > /dev/null || fail "freeze"
echo freezer > /sys/power/pm_test
echo 1 > /sys/module/suspend/parameters/pm_test_delay 2> /dev/null
echo freeze > /sys/power/state || fail "suspend (pm_test=freezer) failed: $(dmesg | tail -n 5)"
echo none > /sys/power/pm_test
dmesg | grep -q 'Freezing of tasks failed' && fail "the PM freezer could not freeze the parked threads"
a=$(wl_snap); sleep 0.5; b=$(wl_snap)
wl_none_moved "$a" "$b"
ibckpt status "$WL_PID" | grep -q "frozen, 8 threads: 8 parked" || fail "not frozen after suspend"
ibckpt thaw "$WL_PID" > /dev/null || fail "thaw"
sleep 0.3
c=$(wl_snap)
wl_all_moved "$b" "$c"
kill -9 "$WL_PID"
pass
