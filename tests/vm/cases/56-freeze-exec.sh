#!/bin/bash
# A thread that execs takes over its process's main thread's pid
# (de_thread()): a freeze must not take the new image for the main thread it
# parked before (a thread is known by its task, not its pid).
# tests/freeze/workload exec keeps re-executing itself from a new thread; it
# is frozen 30 times, and its image count must not move while it is frozen.
. "$(dirname "$0")/lib.sh"
wl_start exec
wl_freeze_cycles 30 0.2
echo "30 freezes of a process re-executing itself ($(echo "$WL_LAST" | cut -d' ' -f2) images)"
kill -9 "$WL_PID"
pass
