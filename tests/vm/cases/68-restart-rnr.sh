#!/bin/bash
# An unsignaled send stuck on RNR (its receiver posted no receive) is never
# forgotten by a checkpoint (restart.rst, "Exactly once"): with the send
# retried for ever, `ibckpt checkpoint --leave-running` is refused (exit 1,
# saying requests are in flight), the job is not left frozen and the program
# runs on; once the receive is posted, the message arrives intact
# (tests/provider/rnrcheck). On rxe the peers' PSN check already refuses it
# (rxe's send PSN stays past the NAKed packet while it waits); the
# provider's own count of the PSNs posted (the unit test
# release_waits_for_unsent_requests in provider/tests) covers devices that rewind it.
# vm-timeout: 300
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
setsid bash -c "tests/provider/bin/rnrcheck rxe0 $T/go > $T/out 2> $T/err; echo \$? > $T/rc" \
	< /dev/null &
sid=$!
for _ in $(seq 100); do grep -q ready "$T/out" 2> /dev/null && break; sleep 0.1; done
grep -q ready "$T/out" || fail "rnrcheck is not ready: $(cat "$T/err")"
refused 1 "in flight\|not all transmitted" \
	ibckpt checkpoint -D "$T/ck" --leave-running --session "$sid"
echo "refused: $(tr '\n' ' ' < "$T/e")"
ibckpt -j status --session "$sid" 2> /dev/null | grep -q '"state":"frozen"' &&
	fail "the job is left frozen"
touch "$T/go"
for _ in $(seq 200); do [ -s "$T/rc" ] && break; sleep 0.1; done
expect_eq 0 "$(cat "$T/rc" 2> /dev/null)" "rnrcheck's exit status ($(cat "$T/err"))"
cat "$T/out"
pass
