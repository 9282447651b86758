#!/bin/bash
# The test bed carries RDMA traffic: unmodified perftest ib_send_bw between rxe0 and rxe1.
. "$(dirname "$0")/lib.sh"
port=$(bed_port)
timeout 90 ib_send_bw -d rxe0 -x 0 -p "$port" -n 200 -F > "$T/srv.log" 2>&1 &
srv=$!
bed_wait_listen "$port"
timeout 90 ib_send_bw -d rxe1 -x 0 -p "$port" -n 200 -F 127.0.0.1 > "$T/cli.log" 2>&1
crc=$?
wait $srv
src=$?
cat "$T/cli.log"
expect_eq 0 "$crc" "client exit status"
expect_eq 0 "$src" "server exit status"
grep -Eq '^ *65536 +200 ' "$T/cli.log" || fail "no 64 KiB result line"
pass
