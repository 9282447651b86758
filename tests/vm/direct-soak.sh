#!/bin/bash
# Not a test case: vm/50's traffic without ibckpt, both processes paused and
# resumed at random moments with SIGSTOP/SIGCONT, to tell soft-RoCE's own
# faults from ibckpt's (Documentation/testing.rst). In the VM:
#   tests/vm/run --timeout 2700 -- env SOAK_SECS=2100 tests/vm/direct-soak.sh
# -L 0: the generator tolerates no fetch-and-add without its result.
. "$(dirname "$0")/cases/lib.sh"
secs=${SOAK_SECS:-2100}
traffic_start_server rxe0 8
setsid "$IBTRAFFIC" -c 127.0.0.1 -d rxe1 -g 0 -p "$TRAFFIC_PORT" -q 8 -L 0 \
	> "$T/client.out" 2> "$T/client.err" &
client=$!
sleep 1
end=$((SECONDS + secs))
n=0
while [ $SECONDS -lt $end ] && kill -0 "$client" 2>/dev/null; do
	sleep "0.0$((RANDOM % 10))"
	for g in $TRAFFIC_SERVER $client; do kill -STOP -- -"$g"; done
	sleep "0.0$((RANDOM % 5))"
	for g in $TRAFFIC_SERVER $client; do kill -CONT -- -"$g"; done
	n=$((n + 1))
done
kill -INT "$client"
wait "$client"
crc=$?
cat "$T/client.err" >&2
traffic_wait_server
echo "direct soak: $n pauses, client rc $crc, server rc $TRAFFIC_SERVER_RC"
tail -n 3 "$T/client.out"
expect_eq 0 "$crc" "client exit status"
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status"
pass
