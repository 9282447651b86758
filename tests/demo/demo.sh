#!/bin/bash
# make demo: the main job, end to end, inside the VM test bed.
#   1. the module is up, the CLI talks to it; two soft-RoCE "nodes"
#   2. a verifying RDMA application pair runs through the ibckpt provider,
#      its two processes in two process groups of one session (as a shell
#      with job control, or a launcher, starts them)
#   3. the job is frozen as one, by its session, in the middle of the
#      traffic: each provider quiesces (verbs gate closed, CQs drained),
#      then every thread parks
#   4. nothing moves while frozen; `ibckpt dump` shows each process's verbs
#      snapshot, which matches the kernel's own view (`rdma res show qp|mr`)
#   5. thaw; the traffic goes on
#   6. checkpoint to disk: every provider releases its device resources, criu
#      dumps the job, the processes are gone; restart: criu restores them,
#      every provider reacquires (new QPNs and keys behind the old ones)
#   7. the generator confirms nothing was lost, duplicated, reordered or corrupted
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
traffic_start_session 8 -P 1
job=$TRAFFIC_JOB server=$TRAFFIC_SERVER_PID client=$TRAFFIC_CLIENT_PID
ps -o pid,pgid,sid,comm -p "$job,$server,$client"
sleep 3
echo "verified operations so far: $(ops)"

step "ibckpt freeze --session $job (both processes, one freeze)"
ibckpt freeze --persist 120 --session "$job" || fail "freeze the job"
ibckpt status --session "$job"
before=$(ops)
sleep 2
after=$(ops)
echo "verified operations while frozen for 2 s: $before -> $after"
expect_eq "$before" "$after" "progress while frozen"

step "ibckpt dump (the snapshot each provider gave at the freeze)"
ibckpt dump --session "$job" > "$T/dump.txt" || fail "dump the job"
head -n 14 "$T/dump.txt"
echo "  ... ($(wc -l < "$T/dump.txt") lines for both processes; ibckpt -j dump for JSON, -o FILE for the raw snapshots)"
ibckpt -j dump --session "$job" > "$T/dump.json" || fail "dump the job (JSON)"
expect_eq 2 "$(jq '.processes | length' "$T/dump.json")" "snapshots in the job's dump"
tools/ibckpt-xcheck "$T/dump.json" || fail "a snapshot differs from the kernel's view"

step "ibckpt thaw --session $job"
ibckpt thaw --session "$job" || fail "thaw the job"
sleep 3
echo "verified operations after thaw: $(ops)"

step "ibckpt checkpoint -D /run/ibckpt-demo --session $job (release, then criu dump)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
qpns() { rdma res show qp | awk -v p="$(ls "/proc/$1/task" 2> /dev/null | paste -sd'|' -)" \
	'$0 ~ "pid (" p ") " { for (i = 1; i < NF; i++) if ($i == "lqpn") printf "%s ", $(i + 1) }'; }
echo "server QPNs before: $(qpns "$server")"
ibckpt checkpoint -D /run/ibckpt-demo --session "$job" || fail "checkpoint the job"
{ wait "$job"; } 2> /dev/null	# criu killed it: reap the session leader
ps -p "$job,$server,$client" > /dev/null && fail "the job still runs after its checkpoint"
echo "the job is gone; on disk: $(du -sh /run/ibckpt-demo | cut -f1) ($(ls /run/ibckpt-demo | tr '\n' ' '))"
before=$(ops)

step "ibckpt restart -D /run/ibckpt-demo (criu restore, then every provider reacquires)"
ibckpt restart -D /run/ibckpt-demo || fail "restart the job"
ps -o pid,pgid,sid,comm -p "$job,$server,$client"
echo "server QPNs after (the application still uses the old ones): $(qpns "$server")"
sleep 3
after=$(ops)
echo "verified operations after the restart: $before -> $after"
[ "$after" -gt "$before" ] || fail "no progress after the restart"

step "stop the traffic; the generator checks everything"
kill -INT "$client"
traffic_wait_done
cat "$T/client.err" "$T/server.err"
expect_eq 0 "$(cat "$T/client.rc")" "client exit status"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status"
[ "$(ops)" -gt "$after" ] || fail "no progress after thaw"
grep '"event":"final"' "$T/client.out" | jq -M -c '{sends, writes, reads, atomics, ud, errors}'
echo "demo: OK - the job frozen as one mid-traffic, thawed, checkpointed to disk, killed, restarted, every message verified (sequence, checksum, atomics)"
