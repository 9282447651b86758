#!/bin/bash
# The kernel's own view (Documentation/snapshot.rst, "The kernel's own view").
# (a) A traffic client frozen mid-traffic: `ibckpt dump` gives, beside its
#     snapshot, the RDMA core's record of each of its 9 QPs, taken when the
#     module accepted the snapshot: same QPN, type and state, owned by the
#     process, the RC QPs in RTS with their destination QPN and both PSNs.
#     A verbs program without the provider (ibv_rc_pingpong) frozen alone is
#     listed as a process without a snapshot, with the memory it pins and
#     its QP and MR as RDMA netlink lists them (the module cannot); -o FILE
#     has nothing to write.
# (b) Forged snapshots (tests/kmod/regtest forge) fail the quiesce, and
#     `ibckpt freeze` names the QP and why: another process's QP, no such QP,
#     no such device; a QP whose PD is not in the snapshot is malformed.
#     The forger's own answer afterwards is refused: the refusal answered.
# (c) The job changes between two rounds of the dump (tests/kmod/snapleave:
#     two providers of one frozen group give 300 KiB snapshots, read a
#     datagram at a time through a 4 KiB receive buffer): the process being
#     sent, one sent already or one whose turn has not come closes
#     /dev/ibckpt, or a process joins the job (the dump waits until the
#     session counts it). Each ends the dump with EAGAIN: never another's
#     pieces from an offset, a process said twice, or success with a
#     snapshot missing. Every piece is compared with what its provider gave.
# Traffic verifies after the thaw.
# vm-timeout: 900
. "$(dirname "$0")/lib.sh"
R=tests/kmod/regtest
prov=$PWD/provider/libibckpt

# (a) ------------------------------------------------------------------
RDMAV_DRIVERS=$prov traffic_start_server rxe0 8
RDMAV_DRIVERS=$prov setsid "$IBTRAFFIC" -c 127.0.0.1 -d rxe1 -g 0 -p "$TRAFFIC_PORT" -q 8 \
	> "$T/client.out" 2> "$T/client.err" &
client=$!
sleep 2
ibckpt freeze --persist 60 "$client" > /dev/null || fail "freeze the client"
ibckpt -j dump "$client" > "$T/d.json" || fail "dump -j"
ibckpt dump "$client" > "$T/d.txt" || fail "dump"
ibckpt thaw "$client" > /dev/null || fail "thaw the client"
grep -E '^  kernel' "$T/d.txt" | head -n 4
jq -e --argjson t "$client" '.processes | length == 1 and .[0].tgid == $t' "$T/d.json" \
	> /dev/null || fail "not one process $client: $(head -c 300 "$T/d.json")"
jq -e '.processes[0].kernel.snapshot and (.processes[0].kernel.released | not)' "$T/d.json" \
	> /dev/null || fail "no kernel view: $(jq -c '.processes[0].kernel' "$T/d.json")"
n=$(jq '.processes[0].kernel.qps | length' "$T/d.json")
expect_eq 9 "$n" "QPs in the kernel's view (8 RC + 1 UD)"
# every QP of the snapshot, as the RDMA core recorded it: same QPN, type,
# state; its owner is the process; the RC ones in RTS, connected, with PSNs
jq -e --argjson t "$client" '.processes[0] as $p | [$p.qps[] as $q |
	($p.kernel.qps[] | select(.handle == $q.handle)) as $k |
	$k.qpn == $q.qpn and $k.type == $q.type and $k.state == $q.state and
	$k.owner == $t and $k.device == "rxe1" and (has("query_error") | not) and
	($k | has("sq_psn") and has("rq_psn")) and
	(if $q.type == 2 then $k.state == 3 and $k.dest_qpn == $q.dest_qpn else true end)]
	| length == 9 and all' "$T/d.json" > /dev/null ||
	fail "the kernel's view differs from the snapshot: $(jq -c '.processes[0] | {qps: [.qps[] | {handle, qpn, type, state, dest_qpn}], kernel}' "$T/d.json")"
rc=$(jq '[.processes[0].kernel.qps[] | select(.type == 2 and .state == 3)] | length' "$T/d.json")
expect_eq 8 "$rc" "RC QPs in RTS in the kernel's view"
grep -Eq "^  kernel qp [0-9]+: rxe1 qpn 0x[0-9a-f]+ owner $client type 2 port 1 state 3 \(RTS\) dest 0x[0-9a-f]+ sq_psn 0x[0-9a-f]+ rq_psn 0x[0-9a-f]+$" \
	"$T/d.txt" || fail "text dump has no kernel QP line: $(head -n 20 "$T/d.txt")"
qpn=$(jq '.processes[0].qps[0].qpn' "$T/d.json")
[ -n "$qpn" ] && [ "$qpn" != null ] || fail "no QPN in the client's snapshot"

# a verbs program without the provider: its process, and what it pins
setsid ibv_rc_pingpong -d rxe0 -g 0 -p "$(bed_port)" > "$T/pp.out" 2>&1 &
pp=$!
for _ in $(seq 100); do
	[ "$(awk '/^VmPin/ {print $2}' /proc/$pp/status 2> /dev/null)" -gt 0 ] 2> /dev/null && break
	sleep 0.1
done
ibckpt freeze --persist 30 "$pp" > /dev/null || fail "freeze ibv_rc_pingpong"
ibckpt -j dump "$pp" > "$T/pp.json" || fail "dump of a job without a provider: $(cat "$T/pp.json")"
ibckpt dump "$pp" > "$T/pp.txt" || fail "dump (text) of a job without a provider"
refused 1 "no snapshot" ibckpt dump "$pp" -o "$T/pp.bin"
ibckpt thaw "$pp" > /dev/null || fail "thaw ibv_rc_pingpong"
kill "$pp"; wait "$pp" 2> /dev/null
cat "$T/pp.txt"
jq -e --argjson t "$pp" '(.processes | length == 0) and (.without_snapshot | length == 1) and
	.without_snapshot[0].tgid == $t and (.without_snapshot[0].kernel |
	.pinned_bytes > 0 and (.snapshot | not) and .rdma_netlink and
	(.qps | length == 1) and .qps[0].device == "rxe0" and .qps[0].type == 2 and
	.qps[0].thread == $t and (.mrs | length == 1) and .mrs[0].length > 0 and
	(.mrs[0] | has("lkey") and has("rkey")))' "$T/pp.json" > /dev/null ||
	fail "the process without a provider: $(cat "$T/pp.json")"
grep -Eq "^process $pp: no snapshot, pinned [1-9][0-9]* bytes$" \
	"$T/pp.txt" || fail "text: $(cat "$T/pp.txt")"
grep -q "^  kernel: 1 QP and 1 MR (RDMA netlink, as rdma res shows them)$" "$T/pp.txt" ||
	fail "text: $(cat "$T/pp.txt")"
grep -Eq "^  kernel qp: rxe0 qpn 0x[0-9a-f]+ thread $pp type 2 port [0-9]+ state [0-9]+ \([A-Z]+\)" \
	"$T/pp.txt" || fail "text: no QP line: $(cat "$T/pp.txt")"

# (b) ------------------------------------------------------------------
# forged DIR WANT ARGS...: regtest forge ARGS fails its freeze saying WANT
forged() {
	local dir=$1 want=$2 pid
	shift 2
	mkdir -p "$dir"
	setsid $R forge "$@" > "$dir/out" 2>&1 &
	for _ in $(seq 50); do grep -q registered "$dir/out" && break; sleep 0.1; done
	pid=$(awk '/registered/ {print $2}' "$dir/out")
	[ -n "$pid" ] || fail "regtest forge did not register: $(cat "$dir/out")"
	ibckpt freeze --timeout 5000 --persist 30 "$pid" > /dev/null 2> "$dir/e" &&
		fail "the freeze of a forged snapshot ($*) succeeded"
	cat "$dir/e"
	grep -qF "the provider of process $pid could not quiesce ($want); the job was left running" \
		"$dir/e" || fail "forge $*: expected '$want', got '$(cat "$dir/e")'"
	wait "$!" 2> /dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
	kill "$pid" 2> /dev/null
	# refused: answered already, or the freeze is over (aborted by then)
	grep -Eq "^answer: (Operation already in progress|No such process)$" "$dir/out" ||
		fail "forge $*: its answer after the refusal: $(cat "$dir/out")"
}
hex=$(printf '%#x' "$qpn")
forged "$T/f1" "Protocol error: QP $hex on rxe1: another process's QP" rxe1 "$qpn"
grep -q "^snapshot: Protocol error$" "$T/f1/out" || fail "forge: $(cat "$T/f1/out")"
forged "$T/f2" "Protocol error: QP 0xfffff0 on rxe1: no such QP" rxe1 0xfffff0
forged "$T/f3" "Protocol error: QP $hex on rxe9: no such RDMA device" rxe9 "$qpn"
forged "$T/f4" "Invalid argument: QP $hex (handle 3): no PD 9 in the snapshot" rxe1 "$qpn" 9
grep -q "^snapshot: Invalid argument$" "$T/f4/out" || fail "forge with no PD: $(cat "$T/f4/out")"

# (c) ------------------------------------------------------------------
tests/kmod/snapleave "$(command -v ibckpt)" > "$T/leave.out" 2>&1 ||
	fail "snapleave: $(cat "$T/leave.out")"
cat "$T/leave.out"

# the traffic went on through all this, and verifies
sleep 1
kill -INT "$client"
wait "$client" || fail "client: $(cat "$T/client.err")"
traffic_wait_server
expect_eq 0 "$TRAFFIC_SERVER_RC" "server exit status"
traffic_expect_ops 1000
pass
