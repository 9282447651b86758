#!/bin/bash
# One process, a context on each device, an RC QP on each connected to the
# other: multidev's 100 rounds (a send from rxe0 to rxe1, an RDMA write back
# naming rxe0's key) give the same results through ibckpt as directly, both
# contexts stacked. Frozen with two receives posted on rxe1, its snapshot
# holds both devices, each with its own QP (QPNs are per device: both may
# be the same number), the two receives on rxe1's QP, and matches the
# kernel's view; after the thaw those receives take the next two messages.
. "$(dirname "$0")/lib.sh"
prov=$PWD/provider/libibckpt
x=tests/provider/bin/multidev
$x rxe0 rxe1 > "$T/direct" 2>&1 || fail "multidev without ibckpt: $(cat "$T/direct")"
RDMAV_DRIVERS=$prov IBCKPT_STATS=1 $x rxe0 rxe1 > "$T/stacked" 2>&1 ||
	fail "multidev through ibckpt: $(cat "$T/stacked")"
for d in rxe0 rxe1; do
	grep -Eq "stats $d: post_send [1-9]" "$T/stacked" || fail "$d's posts did not go through ibckpt"
done

posted_start "$T/w" env RDMAV_DRIVERS="$prov" $x rxe0 rxe1 --wait ||
	fail "multidev --wait did not post: $(cat "$T/w/err")"
pid=$POSTED_PID
read -r _ _ _ qpa qpb < "$T/w/out"
ibckpt freeze --persist 60 "$pid" > /dev/null || fail "freeze"
ibckpt -j dump "$pid" > "$T/dump.json" || fail "dump"
tools/ibckpt-xcheck "$T/dump.json" > "$T/x" 2>&1 || fail "snapshot differs from the kernel: $(cat "$T/x")"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
posted_release
wait "$pid" || fail "multidev --wait after the thaw: $(cat "$T/w/err")"
python3 - "$T/dump.json" "$qpa" "$qpb" <<'PY' || fail "snapshot: $(cat "$T/dump.json")"
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
dev = {d["handle"]: d["name"] for d in p["devices"]}
assert sorted(dev.values()) == ["rxe0", "rxe1"], dev
# QPNs are per device (both may be 19): a QP's device is its PD's
pd_dev = {d["handle"]: dev[d["device"]] for d in p["pds"]}
qps = {pd_dev[q["pd"]]: q for q in p["qps"]}
assert len(qps) == 2 and len(p["qps"]) == 2, p["qps"]
a, b = qps["rxe0"], qps["rxe1"]
assert (a["vqpn"], b["vqpn"]) == (int(sys.argv[2]), int(sys.argv[3])), (a["vqpn"], b["vqpn"])
assert a["recv_wr"] == 0 and b["recv_wr"] == 2, p["qps"]
wrs = sorted(w["wr_id"] for w in p["wrs"] if w["owner"] == b["handle"])
assert wrs == [3001, 3002], wrs
PY
pass
