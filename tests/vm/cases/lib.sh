# Shared helpers for VM test cases (sourced). A case runs inside the guest from the
# repo root; exit 0 = pass, 77 = skip, anything else = fail.
set -u
T=$(mktemp -d /tmp/case.XXXXXX)
CASE=$(basename "$0" .sh)

# On failure, the last words of any traffic generator the case started.
fail() {
	local f
	for f in "$T"/server.err "$T"/client.err; do
		[ -s "$f" ] && { echo "--- $(basename "$f") (last lines)"; tail -n 15 "$f"; } >&2
	done
	echo "FAIL-REASON($CASE): $*" >&2
	exit 1
}
skip() { echo "SKIP-REASON($CASE): $*" >&2; exit 77; }
pass() { exit 0; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"; }
# refused STATUS PATTERN COMMAND...: COMMAND exits with STATUS and says PATTERN
# on standard error (a refusal with a clear message)
refused() {
	local want=$1 pat=$2
	shift 2
	"$@" > "$T/o" 2> "$T/e"
	local rc=$?
	[ "$rc" = "$want" ] || fail "'$*': exit $rc, expected $want ($(cat "$T/e"))"
	grep -q -- "$pat" "$T/e" || fail "'$*': message '$(cat "$T/e")' lacks '$pat'"
}
# json_get VAR FILE KEY: VAR = the first "KEY": number or string in FILE (the
# CLI's -j output puts a session's own fields before its lists), "" if none.
# No process is started: jq costs a third of a second per call under emulation,
# which the 200-cycle traffic test cannot afford a few times per cycle.
json_get() {
	local _doc _re="\"$3\":(\"([^\"]*)\"|(-?[0-9.]+))"
	IFS= read -r -d '' _doc < "$2"
	printf -v "$1" ''
	[[ $_doc =~ $_re ]] && printf -v "$1" '%s' "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
	return 0
}

# posted_start DIR CMD...: start CMD, a test program in its --wait mode (it
# prints "posted", then waits for a line on standard input), in a session of
# its own, reading a FIFO held open on fd 3, writing DIR/out and DIR/err;
# return once it posted, 1 if it did not within 10 s. POSTED_PID: its pid.
# posted_release lets it go on.
posted_start() {
	local dir=$1
	shift
	mkdir -p "$dir"
	mkfifo "$dir/in"
	setsid "$@" < "$dir/in" > "$dir/out" 2> "$dir/err" &
	POSTED_PID=$!
	exec 3> "$dir/in"
	for _ in $(seq 100); do
		grep -q posted "$dir/out" && return 0
		sleep 0.1
	done
	return 1
}
posted_release() {
	echo go >&3
	exec 3>&-
}

# A TCP port for a side channel, distinct per case so leftovers never collide.
bed_port() { echo $((18000 + RANDOM % 10000)); }

# Wait until something listens on TCP port $1 (the server side of a pingpong).
bed_wait_listen() {
	local i
	for i in $(seq 200); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing listens on port $1"
}

# ibtraffic (tests/traffic): a verifying server on $1 with $2 QPs, in its own
# process group (setsid), and a client on another device.
IBTRAFFIC=tests/traffic/bin/ibtraffic
traffic_start_server() {
	TRAFFIC_PORT=$(bed_port)
	setsid "$IBTRAFFIC" -s -d "$1" -g 0 -p "$TRAFFIC_PORT" -q "$2" "${@:3}" \
		> "$T/server.out" 2> "$T/server.err" &
	TRAFFIC_SERVER=$!
	bed_wait_listen "$TRAFFIC_PORT"
}
# traffic_run_client DEV QPS [ibtraffic options]: runs to completion, for two
# minutes at most (SIGTERM ends its traffic, then it drains and asks for the
# server's verdict; 10 s later SIGKILL)
traffic_run_client() {
	timeout -k 10 120 "$IBTRAFFIC" -c 127.0.0.1 -d "$1" -g 0 -p "$TRAFFIC_PORT" -q "$2" "${@:3}" \
		> "$T/client.out" 2> "$T/client.err"
	TRAFFIC_CLIENT_RC=$?
	cat "$T/client.err" >&2
}
# Sets TRAFFIC_SERVER_RC. Not for $(...): a subshell cannot wait for the
# server, which is this shell's child (a regression: status "-1" under load).
# The server ends once the client did (the verdict sent, or the side channel
# closed); one still there TRAFFIC_GRACE (60) s later is stuck: the case
# fails with its state and kernel stack instead of hanging until the run's limit.
traffic_wait_server() {
	local wd
	(trap 'kill $z 2> /dev/null; exit 0' TERM
	 sleep "${TRAFFIC_GRACE:-60}" & z=$!; wait $z
	 { echo "the server did not end within ${TRAFFIC_GRACE:-60} s of the client:" \
		"$(ps -o stat=,wchan=,etime= -p "$TRAFFIC_SERVER")"
	   cat "/proc/$TRAFFIC_SERVER/stack"; } > "$T/server.stuck" 2>&1
	 kill -9 "$TRAFFIC_SERVER") > /dev/null 2>&1 &
	wd=$!
	wait "$TRAFFIC_SERVER"
	TRAFFIC_SERVER_RC=$?
	kill "$wd" 2> /dev/null
	wait "$wd" 2> /dev/null
	cat "$T/server.err" >&2
	[ -s "$T/server.stuck" ] && fail "$(cat "$T/server.stuck")"
	return 0
}
# The client's final line reports at least $1 completed operations.
traffic_expect_ops() {
	local n
	n=$(grep '"event":"final"' "$T/client.out" |
		jq '.sends + .writes + .reads + .atomics + .ud')
	[ -n "$n" ] && [ "$n" -ge "$1" ] || fail "client completed ${n:-no} operations, expected >= $1"
}

# tests/freeze/workload: threads with progress counters, in their own group.
WORKLOAD=tests/freeze/bin/workload
wl_start() {
	WL_FILE=$T/wl.$RANDOM
	setsid "$WORKLOAD" "$1" "$WL_FILE" "${@:2}" > "$T/wl.out" 2> "$T/wl.err" &
	WL_PID=$!
	wl_wait_ready
}
# The workload has started what its mode begins with (20 s: its counters
# exist before its threads do, and 32 threads take a while to appear on the
# debug kernel), then runs 0.3 s more.
wl_wait_ready() {
	local i
	for i in $(seq 400); do
		[ -s "$WL_FILE" ] && "$WORKLOAD" ready "$WL_FILE" && break
		sleep 0.05
	done
	"$WORKLOAD" ready "$WL_FILE" || fail "the workload did not start: $(cat "$T/wl.err")"
	sleep 0.3
}
wl_snap() { "$WORKLOAD" snap "$WL_FILE"; }
# every counter of snapshot $2 is above the one of $1; errors stayed 0
wl_all_moved() {
	local a=($1) b=($2) i
	[ "${b[0]}" = 0 ] || fail "workload reported ${b[0]} errors: $(cat "$T/wl.err")"
	for ((i = 1; i < ${#b[@]}; i++)); do
		[ "${b[i]}" -gt "${a[i]:-0}" ] || fail "thread $((i - 1)) made no progress ($1 -> $2)"
	done
}
wl_none_moved() {
	[ "$1" = "$2" ] || fail "counters moved while frozen: $1 -> $2"
}
# wl_freeze_cycles N SETTLE [JOB...]: freeze the workload (its group, or
# JOB) N times: nothing moves in 0.3 s frozen, everything moves again SETTLE
# seconds after the thaw. WL_LAST: the last counters seen.
wl_freeze_cycles() {
	local n=$1 settle=$2 i a b
	shift 2
	[ $# -gt 0 ] || set -- "$WL_PID"
	for i in $(seq "$n"); do
		ibckpt freeze --timeout 5000 --persist 60 "$@" > "$T/f" 2> "$T/e" ||
			fail "freeze $* #$i: $(cat "$T/e")"
		a=$(wl_snap); sleep 0.3; b=$(wl_snap)
		wl_none_moved "$a" "$b"
		ibckpt thaw "$@" > /dev/null || fail "thaw $* #$i"
		sleep "$settle"
		WL_LAST=$(wl_snap)
		wl_all_moved "$b" "$WL_LAST"
	done
}

# freeze_release SID DIR [PID...]: session SID frozen and released into DIR
# (left frozen). Under traffic a release may find requests in flight: it
# exits 3 with nothing released (ibckpt.8), each PID still holding its
# device; then thaw, and freeze and release again a little later, as
# `ibckpt checkpoint` does. The release's output is in $T/r.
freeze_release() {
	local sid=$1 dir=$2 try rc p
	shift 2
	for try in 1 2 3 4 5 6; do
		ibckpt freeze --persist 60 --session "$sid" > /dev/null 2> "$T/fe" ||
			fail "freeze: $(cat "$T/fe")"
		rc=0
		ibckpt release -D "$dir" --session "$sid" > "$T/r" 2> "$T/re" || rc=$?
		[ $rc = 0 ] && return 0
		[ $rc = 3 ] && [ $try -lt 6 ] || fail "release (exit $rc): $(cat "$T/re")"
		echo "release refused, requests in flight: $(cat "$T/re")"
		for p in "$@"; do
			ls -l "/proc/$p/fd" | grep -q infiniband ||
				fail "a refused release released process $p"
		done
		ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
		sleep 0.$try
	done
}

# traffic_start_session QPS [CLIENT OPTIONS]: ibtraffic's server (rxe0)
# and client (rxe1), through whatever RDMAV_DRIVERS says, in two process
# groups of one new session, as a shell with job control starts them.
# Sets TRAFFIC_JOB (the session), TRAFFIC_SERVER_PID, TRAFFIC_CLIENT_PID;
# the exit statuses land in $T/server.rc and $T/client.rc.
traffic_start_session() {
	local port
	port=$(bed_port)
	setsid bash -c "set -m
		$IBTRAFFIC -s -d rxe0 -g 0 -p $port -q $1 > $T/server.out 2> $T/server.err &
		s=\$!; echo \$s > $T/server.pid
		for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
		$IBTRAFFIC -c 127.0.0.1 -d rxe1 -g 0 -p $port -q $1 ${*:2} > $T/client.out 2> $T/client.err &
		c=\$!; echo \$c > $T/client.pid
		wait \$c; echo \$? > $T/client.rc
		wait \$s; echo \$? > $T/server.rc" < /dev/null &
	TRAFFIC_JOB=$!
	for _ in $(seq 100); do [ -s "$T/client.pid" ] && break; sleep 0.1; done
	TRAFFIC_SERVER_PID=$(cat "$T/server.pid")
	TRAFFIC_CLIENT_PID=$(cat "$T/client.pid")
}
# traffic_wait_progress N: the client (started with -P) has printed N progress
# lines: its QPs are connected and traffic flows.
traffic_wait_progress() {
	local n
	for _ in $(seq 300); do
		# no output file yet: 0 lines (not an empty string for "[ -ge ]")
		n=$(grep -c '"event":"progress"' "$T/client.out" 2> /dev/null)
		[ "${n:-0}" -ge "$1" ] && return 0
		sleep 0.1
	done
	fail "the client printed fewer than $1 progress lines: $(tail -n 3 "$T/client.err")"
}
# traffic_wait_done: the session's shell wrote both exit statuses (it may not be
# this shell's child any more: a restored job's parent is init)
traffic_wait_done() {
	for _ in $(seq 600); do [ -s "$T/server.rc" ] && return 0; sleep 0.1; done
	fail "the traffic generator did not finish: $(tail -n 3 "$T/client.err" "$T/server.err")"
}

# Two or more nodes (tests/vm/run --nodes N; the cases in tests/vm/multinode/).
# guest-init gives every node IBCKPT_NODE (0..N-1), IBCKPT_NODES, IBCKPT_SHARED
# (a host directory every node mounts read-write at the same path) and
# IBCKPT_NODE_IPS (node I's address on the link is word I); rxe0 is each node's
# device on the link. The helpers below keep their files under
# $IBCKPT_SHARED/.vm/, which tests/vm/run empties at start; they poll (9p has
# no notification across guests; create and rename are atomic on the host)
# and fail the case at once when another node has failed (.vm/abort), or after
# NODE_TIMEOUT seconds (default 120).
NODE_TIMEOUT=${NODE_TIMEOUT:-120}
# node_is I: this is node I
node_is() { [ "${IBCKPT_NODE:-0}" = "$1" ]; }
# node_ip I: node I's IPv4 address on the link
node_ip() {
	local a=(${IBCKPT_NODE_IPS:-})
	[ -n "${a[$1]:-}" ] || { echo "node_ip: no node $1 (IBCKPT_NODE_IPS='${IBCKPT_NODE_IPS:-}')" >&2; return 1; }
	echo "${a[$1]}"
}
# _node_aborted: another node failed (fails the case, naming it)
_node_aborted() {
	local who st
	[ -e "$IBCKPT_SHARED/.vm/abort" ] || return 0
	read -r who st < "$IBCKPT_SHARED/.vm/abort"
	fail "$1: $who failed (status $st)"
}
# node_barrier NAME [TIMEOUT]: wait until every node reached the barrier NAME.
# A name serves once per run (a second use on one node fails the case).
node_barrier() {
	local d=$IBCKPT_SHARED/.vm/barrier/$1 end=$((SECONDS + ${2:-$NODE_TIMEOUT})) f
	mkdir -p "$d" || fail "barrier $1: cannot create $d"
	[ -e "$d/node$IBCKPT_NODE" ] && fail "barrier $1 used twice"
	: > "$d/node$IBCKPT_NODE" || fail "barrier $1: cannot write $d"
	while :; do
		f=("$d"/node*)
		[ ${#f[@]} -ge "$IBCKPT_NODES" ] && return 0
		_node_aborted "barrier $1"
		[ $SECONDS -lt $end ] ||
			fail "barrier $1: ${#f[@]} of $IBCKPT_NODES nodes after ${2:-$NODE_TIMEOUT} s ($(cd "$d" && echo node*))"
		sleep 0.05
	done
}
# node_put KEY VALUE: publish VALUE (one line) under KEY to every node
node_put() {
	local d=$IBCKPT_SHARED/.vm/kv
	mkdir -p "$d" && printf '%s\n' "$2" > "$d/.$1.node$IBCKPT_NODE" &&
		mv -f "$d/.$1.node$IBCKPT_NODE" "$d/$1" || fail "node_put $1"
}
# node_get KEY [TIMEOUT]: print the value published under KEY, waiting for it;
# status 1 (and a message) if none came: v=$(node_get KEY) || fail ...
node_get() {
	local f=$IBCKPT_SHARED/.vm/kv/$1 end=$((SECONDS + ${2:-$NODE_TIMEOUT})) v
	until [ -e "$f" ]; do
		[ -e "$IBCKPT_SHARED/.vm/abort" ] && { echo "node_get $1: $(cat "$IBCKPT_SHARED/.vm/abort") failed" >&2; return 1; }
		[ $SECONDS -lt $end ] || { echo "node_get $1: nothing published in ${2:-$NODE_TIMEOUT} s" >&2; return 1; }
		sleep 0.05
	done
	IFS= read -r v < "$f"
	printf '%s\n' "$v"
}

# slurm_up: Slurm on every node of the bed (Debian's slurm-wlm 22.05 and
# munge, scripts/install-deps vm): munged everywhere, slurmctld on node 0,
# slurmd on each node (named nodeI, as the bed's hostnames), cgroup v2 with
# IgnoreSystemd (no systemd in the guest), proctrack/cgroup: a step's tasks
# are in .../nodeI_slurmstepd.scope/job_J/step_S/user. Returns once node 0
# sees every node idle. Configuration and logs in /etc/slurm and /run/slurm
# (the guest's own); a failure prints the daemons' logs.
slurm_up() {
	local j s end
	command -v slurmd > /dev/null && command -v munged > /dev/null ||
		fail "Slurm is not installed (scripts/install-deps vm)"
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
	mkdir -p /sys/fs/cgroup/system.slice /etc/slurm /run/slurm || fail "slurm_up: mkdir"
	{
		cat <<-EOC
		ClusterName=ibckpt
		SlurmctldHost=node0($(node_ip 0))
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		StateSaveLocation=/run/slurm/ctld
		SlurmdSpoolDir=/run/slurm/d
		SlurmctldPidFile=/run/slurm/slurmctld.pid
		SlurmdPidFile=/run/slurm/slurmd.pid
		SlurmctldLogFile=/run/slurm/slurmctld.log
		SlurmdLogFile=/run/slurm/slurmd.log
		ProctrackType=proctrack/cgroup
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		MpiDefault=none
		ReturnToService=2
		SlurmdParameters=config_overrides
		MessageTimeout=60
		TCPTimeout=10
		SlurmdTimeout=600
		SlurmctldTimeout=600
		UnkillableStepTimeout=120
		InactiveLimit=0
		KillWait=5
		EOC
		for ((j = 0; j < IBCKPT_NODES; j++)); do
			echo "NodeName=node$j NodeAddr=$(node_ip "$j") CPUs=2 RealMemory=500 State=UNKNOWN"
		done
		echo "PartitionName=bed Nodes=node[0-$((IBCKPT_NODES - 1))] Default=YES MaxTime=INFINITE State=UP"
	} > /etc/slurm/slurm.conf
	printf '%s\n' CgroupPlugin=cgroup/v2 IgnoreSystemd=yes CgroupAutomount=yes \
		ConstrainCores=no ConstrainRAMSpace=no ConstrainDevices=no > /etc/slurm/cgroup.conf
	install -d -o munge -g munge -m 0755 /run/munge &&
		install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge ||
		fail "slurm_up: munge's directories"
	runuser -u munge -- /usr/sbin/munged ||
		fail "munged did not start: $(tail -n 5 /var/log/munge/munged.log)"
	node_barrier slurm.munge
	if node_is 0; then
		slurmctld || fail "slurmctld did not start: $(tail -n 5 /run/slurm/slurmctld.log)"
	fi
	slurmd || fail "slurmd did not start: $(tail -n 5 /run/slurm/slurmd.log)"
	if node_is 0; then
		end=$((SECONDS + 120))
		while :; do
			s=$(sinfo -h -N -o %T 2> /dev/null | grep -c '^idle')
			[ "$s" = "$IBCKPT_NODES" ] && break
			[ $SECONDS -lt $end ] ||
				fail "Slurm: $s of $IBCKPT_NODES nodes idle after 120 s: $(sinfo -N 2>&1; tail -n 5 /run/slurm/slurmctld.log)"
			sleep 0.2
		done
	fi
	node_barrier slurm.up
}
