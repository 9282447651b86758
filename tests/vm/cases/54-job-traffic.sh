#!/bin/bash
# The traffic generator's two processes in two process groups of one session
# (a shell with job control started them), frozen together by --session 30
# times at random moments under full traffic: both providers quiesce before
# any thread parks, nothing moves while frozen (the client uses no CPU), and
# the generator verifies every message at the end (sequence, checksum,
# atomics, UD).
# vm-timeout: 900
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
traffic_start_session 8
sid=$TRAFFIC_JOB server=$TRAFFIC_SERVER_PID client=$TRAFFIC_CLIENT_PID
sleep 1
read -r ssid spg <<< "$(ps -o sid=,pgid= -p "$server")"
read -r csid cpg <<< "$(ps -o sid=,pgid= -p "$client")"
[ "$ssid" = "$sid" ] && [ "$csid" = "$sid" ] && [ "$spg" != "$cpg" ] ||
	fail "not two groups of one session: server $ssid/$spg, client $csid/$cpg, session $sid"
drained=0
for i in $(seq 30); do
	sleep "0.0$((RANDOM % 10))"
	ibckpt -j freeze --timeout 10000 --persist 60 --session "$sid" > "$T/f" 2> "$T/fe" ||
		fail "cycle $i: $(cat "$T/fe")"
	json_get v "$T/f" providers
	[ "$v" = 2 ] || fail "cycle $i: $v providers quiesced: $(cat "$T/f")"
	json_get v "$T/f" drained
	drained=$((drained + v))
	a=$(cut -d' ' -f14-15 "/proc/$client/stat")
	sleep 0.2
	b=$(cut -d' ' -f14-15 "/proc/$client/stat")
	[ "$a" = "$b" ] || fail "cycle $i: the client used CPU while frozen ($a -> $b)"
	ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "cycle $i: thaw: $(cat "$T/te")"
done
kill -INT "$client"
wait "$sid"
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 1000
echo "30 freezes of both processes by --session, $drained completions drained"
pass
