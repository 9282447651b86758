#!/bin/bash
# Checkpoint to disk and restart through Debian's stock criu (restart.rst):
# the traffic generator's server (rxe0) and client (rxe1), their shell and
# its TCP side channel, as one session. `ibckpt checkpoint` freezes,
# releases, thaws and has criu dump the job, which is gone afterwards;
# `ibckpt restart` has criu restore it (same pids) and reacquires every
# provider: new QPNs and keys behind the old ones, traffic resumes. 20
# rounds at random moments, every other one with -j (one JSON object each),
# the last onto the other device each (--map);
# then the job's snapshot matches the kernel's view (new real IDs,
# ibckpt-xcheck); a restart is refused, nothing restored, for a missing
# device (--map rxe1=rxe9), a directory being restarted, a job still
# running; the same directory restarts twice (the job killed in between,
# its output files put back as criu requires).
# The generator verifies every message at the end: nothing lost,
# duplicated, reordered or corrupted, RDMA reads, writes and atomics
# executed once.
# vm-timeout: 900
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
port=$(bed_port)
# stdin from /dev/null: no terminal in the job (criu would want --shell-job)
setsid bash -c "
	$IBTRAFFIC -s -d rxe0 -g 0 -p $port -q 4 > $T/server.out 2> $T/server.err &
	s=\$!; echo \$s > $T/server.pid
	for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
	$IBTRAFFIC -c 127.0.0.1 -d rxe1 -g 0 -p $port -q 4 -P 0.2 > $T/client.out 2> $T/client.err &
	c=\$!; echo \$c > $T/client.pid
	wait \$c; echo \$? > $T/client.rc
	wait \$s; echo \$? > $T/server.rc" < /dev/null &
sid=$!
for _ in $(seq 100); do [ -s "$T/client.pid" ] && break; sleep 0.1; done
server=$(cat "$T/server.pid") client=$(cat "$T/client.pid")
traffic_wait_progress 2
alive() { kill -0 "$1" 2> /dev/null; }
for i in $(seq 20); do
	sleep "0.$((RANDOM % 5))"
	dir=/run/ibckpt-ck$i
	# every other round in JSON (-j): one object, the command's report only
	j=()
	[ $((i % 2)) = 0 ] && j=(-j)
	ibckpt "${j[@]}" checkpoint -D "$dir" --session "$sid" > "$T/c" 2> "$T/ce" ||
		fail "checkpoint $i: $(cat "$T/ce") $(tail -n 20 "$dir/dump.log" 2> /dev/null)"
	if [ ${#j[@]} = 0 ]; then
		grep -q "the job is gone" "$T/c" || fail "checkpoint $i said: $(cat "$T/c")"
	else	# one line each; jq reads them all at the end
		[ "$(wc -l < "$T/c")" = 1 ] || fail "checkpoint -j $i printed: $(cat "$T/c")"
		cat "$T/c" >> "$T/cj"
	fi
	[ "$i" = 1 ] && wait "$sid" 2> /dev/null	# our child the first time: reap it
	for p in $sid $server $client; do
		! alive "$p" || fail "checkpoint $i: process $p still runs"
	done
	[ -s "$dir/criu/inventory.img" ] || fail "checkpoint $i: no criu images"
	map=()
	[ "$i" = 20 ] && map=(--map rxe0=rxe1,rxe1=rxe0)
	ibckpt "${j[@]}" restart -D "$dir" "${map[@]}" > "$T/r" 2> "$T/re" ||
		fail "restart $i: $(cat "$T/re") $(tail -n 20 "$dir/restore.log" 2> /dev/null)"
	if [ ${#j[@]} = 0 ]; then
		grep -q "2 processes restarted" "$T/r" || fail "restart $i said: $(cat "$T/r")"
	else
		[ "$(wc -l < "$T/r")" = 1 ] || fail "restart -j $i printed: $(cat "$T/r")"
		cat "$T/r" >> "$T/rj"
	fi
	for p in $sid $server $client; do
		alive "$p" || fail "restart $i: process $p is not back"
	done
	n=$(grep -c '"event":"progress"' "$T/client.out")
	traffic_wait_progress $((n + 2))	# and its traffic flows
	[ "$i" -lt 20 ] && rm -rf "$dir"
done
# each -j round printed its report only, one JSON object
jq -e -s 'length == 10 and all(.[]; .checkpointed and .left_running == false)' "$T/cj" > /dev/null ||
	fail "checkpoint -j printed: $(cat "$T/cj")"
jq -e -s 'length == 10 and all(.[]; .restarted == 2)' "$T/rj" > /dev/null ||
	fail "restart -j printed: $(cat "$T/rj")"
# the server's QPs are on rxe1 now
rdma -j res show qp | jq -e --argjson p "[$(ls /proc/$server/task | paste -sd, -)]" \
	'[.[] | select(.pid as $x | $p | index($x)) | .ifname] | unique == ["rxe1"]' \
	> /dev/null || fail "the server's QPs are not on rxe1: $(rdma res show qp)"
ibckpt freeze --persist 60 --session "$sid" > /dev/null 2> "$T/fe" || fail "freeze: $(cat "$T/fe")"
ibckpt -j dump --session "$sid" > "$T/dump.json" 2> "$T/de" || fail "dump: $(cat "$T/de")"
tools/ibckpt-xcheck "$T/dump.json" > "$T/x" 2>&1 || fail "the restarted job's snapshot differs from the kernel's view: $(cat "$T/x")"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
refused 1 "the job still runs" ibckpt restart -D /run/ibckpt-ck20

# refusals before criu runs, and the same directory restarted twice
dir=/run/ibckpt-twice
ibckpt checkpoint -D "$dir" --session "$sid" > /dev/null 2> "$T/ce" || fail "checkpoint: $(cat "$T/ce")"
# criu restores open files only as they were at the dump: keep the job's outputs
mkdir "$T/files" && cp -p "$T"/*.out "$T"/*.err "$T/files/"
refused 1 "used device rxe1, mapped to rxe9, which does not exist" \
	ibckpt restart -D "$dir" --map rxe1=rxe9
alive "$server" && fail "a refused restart restored the server"
flock "$dir/ibckpt-job" sleep 3 &
lockpid=$!
sleep 0.5
refused 1 "being restarted by another ibckpt" ibckpt restart -D "$dir"
wait $lockpid
ibckpt restart -D "$dir" > /dev/null 2> "$T/re" || fail "restart: $(cat "$T/re")"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
# Killed processes close their TCP side channel with FINs: the connection
# then lingers in TIME_WAIT for 60 s, and criu cannot restore a connection
# whose address pair is taken ("Can't connect inet socket back: Cannot
# assign requested address", restart.rst). No TIME_WAIT while we kill.
tw=$(sysctl -n net.ipv4.tcp_max_tw_buckets)
sysctl -qw net.ipv4.tcp_max_tw_buckets=0
kill -KILL "$sid" "$server" "$client"
# gone means reaped too: a zombie's pid is still taken (init reaps them)
gone() { for p in "$@"; do ! alive "$p" || return 1; done; }
for _ in $(seq 100); do gone "$sid" "$server" "$client" && break; sleep 0.1; done
gone "$sid" "$server" "$client" || fail "the killed job is still there: $(ps -o pid,stat,cmd -p "$sid,$server,$client")"
tcp_left() { ss -Htan "( sport = :$port or dport = :$port )"; }
for _ in $(seq 100); do [ -z "$(tcp_left)" ] && break; sleep 0.1; done
sysctl -qw net.ipv4.tcp_max_tw_buckets="$tw"
[ -z "$(tcp_left)" ] || fail "the killed job's TCP connections linger: $(tcp_left)"
cp -p "$T"/files/* "$T/"
# criu's own error is quoted when it fails (nothing restored)
printf '#!/bin/sh\necho "(00.01) Error (criu/cr-restore.c:42): a made-up failure" >&2\nexit 1\n' > "$T/badcriu"
chmod +x "$T/badcriu"
IBCKPT_CRIU=$T/badcriu refused 1 "criu: .*cr-restore.c:42.: a made-up failure" \
	ibckpt restart -D "$dir"
ibckpt restart -D "$dir" > /dev/null 2> "$T/re" ||
	fail "restart the same directory again: $(cat "$T/re") $(grep -B5 Error "$dir/restore.log" | tail -n 30)"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
kill -INT "$client"
for _ in $(seq 300); do [ -s "$T/server.rc" ] && break; sleep 0.1; done
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 1000
echo "22 checkpoints to disk and restarts through criu under traffic (one on swapped devices, one directory twice)"
pass
