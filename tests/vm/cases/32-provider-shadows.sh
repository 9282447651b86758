#!/bin/bash
# The application never receives a vendor object: completion events, async
# events and query_qp return its own CQ, SRQ and contexts (shadowcheck, with
# and without ibckpt); ibv_asyncwatch reports the same port events through
# ibckpt as without it.
. "$(dirname "$0")/lib.sh"
export IBCKPT_STATS=1
prov=$PWD/provider/libibckpt
tests/provider/bin/shadowcheck rxe0 > "$T/direct" 2>&1 || fail "shadowcheck without ibckpt: $(cat "$T/direct")"
RDMAV_DRIVERS=$prov tests/provider/bin/shadowcheck rxe0 > "$T/stacked" 2>&1 ||
	fail "shadowcheck through ibckpt: $(cat "$T/stacked")"
cat "$T/stacked"
grep -Eq 'stats rxe0: .* cq_events [1-9][0-9]* async_events [1-9]' "$T/stacked" ||
	fail "events did not go through the provider"

# Port events: take veth0 down and up under both watchers.
stdbuf -oL ibv_asyncwatch -d rxe0 > "$T/aw.direct" 2>&1 &
w1=$!
RDMAV_DRIVERS=$prov stdbuf -oL ibv_asyncwatch -d rxe0 > "$T/aw.stacked" 2>&1 &
w2=$!
# both must be listening before the link goes down: through ibckpt the
# watcher takes longer to start (the vendor is located first), and on a busy
# host a fixed second was once not enough for it to see PORT_ERR
for _ in $(seq 100); do
	grep -q 'async event FD' "$T/aw.direct" && grep -q 'async event FD' "$T/aw.stacked" && break
	sleep 0.1
done
sleep 0.5
ip link set veth0 down
sleep 1
ip link set veth0 up
for _ in $(seq 50); do
	grep -q PORT_ACTIVE "$T/aw.direct" && grep -q PORT_ACTIVE "$T/aw.stacked" && break
	sleep 0.1
done
kill $w1 $w2
wait $w1 $w2 2>/dev/null
ev() { grep -o 'event_type [A-Z_]*\|IBV_EVENT_[A-Z_]*' "$1" | sort -u; }
cat "$T/aw.stacked"
[ -n "$(ev "$T/aw.direct")" ] || fail "no port event seen without ibckpt: $(cat "$T/aw.direct")"
expect_eq "$(ev "$T/aw.direct")" "$(ev "$T/aw.stacked")" "port events through ibckpt"
pass
