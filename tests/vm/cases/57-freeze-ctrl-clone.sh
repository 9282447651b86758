#!/bin/bash
# A control thread is never parked; a thread it starts once the job is
# frozen is (the module looks at a frozen job again; tests/kmod/regtest
# cloner): the rescan of a FROZEN job finds it, the job is FREEZING until it
# parks, and it does not run until the thaw. A provider whose control
# thread dies while asked (regtest dies) counts as answered.
. "$(dirname "$0")/lib.sh"
setsid tests/kmod/regtest cloner "$T/ticks" > "$T/out" 2>&1 &
for _ in $(seq 50); do grep -q registered "$T/out" && break; sleep 0.1; done
pid=$(awk '/registered/ {print $2}' "$T/out")
[ -n "$pid" ] || fail "regtest did not register: $(cat "$T/out")"
ibckpt -j freeze --persist 30 "$pid" > "$T/f" || fail "freeze"
json_get v "$T/f" providers
expect_eq 1 "$v" "providers asked"
for _ in $(seq 50); do grep -q "thread started" "$T/out" && break; sleep 0.1; done
grep -q "thread started" "$T/out" || fail "the control thread started no thread"
sleep 0.5
# the new thread may be parked at its first return to user space, before
# its first tick: an empty file is 0 ticks
ticks() { local n; n=$(cat "$T/ticks"); echo "${n:-0}"; }
a=$(ticks); sleep 0.5; b=$(ticks)
expect_eq "$a" "$b" "ticks of the control thread's new thread while frozen"
ibckpt -j status "$pid" > "$T/s"
json_get v "$T/s" state
expect_eq frozen "$v" "state"
json_get v "$T/s" parked
expect_eq 1 "$v" "threads parked (the new one)"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
sleep 0.3
c=$(ticks)
[ "$c" -gt "$b" ] || fail "the new thread did not resume ($b -> $c)"
kill -9 "$pid"

# A provider dies when asked to quiesce, its file kept open by a child it
# forked: the freeze does not wait for an answer
# that cannot come; the child is frozen.
setsid tests/kmod/regtest dies > "$T/out2" 2>&1 &
for _ in $(seq 50); do grep -q registered "$T/out2" && break; sleep 0.1; done
pid=$(awk '/registered/ {print $2}' "$T/out2")
[ -n "$pid" ] || fail "regtest dies did not register: $(cat "$T/out2")"
ibckpt -j freeze --timeout 5000 --persist 30 "$pid" > "$T/f" 2> "$T/e" ||
	fail "a provider that died when asked kept the freeze from converging: $(cat "$T/e")"
json_get v "$T/f" parked
expect_eq 1 "$v" "threads parked (the child's)"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
pkill -9 -f "regtest dies"
pass
