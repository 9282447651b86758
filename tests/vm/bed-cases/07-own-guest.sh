#!/bin/bash
# A case that asks for a guest of its own gets one.
# vm-guest: own
# (the bed's own test of the mark)
cat /proc/sys/kernel/random/boot_id
exit 0
