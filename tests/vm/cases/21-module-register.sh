#!/bin/bash
# /dev/ibckpt registration and its refusals: a bad ABI or flags, a file
# inherited across fork(), registering twice, a second file of the same
# process (one registration per process). `ibckpt status` lists a registered
# process with its process group and control thread. tests/kmod/regtest
# answer then plays a provider that forges its snapshot's identity (another
# pid, 1 TiB pinned): its snapshot for another session is refused (ESRCH),
# its first for the session accepted, a second one refused before and after
# its answer (EALREADY), and `ibckpt dump` shows its own pid and its real
# pinned memory, stamped by the module. The registration ends with the
# process, rmmod is refused while a file is open, and 1000 register/close
# cycles leak nothing.
. "$(dirname "$0")/lib.sh"
R=tests/kmod/regtest
$R errors || fail "registration refusals"
setsid $R hold 30 > "$T/hold" &
for _ in $(seq 50); do grep -q registered "$T/hold" && break; sleep 0.1; done
pid=$(awk '/registered/ {print $2}' "$T/hold")
[ -n "$pid" ] || fail "regtest did not register"
ibckpt status "$pid" | tee "$T/s"
grep -Eq "^$pid +$pid +$pid +regtest" "$T/s" || fail "status does not list pid $pid as its own group"
ibckpt -j status | jq -e ".processes[] | select(.tgid == $pid and .ctrl_tid == $pid)" > /dev/null ||
	fail "status -j does not list $pid"
rmmod ibckpt 2> /dev/null && fail "rmmod succeeded with /dev/ibckpt open"
kill "$pid"; wait
# the snapshot: one per session, before the answer; its identity is the
# module's word (a provider that claims another pid and 1 TiB pinned)
setsid $R answer > "$T/ans" 2>&1 &
for _ in $(seq 50); do grep -q registered "$T/ans" && break; sleep 0.1; done
pid=$(awk '/registered/ {print $2}' "$T/ans")
ibckpt freeze --persist 30 "$pid" > /dev/null || fail "freeze the answering process: $(cat "$T/ans")"
grep -q "snapshot refusals ok" "$T/ans" || fail "snapshot refusals: $(cat "$T/ans")"
ibckpt -j dump "$pid" > "$T/d" || fail "dump"
jq -e ".processes[0].tgid == $pid and .processes[0].pinned_bytes < 1099511627776" "$T/d" \
	> /dev/null || fail "the dump believes the provider's identity: $(head -c 300 "$T/d")"
ibckpt thaw "$pid" > /dev/null || fail "thaw"
wait
ibckpt status | grep -q 'no process registered' || fail "registration outlived the process"
ibckpt status abc 2> "$T/e"; expect_eq 2 $? "exit status for a malformed pgid"
grep -q "'abc' is not a process group id" "$T/e" || fail "no clear error for a bad pgid"
slab() { awk '/^kmalloc-(64|128|256|512|1k) / {s += $2} END {print s}' /proc/slabinfo; }
$R cycles 200
a=$(slab)
$R cycles 1000 || fail "cycles"
b=$(slab)
echo "kmalloc objects before $a after $b"
[ $((b - a)) -lt 200 ] || fail "1000 registrations leaked $((b - a)) objects"
pass
