#!/bin/bash
# Installed with `make install`, the provider is used exactly when
# RDMAV_DRIVERS=ibckpt names it (loaded first, so it always wins over the
# vendor); the installed ibckpt.driver alone never activates it, since the
# order of /etc/libibverbs.d is undefined.
. "$(dirname "$0")/lib.sh"
make -s -C provider install > "$T/install.log" 2>&1 || fail "make install: $(cat "$T/install.log")"
[ -f /etc/libibverbs.d/ibckpt.driver ] || fail "ibckpt.driver not installed"

pingpong() {
	local port
	port=$(bed_port)
	timeout 60 ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 50 > "$T/srv" 2>&1 &
	bed_wait_listen "$port"
	env "$@" IBCKPT_STATS=1 timeout 60 ibv_rc_pingpong -d rxe1 -g 0 -p "$port" -n 50 \
		127.0.0.1 > "$T/cli" 2>&1 || fail "pingpong ($*): $(cat "$T/cli")"
	wait $! || fail "pingpong server: $(cat "$T/srv")"
	grep -q '50 iters' "$T/cli" || fail "no 50 iterations ($*)"
}
for i in 1 2 3; do
	pingpong RDMAV_DRIVERS=ibckpt
	grep -Eq 'ibckpt: stats rxe1: post_send [1-9]' "$T/cli" ||
		fail "run $i with RDMAV_DRIVERS=ibckpt did not go through ibckpt"
	pingpong IBCKPT_DEBUG=1
	grep -q 'ibckpt: stats' "$T/cli" && fail "run $i went through ibckpt without RDMAV_DRIVERS"
	grep -q 'not named in RDMAV_DRIVERS' "$T/cli" || fail "the installed provider was not loaded"
done
make -s -C provider uninstall
[ -f /etc/libibverbs.d/ibckpt.driver ] && fail "uninstall left ibckpt.driver"
pass
