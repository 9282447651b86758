#!/bin/bash
# Runs on each node of a two-node bed (tests/bench/run starts it with
# tests/vm/run --nodes 2): what a freeze, a thaw, a checkpoint and a restart
# of a job cost on one node and, as one job, on two (restart.rst, "A job on
# several nodes"), in the same run. The job: the traffic generator, 4 RC QPs
# and 1 UD QP each side, under traffic; on one node its server and client
# both on node 0's rxe0, on two its server on node 0 and its client on node
# 1. Medians of REPS rounds, ms as each node's CLI sees the command (on two
# nodes a command returns once every node passed its barriers). Checkpoints
# go to the shared 9p directory (the directory every node must see) in both.
# The generator verifies every message.
#   tests/bench/nodes-latency.sh [REPS]
set -u
reps=${1:-3}
. tests/vm/cases/lib.sh
[ "${IBCKPT_NODES:-1}" -ge 2 ] || { echo "needs two nodes: tests/vm/run --nodes 2" >&2; exit 1; }
export RDMAV_DRIVERS=$PWD/provider/libibckpt
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
IBT=$PWD/$IBTRAFFIC
me=$IBCKPT_NODE
SH=$IBCKPT_SHARED
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms() {
	local t0=$EPOCHREALTIME
	"$@" > /dev/null 2> "$T/err" || { echo "FAILED: node $me: $* $(cat "$T/err")" >&2; exit 1; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}
alive() { kill -0 "$1" 2> /dev/null; }
# gone DIR: every pid criu dumped into DIR is free again
gone() {
	local p
	for _ in $(seq 100); do
		for p in $(cat "$1/pids"); do alive "$p" && break; done
		alive "$p" || return 0
		sleep 0.1
	done
	echo "FAILED: node $me: process $p of $1 is still there" >&2
	exit 1
}
# session NAME CMD: CMD in a session of its own, its pid in $T/NAME.pid
# (outputs in $T: an in-place restart finds them)
session() {
	local name=$1
	shift
	setsid bash -c "$* > $T/$name.out 2> $T/$name.err & echo \$! > $T/$name.pid
		wait \$!; echo \$? > $T/$name.rc" < /dev/null &
	SID=$!
	disown	# criu kills it at each checkpoint: no job notice; bash reaps it still
	for _ in $(seq 100); do [ -s "$T/$name.pid" ] && break; sleep 0.1; done
}
wait_progress() {	# FILE N
	for _ in $(seq 600); do
		[ "$(grep -c '"event":"progress"' "$1" 2> /dev/null)" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "FAILED: node $me: no traffic ($1)" >&2
	exit 1
}
verdict() {	# NAME...: each side exited 0
	local n
	for n in "$@"; do
		for _ in $(seq 300); do [ -s "$T/$n.rc" ] && break; sleep 0.1; done
		[ "$(cat "$T/$n.rc" 2> /dev/null)" = 0 ] ||
			{ echo "FAILED: node $me: $n's verdict: $(tail -n 3 "$T/$n.err")" >&2; exit 1; }
	done
}
: > "$T/f1"; : > "$T/t1"; : > "$T/c1"; : > "$T/r1"
: > "$T/f2"; : > "$T/t2"; : > "$T/c2"; : > "$T/r2"

# one node: the whole job, one session, on node 0
if node_is 0; then
	port=$(bed_port)
	setsid bash -c "
		$IBT -s -d rxe0 -g 0 -p $port -q 4 > $T/server.out 2> $T/server.err &
		s=\$!; echo \$s > $T/server.pid
		for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
		$IBT -c 127.0.0.1 -d rxe0 -g 0 -p $port -q 4 -P 0.2 > $T/client.out 2> $T/client.err &
		c=\$!; echo \$c > $T/client.pid
		wait \$c; echo \$? > $T/client.rc
		wait \$s; echo \$? > $T/server.rc" < /dev/null &
	sid1=$!
	disown
	for _ in $(seq 100); do [ -s "$T/client.pid" ] && break; sleep 0.1; done
	wait_progress "$T/client.out" 2
	for i in $(seq "$reps"); do
		ms ibckpt freeze --persist 60 --session "$sid1" >> "$T/f1"
		ms ibckpt thaw --session "$sid1" >> "$T/t1"
		sleep 0.3
		ms ibckpt checkpoint -D "$SH/ck1.$i" --session "$sid1" >> "$T/c1"
		gone "$SH/ck1.$i"
		ms ibckpt restart -D "$SH/ck1.$i" >> "$T/r1"
		wait_progress "$T/client.out" $(($(grep -c progress "$T/client.out") + 2))
		rm -rf "$SH/ck1.$i"
	done
	kill -INT "$(cat "$T/client.pid")"
	verdict client server
fi
node_barrier one-node

# two nodes: the server on node 0, the client on node 1, one job
RV=$SH/rendezvous CK=$SH/ck
if node_is 0; then
	port=$(bed_port)
	session server2 "$IBT -s -b 0.0.0.0 -d rxe0 -g 0 -p $port -q 4 -U 1000"
	bed_wait_listen "$port"
	node_put port "$port"
	sid=$SID
elif node_is 1; then
	port=$(node_get port) || exit 1
	session client2 "$IBT -c $(node_ip 0) -d rxe0 -g 0 -p $port -q 4 -P 0.2 -L 1000 -U 1000"
	sid=$SID
	wait_progress "$T/client2.out" 2
fi
node_barrier two-nodes.running
for i in $(seq "$reps"); do
	node_barrier "f.$i"
	if node_is 0 || node_is 1; then
		ms ibckpt freeze -D "$RV" --node "$me/2" --run "f$i" --persist 60 --session "$sid" >> "$T/f2"
		ms ibckpt thaw -D "$RV" --node "$me/2" --run "t$i" --session "$sid" >> "$T/t2"
	fi
	sleep 0.3
	node_barrier "c.$i"
	if node_is 0 || node_is 1; then
		ms ibckpt checkpoint -D "$CK" --node "$me/2" --run "c$i" --session "$sid" >> "$T/c2"
		gone "$CK/part.$me"
	fi
	node_barrier "r.$i"
	if node_is 0 || node_is 1; then
		ms ibckpt restart -D "$CK" --node "$me/2" --run "r$i" >> "$T/r2"
	fi
	node_is 1 && wait_progress "$T/client2.out" $(($(grep -c progress "$T/client2.out") + 2))
done
node_barrier two-nodes.done
if node_is 1; then
	kill -INT "$(cat "$T/client2.pid")"
	verdict client2
	node_put times1 "$(median < "$T/f2") $(median < "$T/t2") $(median < "$T/c2") $(median < "$T/r2")"
elif node_is 0; then
	verdict server2
	read -r f t c r <<< "$(node_get times1)" || exit 1
	printf '%-22s %10s %10s %14s %12s\n' job freeze_ms thaw_ms checkpoint_ms restart_ms
	printf '%-22s %10s %10s %14s %12s\n' "1 node (node 0)" "$(median < "$T/f1")" \
		"$(median < "$T/t1")" "$(median < "$T/c1")" "$(median < "$T/r1")"
	printf '%-22s %10s %10s %14s %12s\n' "2 nodes (node 0)" "$(median < "$T/f2")" \
		"$(median < "$T/t2")" "$(median < "$T/c2")" "$(median < "$T/r2")"
	printf '%-22s %10s %10s %14s %12s\n' "2 nodes (node 1)" "$f" "$t" "$c" "$r"
	echo "(medians of $reps rounds; ms as each node's CLI sees the command; images on the"
	echo " shared 9p directory in both; every message verified)"
fi
node_barrier end
