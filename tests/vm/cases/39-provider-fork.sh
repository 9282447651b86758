#!/bin/bash
# fork() of a verbs process (provider/fork.c). forkcheck forks while a
# thread of the parent is busy in verbs; the child opens rxe0 for itself and
# must get its completion events through its own channel (the forwarding
# state is the child's, not the parent's, through which the child's channel
# could wait for ever), while the parent goes on. The same runs directly
# (the program is sound) and through ibckpt, where every verb of the child
# on an inherited object is refused (EACCES). Then, with the child in a
# process group of its own: a freeze of the child's group quiesces the
# child's context alone (the parent's gates stay open: one of them counts
# the parent's busy thread, and closing it would time out) and promptly,
# its snapshot holds the child's device and QP only, the parent goes on
# meanwhile; a freeze of the parent's group afterwards quiesces the
# parent's (its registration survives the child's copy of /dev/ibckpt);
# both finish their rounds after the thaws.
# vm-timeout: 400
. "$(dirname "$0")/lib.sh"
prov=$PWD/provider/libibckpt
x=tests/provider/bin/forkcheck
parent='' child=''
# die MSG: leave nothing frozen or running behind, then fail
die() {
	local p
	for p in $child $parent; do
		ibckpt thaw "$p" > /dev/null 2>&1
		kill -9 "$p" 2> /dev/null
	done
	fail "$* (forkcheck: $(tail -n 5 "$T/out" 2> /dev/null) $(cat "$T/err" 2> /dev/null))"
}

timeout 150 $x rxe0 > "$T/direct" 2>&1 || fail "forkcheck without ibckpt: $(cat "$T/direct")"
grep -q "forkcheck: PASS" "$T/direct" || fail "forkcheck without ibckpt: $(cat "$T/direct")"
RDMAV_DRIVERS=$prov timeout 150 $x -s rxe0 > "$T/stacked" 2>&1 ||
	fail "forkcheck through ibckpt: $(cat "$T/stacked")"
grep -q "forkcheck: PASS" "$T/stacked" || fail "forkcheck through ibckpt: $(cat "$T/stacked")"
grep -q "the parent's objects refused" "$T/stacked" || fail "no refusal checked: $(cat "$T/stacked")"

# A quiesce that walked a context inherited from the parent would wait for
# the parent's busy thread counted in its gate: IBCKPT_GATE_MS makes that
# wait outlast the freeze's own timeout, so it fails instead of being slow.
setsid env RDMAV_DRIVERS="$prov" IBCKPT_STATS=1 IBCKPT_GATE_MS=30000 \
	$x -s -t 60 -p "$T/child.pid" rxe0 < /dev/null > "$T/out" 2> "$T/err" &
parent=$!
for _ in $(seq 300); do [ -s "$T/child.pid" ] && break; sleep 0.1; done
[ -s "$T/child.pid" ] || die "the child did not start its rounds"
read -r child < "$T/child.pid"
expect_eq "$child" "$(ps -o pgid= -p "$child" | tr -d ' ')" "the child's process group"
expect_eq "$parent" "$(ps -o pgid= -p "$parent" | tr -d ' ')" "the parent's process group"

# the child alone
t0=$(date +%s%N)
ibckpt -j freeze --timeout 10000 --persist 60 "$child" > "$T/f" 2> "$T/fe" ||
	die "freeze of the child's group: $(cat "$T/fe")"
ms=$((($(date +%s%N) - t0) / 1000000))
json_get v "$T/f" procs
[ "$v" = 1 ] || die "the child's group froze $v processes: $(cat "$T/f")"
json_get v "$T/f" providers
[ "$v" = 1 ] || die "the child's group: $v providers: $(cat "$T/f")"
# (no time limit of ours: a quiesce that waited on the parent's gate would
# fail the freeze above, IBCKPT_GATE_MS outlasting its --timeout)
echo "child frozen in $ms ms"
ibckpt -j status "$child" > "$T/s" || die "status of the child's group"
json_get v "$T/s" state
[ "$v" = frozen ] || die "child: $(cat "$T/s")"
json_get v "$T/s" quiesced
[ "$v" = 1 ] || die "the child's provider did not quiesce: $(cat "$T/s")"
ibckpt -j dump "$child" > "$T/dc.json" || die "dump of the child"
a=$(grep -c "forkcheck: parent:" "$T/out")
sleep 2.5
b=$(grep -c "forkcheck: parent:" "$T/out")
[ "$b" -gt "$a" ] || die "the parent stopped while the child was frozen"
ibckpt thaw "$child" | grep -q "thawed" || die "thaw of the child"
ibckpt status "$child" | grep -q "is not frozen" || die "the child's session is left"
python3 - "$T/dc.json" <<'PY' || die "the child's snapshot: $(cat "$T/dc.json")"
import json, sys
ps = json.load(open(sys.argv[1]))["processes"]
assert len(ps) == 1, ps
p = ps[0]
# its own context: one device, one PD, one QP; none of the parent's two
assert len(p["devices"]) == 1, p["devices"]
assert len(p["pds"]) == 1, p["pds"]
assert len(p["qps"]) == 1, p["qps"]
PY

# then the parent's group: the parent alone (the child left it), quiesced
ibckpt -j freeze --timeout 10000 --persist 60 "$parent" > "$T/f" 2> "$T/fe" ||
	die "freeze of the parent's group: $(cat "$T/fe")"
json_get v "$T/f" procs
[ "$v" = 1 ] || die "the parent's group froze $v processes: $(cat "$T/f")"
json_get v "$T/f" providers
[ "$v" = 1 ] || die "the parent's group: $v providers: $(cat "$T/f")"
ibckpt -j status "$parent" > "$T/s" || die "status of the parent's group"
json_get v "$T/s" quiesced
[ "$v" = 1 ] || die "the parent's provider did not quiesce: $(cat "$T/s")"
ibckpt -j dump "$parent" > "$T/dp.json" || die "dump of the parent"
ibckpt thaw "$parent" | grep -q "thawed" || die "thaw of the parent"
python3 - "$T/dp.json" <<'PY' || die "the parent's snapshot: $(cat "$T/dp.json")"
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
assert len(p["devices"]) == 1, p["devices"]
assert len(p["qps"]) == 2, p["qps"]
PY

for _ in $(seq 1500); do kill -0 "$parent" 2> /dev/null || break; sleep 0.2; done
kill -0 "$parent" 2> /dev/null && die "forkcheck did not finish"
wait "$parent"
rc=$?
cat "$T/out"
[ "$rc" = 0 ] || fail "forkcheck exited $rc: $(cat "$T/err")"
grep -q "forkcheck: PASS" "$T/out" || fail "forkcheck: $(cat "$T/err")"
grep -q "forkcheck: child: [1-9][0-9]* rounds" "$T/out" || fail "no rounds of the child's"
# each process reports its own context only (the child's copy of the
# parent's is foreign), each quiesced once
n=$(grep -c "ibckpt: stats rxe0: .* quiesces 1 " "$T/err")
[ "$n" = 2 ] || fail "expected 2 contexts quiesced once each: $(grep stats "$T/err")"
pass
