#!/bin/bash
# The verifying traffic generator (RC SEND on an SRQ, WRITE WITH IMM, READ,
# fetch-and-add, UD; signaled and unsignaled; a polling client and an
# event-driven server) runs through ibckpt on both sides with no error, at
# no less than half the bare run's rate.
. "$(dirname "$0")/lib.sh"
rate() { grep '"event":"final"' "$T/client.out" | jq '(.sends + .writes + .reads + .atomics + .ud)'; }

traffic_start_server rxe0 8
traffic_run_client rxe1 8 -t 4
expect_eq 0 "$TRAFFIC_CLIENT_RC" "bare client exit status"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "bare server exit status"
bare=$(rate)

export RDMAV_DRIVERS=$PWD/provider/libibckpt IBCKPT_STATS=1
traffic_start_server rxe0 8
traffic_run_client rxe1 8 -t 4
expect_eq 0 "$TRAFFIC_CLIENT_RC" "client exit status through ibckpt"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status through ibckpt"
traffic_expect_ops 1000
stacked=$(rate)
grep -Eq 'ibckpt: stats rxe1: post_send [1-9]' "$T/client.err" || fail "client not through ibckpt"
grep -Eq 'ibckpt: stats rxe0: .*cq_events [1-9]' "$T/server.err" ||
	fail "server's completion events not through ibckpt"
echo "verified operations in 4 s: bare $bare, through ibckpt $stacked"
[ $((stacked * 2)) -ge "$bare" ] || fail "through ibckpt $stacked ops, bare $bare: more than 2x slower"
pass
