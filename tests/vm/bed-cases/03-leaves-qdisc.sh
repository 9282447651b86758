#!/bin/bash
# Passes, but leaves a queueing discipline on veth0: the batch must fail it
# (exit 125, "left the bed changed") and run the rest in a fresh guest.
cat /proc/sys/kernel/random/boot_id
tc qdisc add dev veth0 root netem delay 1ms || exit 1
exit 0
