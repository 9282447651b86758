#!/bin/bash
# A reacquire that fails. In place first: the generator's session (server
# on rxe0, client on rxe1, as in 63) released, then reacquired with --map
# rxe1=rxe9 and --map rxe0=rxe9 (one process cannot open the device,
# possibly after the other re-created everything) and with the fault below:
# each is refused and undone in every process (ABORT: the job is released
# as before and no process holds a device), and the next reacquire works.
# Then after criu restored the job (restart.rst), with and without restart
# --wait: the session runs with IBCKPT_FAULT_REACQUIRE=$T/fail, so that its
# providers refuse the REACQUIRE while that file exists (the environment
# comes back with the restore: only the file can change the answer).
# Checkpointed to disk, then restarted with the file there: `ibckpt
# restart` must exit 1, say the provider's reason, that the restored job was
# killed and that the directory can be restarted again; restore.pid names
# the session's leader, and none of the job's pids (nor any process of its
# session) may exist when it returns (a zombie holds its pid: the CLI waits
# until init reaped them). Then, without the file and with the job's output
# files put back (criu needs the sizes it dumped), the same directory
# restarts and the traffic goes on; the generator verifies every message at
# the end.
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
export IBCKPT_FAULT_REACQUIRE=$T/fail
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
# gone means reaped too: a zombie's pid is still taken
gone() { for p in "$@"; do ! alive "$p" || return 1; done; }

# In place first: a reacquire that fails part way (one process cannot open
# the device the map names, after the other re-created its objects; or
# refuses, fault injected) is undone everywhere (ABORT): the job is released
# as before, holds nothing of a device, and the next reacquire works.
holds_device() { ls -l "/proc/$1/fd" | grep -q infiniband/uverbs; }
freeze_release "$sid" "$T/ip" "$server" "$client"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
for m in rxe1=rxe9 rxe0=rxe9 fault; do
	args=(--map "$m")
	[ "$m" = fault ] && { touch "$T/fail"; args=(); }
	refused 1 "released as it was before this reacquire" ibckpt reacquire -D "$T/ip" "${args[@]}"
	for p in "$server" "$client"; do
		! holds_device "$p" || fail "after the failed reacquire ($m), process $p holds a device"
	done
	echo "reacquire ($m) refused and undone: $(tr '\n' ' ' < "$T/e")"
done
rm "$T/fail"
ibckpt reacquire -D "$T/ip" > /dev/null 2> "$T/qe" || fail "reacquire after the failures: $(cat "$T/qe")"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))

dir=/run/ibckpt-failed
ibckpt checkpoint -D "$dir" --session "$sid" > "$T/c" 2> "$T/ce" ||
	fail "checkpoint: $(cat "$T/ce") $(tail -n 20 "$dir/dump.log" 2> /dev/null)"
grep -q "the job is gone" "$T/c" || fail "checkpoint said: $(cat "$T/c")"
wait "$sid" 2> /dev/null	# our child: reap it
gone "$sid" "$server" "$client" || fail "the checkpointed job still runs"
# criu restores open files only as they were at the dump: keep the job's outputs
mkdir "$T/files" && cp -p "$T"/*.out "$T"/*.err "$T/files/"

touch "$T/fail"
t0=$(date +%s%N)
refused 1 "the restored job was killed" ibckpt restart -D "$dir"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "fault injected (IBCKPT_FAULT_REACQUIRE)" "$T/e" ||
	fail "the provider's reason is not said: $(cat "$T/e")"
grep -q "$dir is unchanged and can be restarted again" "$T/e" ||
	fail "the restart does not say the directory can be restarted: $(cat "$T/e")"
# criu restored the session's leader as the root, and the CLI knew it
expect_eq "$sid" "$(cat "$dir/restore.pid")" "the restored root (restore.pid)"
gone "$sid" "$server" "$client" ||
	fail "the failed restart left the job: $(ps -o pid,stat,cmd -p "$sid,$server,$client")"
[ -z "$(ps -o pid= -s "$sid")" ] || fail "processes of session $sid left: $(ps -o pid,stat,cmd -s "$sid")"
# the restored side channel ended quietly (repair mode), as criu's dump
# ends it: a TIME_WAIT would hold its address pair and the next restore
# could not connect it back (regression: "Can't connect inet socket back:
# Cannot assign requested address" when the restart came within a second)
tw=$(ss -Htan "( sport = :$port or dport = :$port )")
[ -z "$tw" ] || fail "the killed job's connection lingers: $tw"
echo "the failed restart took $ms ms: $(tr '\n' ' ' < "$T/e")"
# the same with --wait, the restored root this command's child: it reaps
# what it killed (regression: "process P is still there 10 s after
# SIGKILL (its threads' states: Z)", its own zombie)
cp -p "$T"/files/* "$T/"
refused 1 "$dir is unchanged and can be restarted again" timeout 60 ibckpt restart -D "$dir" --wait
grep -q "still there" "$T/e" && fail "restart --wait left its zombie: $(cat "$T/e")"
gone "$sid" "$server" "$client" ||
	fail "the failed restart --wait left the job: $(ps -o pid,stat,cmd -p "$sid,$server,$client")"

rm "$T/fail"
cp -p "$T"/files/* "$T/"
t0=$(date +%s%N)
ibckpt restart -D "$dir" > "$T/r" 2> "$T/re" ||
	fail "restart the same directory again: $(cat "$T/re") $(grep -B5 Error "$dir/restore.log" | tail -n 30)"
echo "the restart again took $((($(date +%s%N) - t0) / 1000000)) ms"
grep -q "2 processes restarted" "$T/r" || fail "restart said: $(cat "$T/r")"
for p in $sid $server $client; do
	alive "$p" || fail "restart: process $p is not back"
done
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
kill -INT "$client"
for _ in $(seq 300); do [ -s "$T/server.rc" ] && break; sleep 0.1; done
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 1000
echo "a restart refused by its reacquire left nothing running; the same directory restarted"
pass
