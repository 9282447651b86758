#!/bin/bash
# The traffic generator itself (tests/traffic/) is sound on the bare test bed (no ibckpt):
# RC SEND/SRQ, WRITE WITH IMM, READ, fetch-and-add and UD, all verified.
. "$(dirname "$0")/lib.sh"
traffic_start_server rxe0 8
traffic_run_client rxe1 8 -t 4
expect_eq 0 "$TRAFFIC_CLIENT_RC" "client exit status"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status"
traffic_expect_ops 1000
pass
