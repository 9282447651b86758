#!/bin/bash
# The provider loads into rdma-core 44's libibverbs through RDMAV_DRIVERS,
# finds the vendor provider of each device (rxe) with no code per vendor and
# stacks on both devices; IBCKPT_DISABLE=1 leaves every device to its vendor;
# with the vendor's .driver file removed it says so, does not crash, and
# claims nothing. ibv_rc_pingpong runs through it.
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
IBCKPT_DEBUG=1 ibv_devices > "$T/out" 2> "$T/err"
cat "$T/err"
grep -q "ibckpt: provider $(cat VERSION) registered (rdma-core 44)" "$T/err" || fail "provider did not register (with its version)"
expect_eq 2 "$(grep -c 'stacked on provider rxe' "$T/err")" "devices stacked"
grep -q 'vendor provider "rxe" in .*/librxe-rdmav34.so' "$T/err" || fail "vendor not named"
grep -q rxe1 "$T/out" || fail "rxe1 not listed"

IBCKPT_DEBUG=1 IBCKPT_DISABLE=1 ibv_devices > "$T/out2" 2> "$T/err2"
grep -q 'stacked on' "$T/err2" && fail "IBCKPT_DISABLE=1 ignored"
expect_eq 2 "$(grep -c 'IBCKPT_DISABLE set, left to its vendor provider' "$T/err2")" \
	"devices left alone"
grep -q rxe1 "$T/out2" || fail "rxe1 not listed with IBCKPT_DISABLE=1"

# No vendor provider for the device: a clear message, no crash, no device.
mv /etc/libibverbs.d/rxe.driver "$T/"
ibv_devinfo > "$T/out3" 2> "$T/err3"
rc=$?
mv "$T/rxe.driver" /etc/libibverbs.d/
cat "$T/err3"
# ibv_devinfo's own "No IB devices found" is status 255; a signal would be 129..159.
[ $rc -ne 0 ] && { [ $rc -le 128 ] || [ $rc -ge 160 ]; } ||
	fail "ibv_devinfo exited with status $rc without a vendor provider"
grep -q 'ibckpt: rxe0: no loaded provider claims kernel driver id 14; device not stacked' \
	"$T/err3" || fail "no clear message for a missing vendor provider"
grep -q 'hca_id' "$T/out3" && fail "a device was opened without its vendor provider"

port=$(bed_port)
timeout 60 ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 100 > "$T/srv" 2>&1 &
bed_wait_listen "$port"
IBCKPT_STATS=1 timeout 60 ibv_rc_pingpong -d rxe1 -g 0 -p "$port" -n 100 127.0.0.1 \
	> "$T/cli" 2>&1 || fail "pingpong through the provider: $(cat "$T/cli")"
wait $! || fail "pingpong server: $(cat "$T/srv")"
grep -q '100 iters' "$T/cli" || fail "client did not report 100 iterations"
grep -Eq 'ibckpt: stats rxe1: post_send [1-9]' "$T/cli" ||
	fail "the provider's statistics show no post_send: $(grep ibckpt "$T/cli")"
pass
