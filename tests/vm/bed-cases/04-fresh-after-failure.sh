#!/bin/bash
# The first case after 03's failure: a fresh guest, no netem on veth0.
cat /proc/sys/kernel/random/boot_id
if tc qdisc show dev veth0 | grep -q netem; then echo "03's netem is still there"; exit 1; fi
exit 0
