#!/bin/bash
# ibckpt dump -D DIR: a checkpoint directory read offline (no module, no
# job). A good directory prints every process's snapshot, in the order of
# its job file, as a live dump prints a frozen job's; anything missing,
# foreign, corrupt or not a regular file is refused with one line on stderr,
# exit 1 and nothing on stdout; bad command lines exit 2. The snapshots are
# built with the provider's own writer (tests/mksnap). IBCKPT names another
# ibckpt binary (a sanitizer build, for example).
set -uo pipefail
cd "$(dirname "$0")/.."
ibckpt=${IBCKPT:-./ibckpt}
mksnap=./tests/mksnap
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rc=0

pass() { echo "PASS: dump_dir/$1"; }
fail() { echo "FAIL: dump_dir/$1: $2"; rc=1; }

# NAME STATUS STDERR-REGEX -- ARGS: the exit status, and the message (an
# empty REGEX: nothing on stderr); a refusal (1) is one line on stderr and
# nothing on stdout
expect() {
	local name=$1 want=$2 re=$3 got
	shift 4
	timeout 20 "$ibckpt" "$@" > "$T/out" 2> "$T/err"
	got=$?
	if [ "$got" != "$want" ] || { [ -n "$re" ] && ! grep -Eq -- "$re" "$T/err"; } ||
	   { [ -z "$re" ] && [ -s "$T/err" ]; }; then
		fail "$name" "exit $got, want $want: $(cat "$T/err")"
	elif [ "$want" = 1 ] && { [ -s "$T/out" ] || [ "$(wc -l < "$T/err")" != 1 ]; }; then
		fail "$name" "stdout: $(head -c 200 "$T/out"); stderr: $(cat "$T/err")"
	else
		pass "$name"
	fi
}

# The good directory: two processes (the second listed first), complete.
G=$T/good
mkdir -m 0700 "$G"
printf 'ibckpt-job 1\nproc 222 5 6\nproc 111 3 4\n' > "$G/ibckpt-job"
"$mksnap" "$G/proc-111.snap" 111 0x11 && "$mksnap" "$G/proc-222.snap" 222 0x22 ||
	{ echo "FAIL: dump_dir/mksnap (cannot build the snapshots)"; exit 1; }
touch "$G/ibckpt-complete"
like() { rm -rf "${T:?}/$1"; cp -a "$G" "$T/$1"; }

# ---- a good directory: text ----
"$ibckpt" dump -D "$G" > "$T/text" 2> "$T/err"
st=$?
if [ $st != 0 ] || [ -s "$T/err" ]; then
	fail text "exit $st: $(cat "$T/err")"
elif ! grep -qx 'process 111: session 9, 1 QPs, 1 MRs, 1 CQs, 0 SRQs, 1 outstanding WRs, 1 drained completions, pinned 8192 bytes' "$T/text" ||
     ! grep -qx 'process 222: session 9, 1 QPs, 1 MRs, 1 CQs, 0 SRQs, 1 outstanding WRs, 1 drained completions, pinned 8192 bytes' "$T/text"; then
	fail text "no summary line: $(head -n 3 "$T/text")"
elif [ "$(grep -o '^process [0-9]*' "$T/text" | tr '\n' ' ')" != "process 222 process 111 " ]; then
	fail text_order "not in the job file's order: $(grep '^process' "$T/text")"
elif ! grep -q '^  qp 5: type 2 qpn 0x11->0x111 state 3 dest 0x22 sq_psn 0x10 rq_psn 0x20 ' "$T/text" ||
     ! grep -q '^  qp 5: type 2 qpn 0x22->0x122 state 3 ' "$T/text"; then
	fail text "no QP line: $(grep 'qp ' "$T/text")"
elif ! grep -qx '  mr 3: pd 2 addr 0x7f0000001000 len 4096 iova 0x7f0000001000 access 0xf lkey 0x1234->0x5678 rkey 0x1234->0x5678' "$T/text"; then
	fail text "no MR line: $(grep 'mr ' "$T/text")"
elif ! grep -qx '  device 1: rxe0 lid 0 gid fe80:0000:0000:0000:0000:0000:0000:0001' "$T/text" ||
     ! grep -q '^    wr 0x2a: queue 1 of 5 opcode 0 flags 0x2 sge 1 inline 0$' "$T/text" ||
     ! grep -q '^    wc 0x29: cq 4 status 0 opcode 0 qp 0x11 len 100$' "$T/text"; then
	fail text "a device, WR or WC line missing: $(cat "$T/text")"
elif grep -q 'kernel' "$T/text"; then
	fail text "a kernel view offline: $(grep kernel "$T/text")"
else
	pass text
fi

# ---- JSON: the live dump's shape, without a job or a kernel view ----
expect json 0 '' -- -j dump -D "$G"
if python3 - "$T/out" <<'EOF'; then pass json_content; else fail json_content "$(head -c 300 "$T/out")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["processes", "without_snapshot"], list(d)
assert d["without_snapshot"] == []
p = d["processes"]
assert [x["tgid"] for x in p] == [222, 111], [x["tgid"] for x in p]
a = p[1]
assert a["version"] == 1 and a["session"] == 9 and a["pinned_bytes"] == 8192
assert a["outstanding"] == 1 and a["drain_complete"] is True
assert "kernel" not in a
q = a["qps"]
assert len(q) == 1 and q[0]["vqpn"] == 0x11 and q[0]["qpn"] == 0x111, q
assert q[0]["state"] == 3 and q[0]["dest_qpn"] == 0x22 and q[0]["sq_psn"] == 0x10, q
m = a["mrs"]
assert len(m) == 1 and m[0]["addr"] == 0x7f0000001000 and m[0]["length"] == 4096, m
assert m[0]["vlkey"] == 0x1234 and m[0]["lkey"] == 0x5678, m
assert a["devices"][0]["name"] == "rxe0"
assert len(a["wrs"]) == 1 and a["wrs"][0]["wr_id"] == 42, a["wrs"]
assert len(a["wcs"]) == 1 and a["wcs"][0]["wr_id"] == 41, a["wcs"]
assert p[0]["qps"][0]["vqpn"] == 0x22
EOF
# -j after the command, as for a live dump
expect json_after_command 0 '' -- dump -D "$G" -j
grep -q '^{"processes":\[{"version":1,"tgid":222,' "$T/out" && pass json_after_command_output ||
	fail json_after_command_output "$(head -c 200 "$T/out")"

# ---- -o FILE: the snapshots byte for byte, in order ----
expect write_file 0 '' -- dump -D "$G" -o "$T/all.snap"
if cat "$G/proc-222.snap" "$G/proc-111.snap" | cmp -s - "$T/all.snap" &&
   grep -qx "2 process snapshots of checkpoint $G written to $T/all.snap" "$T/out" &&
   [ "$(stat -c %a "$T/all.snap")" = 600 ]; then
	pass write_file_content
else
	fail write_file_content "$(cat "$T/out")"
fi
expect write_file_json 0 '' -- -j dump -D "$G" -o "$T/all.snap"
grep -qx "{\"processes\":2,\"file\":\"$T/all.snap\"}" "$T/out" && pass write_file_json_output ||
	fail write_file_json_output "$(cat "$T/out")"

# ---- an incomplete checkpoint is dumped, with a warning ----
like incomplete
rm "$T/incomplete/ibckpt-complete"
expect incomplete 0 "^ibckpt: warning: $T/incomplete is an incomplete checkpoint" -- \
	dump -D "$T/incomplete"
cmp -s "$T/out" "$T/text" && pass incomplete_output || fail incomplete_output "$(head -n 2 "$T/out")"

# ---- the directory ----
expect missing_dir 1 "ibckpt-job: No such file or directory \(not a checkpoint directory of ibckpt\)" -- \
	dump -D "$T/none"
mkdir "$T/emptydir"
expect not_ibckpt_dir 1 "not a checkpoint directory of ibckpt" -- dump -D "$T/emptydir"
expect dir_is_a_file 1 "ibckpt-job: Not a directory" -- dump -D "$G/ibckpt-job"
like foreign
printf 'hello\n' > "$T/foreign/ibckpt-job"
expect foreign_job_file 1 "ibckpt-job: not an ibckpt job file" -- dump -D "$T/foreign"
like v2
sed -i 's/^ibckpt-job 1$/ibckpt-job 2/' "$T/v2/ibckpt-job"
expect other_version 1 "checkpoint format version 2, this ibckpt reads version 1" -- dump -D "$T/v2"
like malformed
printf 'proc 12 x 4\n' >> "$T/malformed/ibckpt-job"
expect malformed_job_line 1 "ibckpt-job:4: malformed line" -- dump -D "$T/malformed"
like noproc
printf 'ibckpt-job 1\n' > "$T/noproc/ibckpt-job"
expect no_process 1 "ibckpt-job: no process" -- dump -D "$T/noproc"

# ---- the snapshots ----
snap=proc-111.snap
like nosnap
rm "$T/nosnap/$snap"
expect snapshot_missing 1 "$T/nosnap/$snap: No such file or directory" -- dump -D "$T/nosnap"
like empty
: > "$T/empty/$snap"
expect snapshot_empty 1 "$snap: snapshot truncated: 0 bytes" -- dump -D "$T/empty"
like truncated
head -c 200 "$G/$snap" > "$T/truncated/$snap"
expect snapshot_truncated 1 "$snap: snapshot says [0-9]+ bytes, 200 present" -- dump -D "$T/truncated"
like header
head -c 20 "$G/$snap" > "$T/header/$snap"
expect snapshot_short_header 1 "$snap: snapshot truncated: 20 bytes, header needs" -- dump -D "$T/header"
like trailing
printf 'trailing' >> "$T/trailing/$snap"
expect snapshot_trailing 1 "$snap: snapshot says [0-9]+ bytes, [0-9]+ present" -- dump -D "$T/trailing"
like magic
printf 'X' | dd of="$T/magic/$snap" bs=1 seek=0 conv=notrunc status=none
expect snapshot_bad_magic 1 "$snap: not an ibckpt snapshot \(magic" -- dump -D "$T/magic"
like version
printf '\002\000' | dd of="$T/version/$snap" bs=1 seek=4 conv=notrunc status=none
expect snapshot_bad_version 1 "$snap: snapshot version 2, this ibckpt reads version 1" -- \
	dump -D "$T/version"
like hdrlen
printf '\007\000' | dd of="$T/hdrlen/$snap" bs=1 seek=6 conv=notrunc status=none
expect snapshot_bad_header_length 1 "$snap: bad header length 7" -- dump -D "$T/hdrlen"
like reclen		# the first record (after the 48-byte header): its length
printf '\360\377\377\377' | dd of="$T/reclen/$snap" bs=1 seek=52 conv=notrunc status=none
expect snapshot_record_overrun 1 "$snap: record 0: length [0-9]+ runs past the end" -- \
	dump -D "$T/reclen"
like rectype
printf '\310\000' | dd of="$T/rectype/$snap" bs=1 seek=48 conv=notrunc status=none
expect snapshot_unknown_record 1 "$snap: record 0: unknown type 200" -- dump -D "$T/rectype"
like huge		# sparse: never read, refused by its size
truncate -s $((64 * 1024 * 1024 + 1)) "$T/huge/$snap"
expect snapshot_too_large 1 "$snap: 67108865 bytes, a snapshot is at most 67108864" -- \
	dump -D "$T/huge"
like symlink
mv "$T/symlink/$snap" "$T/symlink/real.snap"
ln -s real.snap "$T/symlink/$snap"
expect snapshot_symlink 1 "$snap: a symbolic link, not a snapshot file" -- dump -D "$T/symlink"
like dangling
rm "$T/dangling/$snap"
ln -s /nonexistent "$T/dangling/$snap"
expect snapshot_dangling_symlink 1 "$snap: a symbolic link" -- dump -D "$T/dangling"
like snapdir
rm "$T/snapdir/$snap"
mkdir "$T/snapdir/$snap"
expect snapshot_directory 1 "$snap: not a regular file" -- dump -D "$T/snapdir"
like fifo
rm "$T/fifo/$snap"
mkfifo "$T/fifo/$snap"
expect snapshot_fifo 1 "$snap: not a regular file" -- dump -D "$T/fifo"
if [ "$(id -u)" != 0 ]; then
	like unreadable
	chmod 0 "$T/unreadable/$snap"
	expect snapshot_unreadable 1 "$snap: Permission denied" -- dump -D "$T/unreadable"
fi

# ---- command lines ----
expect usage_dir_and_job 2 "name no job with it" -- dump -D "$G" 1234
expect usage_dir_and_session 2 "usage: ibckpt dump" -- dump -D "$G" --session 5
expect usage_dir_and_id 2 "name no job with it" -- dump -D "$G" --id 3
expect usage_no_dir 2 "usage: ibckpt dump" -- dump -D
expect usage_empty_dir 2 "-D needs a directory" -- dump -D ""
expect usage_extra_operand 2 "usage: ibckpt dump" -- dump -D "$G" 1 2
exit $rc
