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
# traffic_run_client DEV QPS [ibtraffic options]: runs to completion
traffic_run_client() {
	timeout 120 "$IBTRAFFIC" -c 127.0.0.1 -d "$1" -g 0 -p "$TRAFFIC_PORT" -q "$2" "${@:3}" \
		> "$T/client.out" 2> "$T/client.err"
	TRAFFIC_CLIENT_RC=$?
	cat "$T/client.err" >&2
}
# Sets TRAFFIC_SERVER_RC. Not for $(...): a subshell cannot wait for the
# server, which is this shell's child (a regression: status "-1" under load).
traffic_wait_server() {
	wait "$TRAFFIC_SERVER"
	TRAFFIC_SERVER_RC=$?
	cat "$T/server.err" >&2
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
	local i
	for i in $(seq 100); do
		[ -s "$WL_FILE" ] && [ "$("$WORKLOAD" snap "$WL_FILE" | wc -w)" -gt 1 ] && break
		sleep 0.05
	done
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
	for _ in $(seq 300); do
		[ "$(grep -c '"event":"progress"' "$T/client.out" 2> /dev/null)" -ge "$1" ] && return 0
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
