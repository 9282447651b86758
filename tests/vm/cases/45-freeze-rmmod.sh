#!/bin/bash
# rmmod with a frozen group thaws it first; the module can come back.
# vm-guest: own
# (it unloads the module)
. "$(dirname "$0")/lib.sh"
wl_start run 2
ibckpt freeze --persist 60 "$WL_PID" > /dev/null || fail "freeze"
a=$(wl_snap)
rmmod ibckpt || fail "rmmod while frozen"
sleep 0.5
b=$(wl_snap)
wl_all_moved "$a" "$b"
modprobe ibckpt || fail "modprobe"
ibckpt freeze --persist 60 "$WL_PID" > /dev/null || fail "freeze after reload"
ibckpt thaw "$WL_PID" > /dev/null || fail "thaw after reload"
kill -9 "$WL_PID"
pass
