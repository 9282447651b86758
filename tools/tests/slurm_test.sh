#!/bin/bash
# --slurm on the host, with stand-ins for Slurm's scontrol and srun on PATH
# (restart.rst, "A Slurm job step"): the command asks Slurm for the step and
# runs itself on the step's nodes through srun, one agent per node, as root
# outside the job, with the same new --run for all; a suspended or finished
# job, an unknown step and a step on several nodes without -D are refused
# before srun runs (exit 1), naming what is wrong; an agent names its node
# from SLURM_NODEID and refuses a step with no processes on its node. The
# real Slurm runs in tests/vm/multinode/30-slurm-step.sh. No module.
set -uo pipefail
cd "$(dirname "$0")/.."
ibckpt=$PWD/ibckpt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_NNODES IBCKPT_SLURM_AGENT
rc=0

# scontrol: job 77's state from $T/state (and the largest ids'), its step 0
# on node[0-1] and step 3 on node1; job 79 another user's
cat > "$T/scontrol" <<'S'
#!/bin/bash
case "$2 $4" in
"job 77"|"job 4294967295") echo "JobId=77 JobName=app UserId=me($(id -u)) GroupId=me(0) JobState=$(cat "$(dirname "$0")/state") Reason=None NodeList=node[0-1]" ;;
"job 79") echo "JobId=79 JobName=app UserId=other(4242) GroupId=other(4242) JobState=RUNNING Reason=None NodeList=node0" ;;
"step 77.0"|"step 4294967295.4294967280") echo "StepId=77.0 UserId=0 State=RUNNING Partition=bed NodeList=node[0-1] Nodes=2 CPUs=2 Tasks=2" ;;
"step 77.3") echo "StepId=77.3 UserId=0 State=RUNNING Partition=bed NodeList=node1 Nodes=1 CPUs=1 Tasks=1" ;;
"job "*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;;
*) echo "Invalid job step id specified" >&2; exit 1 ;;
esac
S
# srun: says how it was called and what the agents would see
cat > "$T/srun" <<'S'
#!/bin/bash
echo "srun $* agent=$IBCKPT_SLURM_AGENT jobid=${SLURM_JOB_ID-unset}"
S
chmod +x "$T/scontrol" "$T/srun"
export PATH=$T:$PATH

expect() {	# NAME STATUS MESSAGE-REGEX -- ARGS (stdout and stderr both searched)
	local name=$1 want=$2 re=$3 got
	shift 4
	"$ibckpt" "$@" > "$T/out" 2>&1
	got=$?
	if [ "$got" = "$want" ] && grep -Eq -- "$re" "$T/out"; then
		echo "PASS: slurm/$name"
	else
		echo "FAIL: slurm/$name (exit $got, want $want): $(cat "$T/out")"
		rc=1
	fi
}

echo RUNNING > "$T/state"
# the fan-out: srun as root outside the job, or a step of it for another user
if [ "$(id -u)" = 0 ]; then how="--no-allocate"; else how="--jobid=77 --overlap"; fi
SLURM_JOB_ID=5 expect freeze_fans_out 0 \
	"^srun $how --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=0 --quiet --nodelist=node\[0-1\] -- $ibckpt freeze --slurm 77.0 -D $T/d --persist 9 --run slurm-77.0-[^ ]+-[0-9]+-[0-9]+ agent=77.0 jobid=unset$" \
	-- freeze --slurm 77.0 -D "$T/d" --persist 9
expect json_goes_along 0 "-- $ibckpt -j thaw --slurm 77.0 -D $T/d --run " \
	-- -j thaw --slurm 77.0 -D "$T/d"
expect checkpoint_fans_out 0 "-- $ibckpt checkpoint --slurm 77.0 -D $T/d --run " \
	-- checkpoint --slurm 77.0 -D "$T/d"
# a step on one node needs no directory, and meets in none
expect one_node_no_dir 0 "--nodes=1 .*--nodelist=node1 -- $ibckpt freeze --slurm 77.3 agent=77.3" \
	-- freeze --slurm 77.3
(cd "$T" && expect relative_dir 1 "--slurm takes an absolute -D DIR \(every node must find the same directory\), not 'd'" \
	-- freeze --slurm 77.0 -D d)
expect run_is_made_here 1 "names the operation itself: no --run" \
	-- freeze --slurm 77.0 -D "$T/d" --run mine
# the operation's name fits --run's 64 characters on a host with a long name
if [ "$(id -u)" = 0 ] && unshare -u true 2> /dev/null; then
	unshare -u sh -c "hostname login01.cluster-with-a-long-name.hpc.example.edu &&
		'$ibckpt' freeze --slurm 4294967295.4294967280 -D '$T/d'" > "$T/out" 2>&1
	run=$(sed -n 's/.* --run \([^ ]*\) agent=.*/\1/p' "$T/out")
	if [ -n "$run" ] && [ ${#run} -le 64 ] && [[ "$run" == slurm-4294967295.4294967280-login01-* ]]; then
		echo "PASS: slurm/long_hostname_run_id"
	else
		echo "FAIL: slurm/long_hostname_run_id: '$run' (${#run} characters): $(cat "$T/out")"
		rc=1
	fi
else
	echo "SKIP: slurm/long_hostname_run_id (needs root and unshare -u)"
fi
expect several_nodes_need_dir 1 "Slurm step 77.0 runs on 2 nodes: -D DIR" -- freeze --slurm 77.0
expect unknown_step 1 "no Slurm step 77.5" -- freeze --slurm 77.5 -D "$T/d"
expect unknown_job 1 "no Slurm job 78" -- freeze --slurm 78.0 -D "$T/d"
echo SUSPENDED > "$T/state"
expect suspended_refused 1 "Slurm job 77 is suspended \(scontrol suspend\).*resume it first \(scontrol resume 77\)" \
	-- freeze --slurm 77.0 -D "$T/d"
expect suspended_thaw_refused 1 "Slurm job 77 is suspended" -- thaw --slurm 77.0 -D "$T/d"
echo COMPLETED > "$T/state"
expect finished_refused 1 "Slurm job 77 is COMPLETED, not running" -- checkpoint --slurm 77.0 -D "$T/d"
echo RUNNING > "$T/state"
# an agent: on a node with no such step (this host); node 0 never comes, and
# the agent gives up at its barrier after --node-timeout (not the default 2
# minutes)
IBCKPT_SLURM_AGENT=77.0 SLURM_NODEID=1 SLURM_NNODES=2 expect agent_no_processes 1 \
	"Slurm step 77.0 has no processes on this node" -- freeze --slurm 77.0 -D "$T/d" --run r \
	--node-timeout 3000
IBCKPT_SLURM_AGENT=77.0 expect agent_not_of_srun 1 "not a task of srun" \
	-- freeze --slurm 77.0 -D "$T/d" --run r
# --node given: this node's part only, no srun
expect node_given_acts_here 1 "Slurm step 77.0 has no processes on this node" \
	-- freeze --slurm 77.0 -D "$T/d" --node 0/2 --run r
expect status_acts_here 1 "Slurm step 77.0 has no processes on this node" -- status --slurm 77.0
# restart --slurm JOBID: a step of the job, as many nodes as parts
mkdir -m 0700 "$T/two"
printf 'ibckpt-nodes 1\nnodes 2\n' > "$T/two/ibckpt-nodes"
expect restart_fans_out 0 \
	"^srun --jobid=77 --overlap --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=0 --quiet -- $ibckpt restart -D $T/two --slurm 77 --run slurm-77-[^ ]+ agent=77 " \
	-- restart -D "$T/two" --slurm 77
expect restart_no_node 1 "restart --slurm runs on every node itself.*no --node, --part or --run" \
	-- restart -D "$T/two" --slurm 77 --node 0/2 --run r
expect restart_no_part 1 "no --node, --part or --run" -- restart -D "$T/two" --slurm 77 --part 1
expect restart_others_job 1 "cannot restart in Slurm job 79: it is user 4242's; only its owner" \
	-- restart -D "$T/two" --slurm 79
(cd "$T" && expect restart_relative_dir 1 "--slurm takes an absolute -D DIR" \
	-- restart -D two --slurm 77)
expect restart_step_refused 2 "'77.0' is not a Slurm job id" -- restart -D "$T/two" --slurm 77.0
exit $rc
