#!/bin/bash
# The provider loads into rdma-core 44's libibverbs through RDMAV_DRIVERS, is
# consulted for every device, and (at this stage) leaves each device to its
# vendor provider: unmodified ibv_rc_pingpong still works with it loaded.
# IBCKPT_DISABLE=1 keeps it out of the way entirely.
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
IBCKPT_DEBUG=1 ibv_devices > "$T/out" 2> "$T/err"
cat "$T/err"
grep -q 'ibckpt: provider registered (rdma-core 44)' "$T/err" || fail "provider did not register"
expect_eq 2 "$(grep -c 'device left to its vendor provider' "$T/err")" "devices consulted"
grep -q rxe1 "$T/out" || fail "rxe1 not listed"
IBCKPT_DEBUG=1 IBCKPT_DISABLE=1 ibv_devices > /dev/null 2> "$T/err2"
grep -q 'left to its vendor' "$T/err2" && fail "IBCKPT_DISABLE=1 ignored"
port=$(bed_port)
timeout 60 ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 100 > "$T/srv" 2>&1 &
bed_wait_listen "$port"
timeout 60 ibv_rc_pingpong -d rxe1 -g 0 -p "$port" -n 100 127.0.0.1 > "$T/cli" 2>&1 ||
	fail "pingpong with the provider loaded: $(cat "$T/cli")"
wait $! || fail "pingpong server: $(cat "$T/srv")"
pass
