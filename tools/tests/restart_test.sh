#!/bin/bash
# ibckpt reacquire against checkpoint directories that are not what they
# claim: missing, foreign, corrupt, naming a process that is gone or
# descriptors that are not a restart channel. Each is refused with a clear
# message and exit 1 before anything is written to any process; bad command
# lines exit 2. No module is needed: the CLI reads the directory and opens
# /proc/PID/fd itself.
set -uo pipefail
cd "$(dirname "$0")/.."
ibckpt=./ibckpt
T=$(mktemp -d)
# processes a stale directory may name: with the provider loaded (as a
# verbs program has) but no restart channel at 3 and 4, with pipes there
# but no provider, and with the provider and one end of each pipe only
prov=$PWD/../provider/libibckpt-rdmav34.so
# (nothing of theirs holds this script's output open)
LD_PRELOAD=$prov sleep 60 3< /dev/null 4< /dev/null > /dev/null 2>&1 &
victim=$!
sleep 60 3< <(exec sleep 60 > /dev/null 2>&1) 4> >(exec cat > /dev/null 2>&1) > /dev/null 2>&1 &
piped=$!
LD_PRELOAD=$prov sleep 60 3< <(exec sleep 60 > /dev/null 2>&1) 4> >(exec cat > /dev/null 2>&1) \
	> /dev/null 2>&1 &
oneend=$!
trap 'pkill -P $piped; pkill -P $oneend; kill $victim $piped $oneend 2> /dev/null; rm -rf "$T"' EXIT
rc=0

expect() {	# NAME STATUS MESSAGE-REGEX -- ARGS
	local name=$1 want=$2 re=$3 got
	shift 4
	"$ibckpt" "$@" > "$T/out" 2> "$T/err"
	got=$?
	if [ "$got" = "$want" ] && grep -Eq -- "$re" "$T/err"; then
		echo "PASS: restart/$name"
	else
		echo "FAIL: restart/$name (exit $got, want $want): $(cat "$T/err")"
		rc=1
	fi
}

job() { mkdir -p "$T/$1"; printf '%b' "$2" > "$T/$1/ibckpt-job"; }

expect missing_dir 1 "not a checkpoint directory of ibckpt" -- reacquire -D "$T/none"
job foreign 'hello\n'
expect foreign_file 1 "not an ibckpt job file" -- reacquire -D "$T/foreign"
job malformed 'ibckpt-job 1\nproc 12 x 4\n'
expect malformed_line 1 "ibckpt-job:2: malformed line" -- reacquire -D "$T/malformed"
job trailing 'ibckpt-job 1\nproc 12 3 4 5\n'
expect trailing_field 1 "malformed line" -- reacquire -D "$T/trailing"
job empty 'ibckpt-job 1\n'
expect no_process 1 "no process" -- reacquire -D "$T/empty"
job gone 'ibckpt-job 1\nproc 4194303 3 4\n'
expect process_gone 1 "process 4194303: cannot open its restart channel" -- reacquire -D "$T/gone"
job notpipe "ibckpt-job 1\nproc $victim 3 4\n"
expect not_a_pipe 1 "process $victim: descriptor 3 is not its restart channel" -- \
	reacquire -D "$T/notpipe"
job piped "ibckpt-job 1\nproc $piped 4 3\n"
expect no_provider 1 "process $piped runs no ibckpt provider" -- reacquire -D "$T/piped"
job oneend "ibckpt-job 1\nproc $oneend 4 3\n"
expect one_pipe_end 1 "process $oneend: descriptor 4 is not its restart channel" -- \
	reacquire -D "$T/oneend"
job v2 'ibckpt-job 2\nproc 12 3 4\n'
expect other_version 1 "checkpoint format version 2, this ibckpt reads version 1" -- \
	restart -D "$T/v2"
job incomplete 'ibckpt-job 1\nproc 4194303 3 4\n'
expect incomplete 1 "an incomplete checkpoint" -- restart -D "$T/incomplete"
job running "ibckpt-job 1\nproc $victim 3 4\n"
touch "$T/running/ibckpt-complete"
expect still_running 1 "process $victim exists: the job still runs" -- restart -D "$T/running"
# a process of the tree without a provider (the session's shell) still there
job treepid 'ibckpt-job 1\nproc 4194303 3 4\n'
touch "$T/treepid/ibckpt-complete"
echo "$victim" > "$T/treepid/pids"
expect tree_pid_taken 1 "process $victim exists: the job still runs, or its pid is taken" -- \
	restart -D "$T/treepid"
job nosnap 'ibckpt-job 1\nproc 4194303 3 4\n'
touch "$T/nosnap/ibckpt-complete"
expect snapshot_missing 1 "proc-4194303.snap: No such file" -- restart -D "$T/nosnap"
printf 'not a snapshot' > "$T/nosnap/proc-4194303.snap"
expect snapshot_foreign 1 "proc-4194303.snap: .*not an ibckpt snapshot|truncated" -- restart -D "$T/nosnap"
rm "$T/nosnap/proc-4194303.snap"
ln -s /etc/passwd "$T/nosnap/proc-4194303.snap"	# root would read anything
expect snapshot_symlink 1 "proc-4194303.snap: a symbolic link" -- restart -D "$T/nosnap"
# a directory someone else could have written is not restored (criu runs as root)
job open 'ibckpt-job 1\nproc 4194303 3 4\n'
touch "$T/open/ibckpt-complete"
chmod 0777 "$T/open"
expect dir_writable 1 "writable by nobody else" -- restart -D "$T/open"
chmod 0700 "$T/open"
ln -s "$T/open" "$T/link"
expect dir_symlink 1 "a symbolic link, not a checkpoint directory" -- restart -D "$T/link"
expect restart_usage 2 "usage: ibckpt restart" -- restart
expect usage_no_dir 2 "usage: ibckpt reacquire" -- reacquire
expect bad_map 2 "--map takes DEV=DEV" -- reacquire -D "$T/foreign" --map rxe0
expect map_too_long 2 "--map takes DEV=DEV" -- \
	reacquire -D "$T/foreign" --map "rxe0=$(printf 'x%.0s' $(seq 80))"
expect release_usage 2 "usage: ibckpt release" -- release 1234
expect checkpoint_usage 2 "usage: ibckpt checkpoint" -- checkpoint 1234
# a bad --timeout is refused before the directory is touched: a whole
# checkpoint there stays whole
mkdir -m 0700 "$T/whole" && touch "$T/whole/ibckpt-complete"
expect checkpoint_bad_timeout 2 "--timeout takes 1 to" -- checkpoint -D "$T/whole" --timeout 0 $victim
if [ -e "$T/whole/ibckpt-complete" ]; then
	echo "PASS: restart/checkpoint_bad_timeout_keeps_dir"
else
	echo "FAIL: restart/checkpoint_bad_timeout_keeps_dir (the checkpoint was unmarked)"
	rc=1
fi
kill -0 $victim || { echo "FAIL: restart/victim_untouched (the process died)"; rc=1; }
exit $rc
