#!/bin/bash
# Extended CQs, memory windows and the ibv_wr_* API through ibckpt
# (tests/provider/bin/excheck): its completions
# (ibv_start_poll and the ibv_wc_read_* accessors: wr_id, opcode, length,
# immediate, QPN, flags, in order, once) are the same with and without
# ibckpt, its CQ events name its own CQ, RDMA writes land through type 1
# and type 2 windows, and a batch of the ibv_wr_* API (send with inline data
# and immediate, gathered write, read, atomics) lands; an aborted batch posts
# nothing. Then, frozen after posting and before polling, its 6 completions
# (3 sends, 3 receives) are drained at the freeze and come back through
# ibv_start_poll after the thaw, exactly once and in order; the snapshot
# holds both windows with their binds, and an unsignaled bind still logged
# for a window freed since names no window (the snapshot never follows the
# freed pointer).
. "$(dirname "$0")/lib.sh"
export IBCKPT_STATS=1
prov=$PWD/provider/libibckpt
x=tests/provider/bin/excheck
# Without ibckpt only --single: Debian's rxe (rdma-core 44) breaks on an
# ibv_end_poll() after ibv_next_poll() gave ENOENT (see excheck.c).
$x rxe0 --single > "$T/direct" 2>&1 || fail "excheck without ibckpt: $(cat "$T/direct")"
RDMAV_DRIVERS=$prov $x rxe0 --single > "$T/stacked1" 2>&1 ||
	fail "excheck --single through ibckpt: $(cat "$T/stacked1")"
RDMAV_DRIVERS=$prov $x rxe0 > "$T/stacked" 2>&1 || fail "excheck through ibckpt: $(cat "$T/stacked")"
cat "$T/stacked"
grep -Eq 'stats rxe0: .*poll_cq [1-9]' "$T/stacked" || fail "polls did not go through ibckpt"

posted_start "$T/w" env RDMAV_DRIVERS="$prov" $x rxe0 --wait ||
	fail "excheck did not post: $(cat "$T/w/err")"
pid=$POSTED_PID
ibckpt -j freeze --timeout 10000 --persist 60 "$pid" > "$T/f" 2> "$T/fe" || fail "freeze: $(cat "$T/fe")"
cat "$T/f"
json_get v "$T/f" providers
expect_eq 1 "$v" "providers asked to quiesce"
json_get v "$T/f" drained
expect_eq 6 "$v" "completions drained at the freeze (3 sends, 3 receives)"
ibckpt -j dump "$pid" > "$T/d.json" || fail "dump"
jq -e '.processes[0].mws | length == 2 and all(.mr != 0 and .length == 64 and .vrkey == .rkey)' \
	"$T/d.json" > /dev/null || fail "windows in the snapshot: $(jq -c '.processes[0].mws' "$T/d.json")"
jq -e '.processes[0].mws | map(.type) | sort == [1, 2]' "$T/d.json" > /dev/null ||
	fail "window types in the snapshot: $(jq -c '.processes[0].mws' "$T/d.json")"
jq -e '.processes[0].cqs | length == 1 and .[0].ex == true and .[0].wc_flags == 127' \
	"$T/d.json" > /dev/null || fail "extended CQ in the snapshot: $(jq -c '.processes[0].cqs' "$T/d.json")"
jq -e '.processes[0].wrs | map(select(.opcode == 8)) | length == 1 and .[0].bind.mw == 0' \
	"$T/d.json" > /dev/null ||
	fail "the unsignaled bind of a freed window: $(jq -c '.processes[0].wrs' "$T/d.json")"
tools/ibckpt-xcheck "$T/d.json" || fail "snapshot differs from the kernel's view"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
posted_release
wait "$pid"
rc=$?
cat "$T/w/out" "$T/w/err"
expect_eq 0 "$rc" "excheck exit status after freeze and thaw"
grep -Eq 'stats rxe0: .*drained 6$' "$T/w/err" ||
	fail "the provider did not drain 6: $(grep stats "$T/w/err")"
pass
