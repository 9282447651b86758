#!/bin/bash
# A thread blocked in ibv_get_async_event() across a checkpoint gets the
# event raised after it: the application's async file is the provider's
# pipe, so the blocked read holds no uverbs file at the release and reads
# the reacquired device's events (restart.rst). tests/provider/asyncev
# arms an SRQ limit, blocks a thread in the read, waits for a trigger, then
# drains the SRQ below its limit: the thread must get
# IBV_EVENT_SRQ_LIMIT_REACHED naming its SRQ. Once with a checkpoint in
# place (--leave-running), once to disk, the process gone, restarted.
# Its MR, registered with IBV_ACCESS_RELAXED_ORDERING, keeps the flag (the
# frozen job's dump says access 0x100001; libibverbs stripped it when the
# provider reported no optional-access support).
# vm-timeout: 300
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
x=$PWD/tests/provider/bin/asyncev

# start NAME: asyncev as a session of its own, its status in $T/NAME.rc
start() {
	setsid bash -c "$x rxe0 $T/$1.go > $T/$1.out 2> $T/$1.err; echo \$? > $T/$1.rc" < /dev/null &
	SID=$!
	for _ in $(seq 100); do grep -q ready "$T/$1.out" 2> /dev/null && break; sleep 0.1; done
	grep -q ready "$T/$1.out" || fail "$1: asyncev is not ready: $(cat "$T/$1.err")"
}
# finish NAME: trigger it, it must exit 0
finish() {
	touch "$T/$1.go"
	for _ in $(seq 200); do [ -s "$T/$1.rc" ] && break; sleep 0.1; done
	expect_eq 0 "$(cat "$T/$1.rc" 2> /dev/null)" "$1: asyncev's exit status ($(cat "$T/$1.err"))"
	echo "$1: $(cat "$T/$1.out" | tail -n 1)"
}

start inplace
# its MR keeps IBV_ACCESS_RELAXED_ORDERING (issue #14: libibverbs stripped
# it, the provider's device reporting no optional-access support)
ibckpt freeze --persist 30 --session "$SID" > /dev/null 2> "$T/fe" || fail "freeze: $(cat "$T/fe")"
ibckpt dump --session "$SID" > "$T/dump" 2> "$T/de" || fail "dump: $(cat "$T/de")"
ibckpt thaw --session "$SID" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
grep -q "access 0x100001 " "$T/dump" ||
	fail "the MR lost IBV_ACCESS_RELAXED_ORDERING: $(grep ' access ' "$T/dump" | head -n 3)"
ibckpt checkpoint -D "$T/ck-inplace" --leave-running --session "$SID" > "$T/c" 2>&1 ||
	fail "checkpoint in place: $(cat "$T/c")"
finish inplace

start disk
dir=/run/ibckpt-asyncev
ibckpt checkpoint -D "$dir" --session "$SID" > "$T/c" 2>&1 ||
	fail "checkpoint: $(cat "$T/c") $(tail -n 5 "$dir/dump.log" 2> /dev/null)"
{ wait "$SID"; } 2> /dev/null
ibckpt restart -D "$dir" > "$T/r" 2>&1 ||
	fail "restart: $(cat "$T/r") $(tail -n 5 "$dir/restore.log" 2> /dev/null)"
finish disk
pass
