#!/bin/bash
# make demo: the main job, end to end, inside the VM test bed.
#   1. the module is up, the CLI talks to it
#   2. two soft-RoCE "nodes" (rxe0, rxe1)
#   3. a verifying RDMA application pair runs through the ibckpt provider
#   4. nothing was lost, duplicated, reordered or corrupted
set -u
. tests/vm/cases/lib.sh
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
export RDMAV_DRIVERS=$PWD/provider/libibckpt

step "ibckpt.ko is loaded; the CLI talks to it"
lsmod | grep '^ibckpt ' || fail "module not loaded"
ibckpt --version || fail "ibckpt --version"

step "two soft-RoCE devices on a veth pair"
rdma link show

step "traffic: ibtraffic server on rxe0, client on rxe1 (8 RC QPs + UD)"
traffic_start_server rxe0 8
echo "server pid $TRAFFIC_SERVER (process group $TRAFFIC_SERVER)"
traffic_run_client rxe1 8 -t 5 -P 1
cat "$T/client.out"
expect_eq 0 "$TRAFFIC_CLIENT_RC" "client exit status"
expect_eq 0 "$(traffic_wait_server)" "server exit status"

step "result"
grep '"event":"final"' "$T/client.out" | jq -M -c '{sends, writes, reads, atomics, ud, errors}'
echo "demo: OK - every message verified (sequence, checksum, atomics)"
