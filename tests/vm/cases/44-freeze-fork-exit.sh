#!/bin/bash
# Threads and processes born and exiting during the freeze: a group that
# keeps forking children and creating short-lived threads is frozen anyway
# (rescans catch the newborn), nothing moves, and it goes on after thaw.
. "$(dirname "$0")/lib.sh"
wl_start forker
wl_freeze_cycles 10 0.2
cat "$T/f"
kill -9 -- "-$WL_PID"
pass
