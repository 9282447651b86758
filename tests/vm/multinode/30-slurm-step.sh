#!/bin/bash
# A job step of Slurm (Debian's slurm-wlm 22.05: slurmctld on node 0, slurmd
# on each node, munged everywhere, set up by slurm_up in lib.sh) taken as a
# job by `ibckpt ... --slurm JOBID.STEP`, which runs
# the command on every node of the step through srun (restart.rst, "A Slurm
# job step"): one `srun -N2` step of the traffic generator, its server on
# node 0 and its client on node 1, is
#  - frozen and thawed as one job FREEZES times (IBCKPT_CYCLES, default 4;
#    `make soak` runs 200): both nodes' parts frozen, their QPs' PSNs
#    still, traffic on after each thaw;
#  - refused while Slurm holds it suspended (scontrol suspend), by the
#    command and by each node's own check, and frozen again once resumed;
#  - refused for a step that does not exist; a node
#    with no part of the step fails node 0's freeze at its first barrier,
#    within 60 s (not after the node timeout), node 0's part thawed;
#  - checkpointed and restarted through Slurm ROUNDS times (IBCKPT_ROUNDS,
#    default 2; `make soak` runs 20): each restart is
#    a new step of the same allocation that holds the restored job until it
#    ends (restart --wait), and the next checkpoint takes that step (each
#    earlier restart's srun then ends with 137);
# then the generator verifies every message and the restart's step ends
# with the job's own exit status.
# vm-timeout: 900
. "$(dirname "$0")/../cases/lib.sh"
[ "${IBCKPT_NODES:-1}" -ge 2 ] || skip "needs two nodes: tests/vm/run --nodes 2 -- $0"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
FREEZES=${IBCKPT_CYCLES:-4}	# `make soak` runs 200
ROUNDS=${IBCKPT_ROUNDS:-2}	# `make soak` runs 20
# as in 20-traffic-ckpt.sh: soft-RoCE across guests, more in a longer run
UNANSWERED=$((FREEZES > 10 ? 10 * FREEZES : 100)) UDLOST=$((FREEZES > 10 ? 100 * FREEZES : 1000))
me=$IBCKPT_NODE
modprobe -a unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
slurm_up
CK=$IBCKPT_SHARED/ck J=$IBCKPT_SHARED/job FZ=$IBCKPT_SHARED/fz
IBT=$PWD/$IBTRAFFIC
export RDMAV_DRIVERS=$PWD/provider/libibckpt	# srun passes the environment on

# Node 1 holds no command: it answers node 0's requests (the client's end).
if ! node_is 0; then
	if node_is 1; then
		# a node with no part of the step fails the first barrier at once
		# node 0 asks after its freezes (a freeze and thaw through srun: about 10 s)
		jid=$(node_get nopart $((600 + 15 * FREEZES))) || fail "node 0 never asked"
		refused 1 "Slurm step $jid.7 has no processes on this node" \
			ibckpt freeze --slurm "$jid.7" -D "$FZ" --node 1/2 --run nopart
		node_get finish $((800 + 60 * ROUNDS)) > /dev/null || fail "node 0 never finished"
		kill -INT "$(cat "$J/1.pid")" || fail "no client to stop"
	fi
	node_barrier done $((900 + 15 * FREEZES))
	pass
fi

mkdir -p "$J" "$FZ" || fail "mkdir"
port=$(bed_port)
# the allocation: both nodes, until scancel
jid=$(salloc -N2 --no-shell 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[ -n "$jid" ] || fail "salloc -N2 granted nothing: $(salloc -N2 --no-shell 2>&1)"
trap 'scancel "$jid" 2> /dev/null' EXIT
cat > "$J/part.sh" <<EOF
cd "$J"
echo \$\$ > "$J/\$SLURM_NODEID.pid"
if [ "\$SLURM_NODEID" = 0 ]; then
	exec $IBT -s -b 0.0.0.0 -d rxe0 -g 0 -p $port -q 4 -U $UDLOST > server.out 2> server.err < /dev/null
fi
exec $IBT -c $(node_ip 0) -d rxe0 -g 0 -p $port -q 4 -P 0.2 -L $UNANSWERED -U $UDLOST > client.out 2> client.err < /dev/null
EOF
srun --jobid="$jid" -N2 --ntasks-per-node=1 bash "$J/part.sh" > "$T/step0.out" 2>&1 &
step=$!
job_says() { tail -n 4 "$J/server.err" "$J/client.err" "$T/step0.out" 2> /dev/null; }
progress() { grep -c '"event":"progress"' "$J/client.out" 2> /dev/null; }
wait_progress() {
	local end=$((SECONDS + 90))
	while [ $SECONDS -lt $end ]; do
		[ "$(progress)" -ge "$1" ] && return 0
		sleep 0.2
	done
	fail "the client printed fewer than $1 progress lines: $(job_says)"
}
wait_progress 2
SERVER=$(cat "$J/0.pid")
# the step's tasks: the server and the client themselves (bash exec'ed them)
expect_eq ibtraffic "$(ps -o comm= -p "$SERVER")" "step $jid.0's task on node 0"

# state_on NODE STEP: "frozen" or "running", as the node's own ibckpt says
state_on() {
	srun --no-allocate -N1 -w "node$1" ibckpt -j status --slurm "$jid.$2" 2> "$T/se" |
		jq -r '.sessions[0].state // "running"'
}

# --- freeze and thaw the step FREEZES times
s0=$(date +%s.%N)
for i in $(seq "$FREEZES"); do
	ibckpt freeze --slurm "$jid.0" -D "$FZ" --persist 120 > "$T/f" 2> "$T/fe" ||
		fail "freeze $i: $(cat "$T/fe" "$T/f") $(job_says)"
	[ "$(grep -c "Slurm step $jid.0 frozen:" "$T/f")" = 2 ] ||
		fail "freeze $i: not both nodes said frozen: $(cat "$T/f" "$T/fe")"
	for n in 0 1; do
		expect_eq frozen "$(state_on "$n" 0)" "freeze $i: node $n's part ($(cat "$T/se"))"
	done
	p=$(progress)
	sleep 0.5
	expect_eq "$p" "$(progress)" "freeze $i: the client printed while frozen"
	ibckpt thaw --slurm "$jid.0" -D "$FZ" > "$T/t" 2> "$T/te" ||
		fail "thaw $i: $(cat "$T/te" "$T/t")"
	[ "$(grep -c "Slurm step $jid.0 thawed" "$T/t")" = 2 ] ||
		fail "thaw $i: not both nodes said thawed: $(cat "$T/t" "$T/te")"
	wait_progress $((p + 1))
done
echo "$FREEZES freezes and thaws of step $jid.0 on 2 nodes through srun in $(echo "$(date +%s.%N) - $s0" | bc) s"

# --- a step Slurm suspended cannot quiesce: refused, and taken once resumed
scontrol suspend "$jid" || fail "scontrol suspend $jid"
refused 1 "Slurm job $jid is suspended (scontrol suspend)" \
	ibckpt freeze --slurm "$jid.0" -D "$FZ" --persist 60
# each node's own check, for a command given --node (its own fan-out)
for _ in $(seq 50); do
	grep -q "frozen 1" /sys/fs/cgroup/system.slice/*/job_"$jid"/step_0/user/cgroup.events && break
	sleep 0.2
done
refused 1 "Slurm step $jid.0 is suspended on this node" \
	ibckpt freeze --slurm "$jid.0" -D "$FZ" --node 0/1 --run suspended
scontrol resume "$jid" || fail "scontrol resume $jid"
wait_progress $(($(progress) + 2))
refused 1 "Slurm step $jid.7 has no processes on this node" ibckpt status --slurm "$jid.7"
# node 1 has no part: node 0 learns it at its first barrier, not after the
# timeout (regression: node 1 left without a word, node 0's part stayed
# frozen for 130 s)
node_put nopart "$jid"
t0=$SECONDS
refused 1 "node 1: it has no part of the Slurm step to take" \
	ibckpt freeze --slurm "$jid.0" -D "$FZ" --node 0/2 --run nopart --persist 60
[ $((SECONDS - t0)) -lt 60 ] || fail "node 0 learnt node 1's failure after $((SECONDS - t0)) s"
expect_eq running "$(state_on 0 0)" "node 0's part after the failed freeze"
wait_progress $(($(progress) + 1))
refused 1 "no Slurm step $jid.7" ibckpt freeze --slurm "$jid.7" -D "$FZ"
refused 2 "is not a Slurm job step" ibckpt freeze --slurm "$jid"

# --- checkpoint and restart through Slurm, ROUNDS times
cur=0	# the step the job runs in
for i in $(seq "$ROUNDS"); do
	ibckpt checkpoint --slurm "$jid.$cur" -D "$CK" > "$T/c" 2> "$T/ce" ||
		fail "checkpoint $i of step $jid.$cur: $(cat "$T/ce" "$T/c") $(job_says)"
	[ "$(grep -c "of 2: checkpoint $CK written; the job is gone" "$T/c")" = 2 ] ||
		fail "checkpoint $i said: $(cat "$T/c" "$T/ce")"
	[ -e "$CK/ibckpt-complete" ] || fail "checkpoint $i: not marked whole"
	wait "$step"	# the step ends with its tasks
	st=$?
	# the first step's srun reports its killed tasks; a restart's ends as
	# its waiter does: 128 + SIGKILL, as criu killed what it dumped
	[ "$i" = 1 ] || expect_eq 137 "$st" "restart $((i - 1))'s step after the checkpoint"
	alive() { kill -0 "$1" 2> /dev/null; }
	for _ in $(seq 100); do alive "$SERVER" || break; sleep 0.1; done
	alive "$SERVER" && fail "checkpoint $i: the server $SERVER is still there"
	ibckpt restart --slurm "$jid" -D "$CK" > "$T/r$i" 2> "$T/re$i" &
	step=$!
	for _ in $(seq 600); do
		[ "$(grep -c "of 2: 1 process restarted from $CK" "$T/r$i")" = 2 ] && break
		kill -0 "$step" 2> /dev/null || break
		sleep 0.1
	done
	[ "$(grep -c "of 2: 1 process restarted from $CK" "$T/r$i")" = 2 ] ||
		fail "restart $i: $(cat "$T/r$i" "$T/re$i") $(grep -h -B3 Error "$CK"/part.*/restore.log 2> /dev/null | tail -n 20)"
	alive "$SERVER" || fail "restart $i: the server is not back"
	# the restart's step, which holds the job now
	cur=$(squeue -h -s -j "$jid" -o %i | sed -n "s/^$jid\.\([0-9]*\)$/\1/p" | sort -n | tail -n 1)
	[ -n "$cur" ] && [ "$cur" -gt 0 ] || fail "restart $i: no step: $(squeue -s)"
	grep -q "job_$jid/step_$cur/user" "/proc/$SERVER/cgroup" ||
		fail "restart $i: the server is not in step $cur's cgroup: $(cat "/proc/$SERVER/cgroup")"
	wait_progress $(($(progress) + 2))
done
# and a freeze of the restarted step
ibckpt freeze --slurm "$jid.$cur" -D "$FZ" --persist 60 > "$T/f" 2> "$T/fe" ||
	fail "freeze of the restarted step: $(cat "$T/fe")"
ibckpt thaw --slurm "$jid.$cur" -D "$FZ" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
wait_progress $(($(progress) + 2))

# --- the end: the client stops (node 1), both verify, the step ends with 0
node_put finish 1
wait "$step"
rc=$?
expect_eq 0 "$rc" "the restarted step's status ($(cat "$T/re$ROUNDS") $(job_says))"
grep -q '"event":"final"' "$J/client.out" || fail "the client's final line is missing: $(job_says)"
T=$J traffic_expect_ops 1000
echo "step $jid: $FREEZES freezes, a suspended step refused, $ROUNDS checkpoints and restarts through Slurm; every message verified"
node_barrier done 900
pass
