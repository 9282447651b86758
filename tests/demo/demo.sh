#!/bin/bash
# make demo: the main job, end to end, inside the VM test bed.
#   1. the module is up, the CLI talks to it; two soft-RoCE "nodes"
#   2. a verifying RDMA application pair runs through the ibckpt provider
#   3. both processes are frozen in the middle of the traffic: each provider
#      quiesces (verbs gate closed, CQs drained), then every thread parks
#   4. nothing moves while frozen; `ibckpt dump` shows each process's verbs
#      snapshot, which matches the kernel's own view (`rdma res show qp|mr`)
#   5. thaw; the traffic goes on
#   6. the generator confirms nothing was lost, duplicated, reordered or corrupted
set -u
. tests/vm/cases/lib.sh
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# the client's latest progress line (complete lines only)
ops() { grep '}$' "$T/client.out" | tail -n 1 | jq '.sends + .writes + .reads + .atomics + .ud'; }
export RDMAV_DRIVERS=$PWD/provider/libibckpt

step "ibckpt.ko is loaded; the CLI talks to it; two soft-RoCE devices"
lsmod | grep '^ibckpt ' || fail "module not loaded"
ibckpt --version || fail "ibckpt --version"
rdma link show

step "traffic: ibtraffic server on rxe0, client on rxe1 (8 RC QPs + UD), through ibckpt"
traffic_start_server rxe0 8
setsid "$IBTRAFFIC" -c 127.0.0.1 -d rxe1 -g 0 -p "$TRAFFIC_PORT" -q 8 -P 1 \
	> "$T/client.out" 2> "$T/client.err" &
client=$!
echo "server: process group $TRAFFIC_SERVER, client: process group $client"
sleep 3
echo "verified operations so far: $(ops)"

step "ibckpt freeze (both process groups)"
ibckpt freeze --persist 120 "$TRAFFIC_SERVER" || fail "freeze server"
ibckpt freeze --persist 120 "$client" || fail "freeze client"
ibckpt status
before=$(ops)
sleep 2
after=$(ops)
echo "verified operations while frozen for 2 s: $before -> $after"
expect_eq "$before" "$after" "progress while frozen"

step "ibckpt dump (the snapshot each provider gave at the freeze)"
ibckpt dump "$client" > "$T/dump.txt" || fail "dump client"
head -n 14 "$T/dump.txt"
echo "  ... ($(wc -l < "$T/dump.txt") lines; ibckpt -j dump for JSON, -o FILE for the raw snapshot)"
ibckpt -j dump "$TRAFFIC_SERVER" > "$T/dump.srv.json" || fail "dump server"
ibckpt -j dump "$client" > "$T/dump.cli.json" || fail "dump client (JSON)"
tools/ibckpt-xcheck "$T/dump.srv.json" "$T/dump.cli.json" ||
	fail "a snapshot differs from the kernel's view"

step "ibckpt thaw"
ibckpt thaw "$TRAFFIC_SERVER" || fail "thaw server"
ibckpt thaw "$client" || fail "thaw client"
sleep 3
echo "verified operations after thaw: $(ops)"

step "stop the traffic; the generator checks everything"
kill -INT "$client"
wait "$client"
crc=$?
cat "$T/client.err"
expect_eq 0 "$crc" "client exit status"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status"
[ "$(ops)" -gt "$after" ] || fail "no progress after thaw"
grep '"event":"final"' "$T/client.out" | jq -M -c '{sends, writes, reads, atomics, ud, errors}'
echo "demo: OK - frozen mid-traffic, thawed, every message verified (sequence, checksum, atomics)"
