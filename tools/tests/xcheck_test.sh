#!/bin/bash
# ibckpt-xcheck against saved kernel views: it accepts a dump that matches
# and reports, with exit 1, each kind of mismatch a broken snapshot could
# show (missing or extra QP, wrong state, wrong MR key, unowned QP); bad
# command lines and unreadable input exit 2. This shell stands in for the
# frozen process: its pid is the tgid the kernel's objects map to via /proc.
set -uo pipefail
cd "$(dirname "$0")/.."
xcheck=./ibckpt-xcheck
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
me=$$
rc=0

dump() {	# QPSTATE MRLKEY
	cat <<JSON
{"pgid":$me,"processes":[{"tgid":$me,
 "devices":[{"handle":1,"name":"rxe0"}],
 "pds":[{"handle":7,"device":1}],
 "qps":[{"pd":7,"qpn":17,"type":2,"state":$1},{"pd":7,"qpn":18,"type":4,"state":3}],
 "mrs":[{"pd":7,"lkey":$2,"rkey":4660,"length":4096}]}]}
JSON
}
kqp() {	# EXTRA-ENTRY
	cat <<JSON
[{"ifindex":2,"ifname":"rxe0","port":1,"lqpn":1,"type":"GSI","state":"RTS","comm":"ib_core"},
 {"ifindex":2,"ifname":"rxe0","port":1,"lqpn":17,"type":"RC","state":"RTS","pid":$me,"comm":"t"},
 {"ifindex":2,"ifname":"rxe0","port":1,"lqpn":18,"type":"UD","state":"RTS","pid":$me,"comm":"t"}$1]
JSON
}
kmr='[{"ifindex":2,"ifname":"rxe0","mrn":3,"lkey":"0x1234","rkey":"0x1234","mrlen":4096,"pid":'$me',"comm":"t"}]'

check() {	# NAME WANT-RC WANT-STDERR-REGEX ARGS...
	local name=$1 want=$2 re=$3; shift 3
	"$xcheck" "$@" > "$T/out" 2> "$T/err"
	local got=$?
	if [ "$got" = "$want" ] && grep -Eq -- "$re" "$T/err" "$T/out"; then
		echo "PASS: xcheck/$name"
	else
		echo "FAIL: xcheck/$name (exit $got, want $want; stdout: $(cat "$T/out"); stderr: $(cat "$T/err"))"
		rc=1
	fi
}

kqp "" > "$T/qp.json"
echo "$kmr" > "$T/mr.json"
dump 3 4660 > "$T/good.json"
check matching_snapshot_passes 0 "process $me: 2 QPs, 1 MRs checked" \
	--qp "$T/qp.json" --mr "$T/mr.json" "$T/good.json"
check matching_snapshot_on_stdin_passes 0 "2 QPs" \
	--qp "$T/qp.json" --mr "$T/mr.json" - < "$T/good.json"
dump 2 4660 > "$T/state.json"
check qp_state_differs 1 "QP \('rxe0', 17\): snapshot \('RC', 'RTR'\), kernel \('RC', 'RTS'\)" \
	--qp "$T/qp.json" --mr "$T/mr.json" "$T/state.json"
dump 3 4661 > "$T/key.json"
check mr_key_differs 1 "MR \('rxe0', 4661, 4660, 4096\) in the snapshot, not in the kernel" \
	--qp "$T/qp.json" --mr "$T/mr.json" "$T/key.json"
kqp ',{"ifindex":2,"ifname":"rxe0","port":1,"lqpn":19,"type":"RC","state":"INIT","pid":'$me',"comm":"t"}' \
	> "$T/qp3.json"
check kernel_has_an_extra_qp 1 "snapshot has 2 QPs, kernel 3" \
	--qp "$T/qp3.json" --mr "$T/mr.json" "$T/good.json"
kqp ',{"ifindex":2,"ifname":"rxe0","port":1,"lqpn":20,"type":"RC","state":"INIT","comm":"t"}' \
	> "$T/qp4.json"
check unowned_user_qp_is_reported 1 "kernel QP rxe0/20 has no owner" \
	--qp "$T/qp4.json" --mr "$T/mr.json" "$T/good.json"
check same_process_twice 1 "more than one dump" \
	--qp "$T/qp.json" --mr "$T/mr.json" "$T/good.json" "$T/good.json"
check qp_without_mr_is_usage_error 2 "--qp and --mr go together" --qp "$T/qp.json" "$T/good.json"
check no_dump_is_usage_error 2 "required" --qp "$T/qp.json" --mr "$T/mr.json"
check missing_file 2 "No such file" --qp "$T/qp.json" --mr "$T/mr.json" "$T/nonexistent.json"
echo '{"processes":' > "$T/bad.json"
check malformed_json 2 "ibckpt-xcheck: " --qp "$T/qp.json" --mr "$T/mr.json" "$T/bad.json"
echo '{"processes":[{"devices":[]}]}' > "$T/notgid.json"
check dump_without_tgid 2 "malformed input" --qp "$T/qp.json" --mr "$T/mr.json" "$T/notgid.json"
exit $rc
