#!/bin/bash
# The command line and checkpoint directory of a job on several nodes
# (restart.rst, "A job on several nodes"), on the host: bad --node, --run,
# --part and --node-timeout values are usage errors (exit 2); a directory of
# a job on several nodes restarted without --node, one of a job on one node
# with it, a part the job did not have, a corrupt nodes file, and a node
# that cannot read its part are refused (exit 1) with a clear message, the
# refusal reaching every node through the barrier. No module, no criu.
set -uo pipefail
cd "$(dirname "$0")/.."
ibckpt=./ibckpt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset SLURM_JOB_ID SLURM_STEP_ID
rc=0

expect() {	# NAME STATUS MESSAGE-REGEX -- ARGS
	local name=$1 want=$2 re=$3 got
	shift 4
	"$ibckpt" "$@" > "$T/out" 2> "$T/err"
	got=$?
	if [ "$got" = "$want" ] && grep -Eq -- "$re" "$T/err"; then
		echo "PASS: nodes/$name"
	else
		echo "FAIL: nodes/$name (exit $got, want $want): $(cat "$T/err")"
		rc=1
	fi
}

mkdir -m 0700 "$T/two" "$T/one"
printf 'ibckpt-nodes 1\nnodes 2\n' > "$T/two/ibckpt-nodes"
printf 'ibckpt-job 1\nproc 4194303 3 4\n' > "$T/one/ibckpt-job"

expect node_out_of_range 2 "--node takes RANK/N" -- restart -D "$T/two" --node 2/2 --run r
expect node_malformed 2 "--node takes RANK/N" -- restart -D "$T/two" --node 1 --run r
expect run_needed 2 "--node needs --run ID" -- restart -D "$T/two" --node 0/2
expect run_is_a_name 1 "--run takes a name" -- restart -D "$T/two" --node 0/2 --run ../x
expect part_without_node 2 "go with --node" -- restart -D "$T/two" --part 1
expect timeout_malformed 2 "--node-timeout takes milliseconds" -- \
	restart -D "$T/two" --node 0/2 --run r --node-timeout 0
expect checkpoint_run_needed 2 "--node needs --run ID" -- \
	checkpoint -D "$T/two" --node 0/2 --session 1
expect freeze_node_needs_dir 2 "--node and -D DIR .* go together" -- \
	freeze --node 0/2 --run f --session 1
expect freeze_dir_needs_node 2 "--node and -D DIR .* go together" -- \
	freeze -D "$T/rv" --session 1
expect thaw_node_needs_dir 2 "usage: ibckpt thaw" -- thaw --node 0/2 --run t --session 1
expect several_without_node 1 "the checkpoint of a job on 2 nodes: run this on each" -- \
	restart -D "$T/two"
expect one_with_node 1 "the checkpoint of a job on one node: no --node" -- \
	restart -D "$T/one" --node 0/1 --run r
expect no_such_part 1 "no part 5: the job had 2 nodes" -- \
	restart -D "$T/two" --node 0/1 --run r1 --part 5
expect incomplete 1 "an incomplete checkpoint \(no ibckpt-complete\)" -- \
	restart -D "$T/two" --node 0/1 --run r3 --part 0 --part 1
: > "$T/two/ibckpt-complete"
# node 0 cannot read its part: every node learns it at the first barrier
expect part_missing 1 "part.0/ibckpt-job" -- restart -D "$T/two" --node 0/1 --run r2
SLURM_JOB_ID=42 SLURM_STEP_ID=7 "$ibckpt" reacquire -D "$T/two" --node 0/1 > /dev/null 2>&1
if [ -d "$T/two/coord/slurm-42.7" ]; then
	echo "PASS: nodes/run_from_slurm_step"
else
	echo "FAIL: nodes/run_from_slurm_step: no $T/two/coord/slurm-42.7"
	rc=1
fi
printf 'ibckpt-nodes 2\nnodes 2\n' > "$T/two/ibckpt-nodes"
expect nodes_file_foreign 1 "not an ibckpt nodes file" -- restart -D "$T/two" --node 0/2 --run r4
printf 'ibckpt-nodes 1\nnodes 0\n' > "$T/two/ibckpt-nodes"
expect nodes_file_zero 1 "not an ibckpt nodes file" -- restart -D "$T/two" --node 0/2 --run r5
exit $rc
