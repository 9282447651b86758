#!/bin/bash
# A QP reset and reused: the requests a reset discards (no completion comes
# for them) leave the provider's books too. resetcheck's 20 reset cycles,
# each filling the receive queue and posting an unsignaled write, work
# through ibckpt as directly; frozen afterwards with two receives posted, its
# snapshot lists those two and nothing of the cycles. Regression: ibckpt
# kept the discarded requests in its log, and the third cycle's receive was
# refused with ENOMEM.
. "$(dirname "$0")/lib.sh"
prov=$PWD/provider/libibckpt
x=tests/provider/bin/resetcheck
$x rxe0 > "$T/direct" 2>&1 || fail "resetcheck without ibckpt: $(cat "$T/direct")"
RDMAV_DRIVERS=$prov IBCKPT_STATS=1 $x rxe0 > "$T/stacked" 2>&1 ||
	fail "resetcheck through ibckpt: $(cat "$T/stacked")"
grep -Eq 'stats rxe0: post_send [1-9]' "$T/stacked" || fail "posts did not go through ibckpt"

posted_start "$T/w" env RDMAV_DRIVERS="$prov" $x rxe0 --wait ||
	fail "resetcheck --wait did not post: $(cat "$T/w/err")"
pid=$POSTED_PID
ibckpt freeze --persist 60 "$pid" > /dev/null || fail "freeze"
ibckpt -j dump "$pid" > "$T/dump.json" || fail "dump"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
posted_release
wait "$pid" || fail "resetcheck --wait: $(cat "$T/w/err")"
json_get recv "$T/dump.json" recv_wr
json_get send "$T/dump.json" send_wr
expect_eq 2 "$recv" "receives outstanding in the snapshot"
expect_eq 0 "$send" "sends outstanding in the snapshot"
pass
