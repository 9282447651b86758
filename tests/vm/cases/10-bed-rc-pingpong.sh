#!/bin/bash
# The test bed carries RDMA traffic: unmodified ibv_rc_pingpong between rxe0 and rxe1.
. "$(dirname "$0")/lib.sh"
port=$(bed_port)
timeout 60 ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 200 > "$T/srv.log" 2>&1 &
srv=$!
bed_wait_listen "$port"
timeout 60 ibv_rc_pingpong -d rxe1 -g 0 -p "$port" -n 200 127.0.0.1 > "$T/cli.log" 2>&1
crc=$?
wait $srv
src=$?
cat "$T/cli.log"
expect_eq 0 "$crc" "client exit status"
expect_eq 0 "$src" "server exit status"
grep -q '200 iters' "$T/cli.log" || fail "client did not report 200 iterations"
pass
