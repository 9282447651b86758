#!/bin/bash
# tests/vm/bed-batch's first case: passes, leaving a process and a file in
# /tmp behind, which the batch must remove before the next case.
cat /proc/sys/kernel/random/boot_id
setsid bash -c "exec -a bed-batch-leftover sleep 1000" < /dev/null > /dev/null 2>&1 &
: > /tmp/bed-batch-leftover
exit 0
