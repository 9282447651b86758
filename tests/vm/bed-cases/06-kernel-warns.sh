#!/bin/bash
# Passes, but the kernel log gets a "WARNING:" line while it runs: the batch
# must fail it (exit 126), as tests/vm/run fails a command then.
cat /proc/sys/kernel/random/boot_id
echo "WARNING: a line written by tests/vm/bed-cases/06-kernel-warns.sh" > /dev/kmsg
exit 0
