#!/bin/bash
# A generic netlink request runs under genl's
# cb_lock (read), and a family (un)registration queued behind a slow one
# stalls every generic netlink user. THAW, and the release of the socket
# that owns a freeze, must return once the threads are released, not wait
# for them to be scheduled; `ibckpt thaw` still returns only when they run.
#
# The delay: the job's 32 spinning threads are in a cgroup whose cpu.max is
# cut to 1 ms per second while they are parked ("hold"), so once released
# they stay in their parks, starved (the module of 8b2bc99 waited for them
# inside THAW, up to 10 s), until the test lifts the limit. Then:
#  - a raw THAW request (tests/kmod/thawlat) answers at once, naming the
#    session, which SESSION_GET lists as "thawing" with threads still
#    parked; meanwhile a second THAW is refused, status by job says "not
#    frozen" and by id "thawing"; once the limit is lifted the session goes;
#  - a new freeze of the job may start while the last one is thawing;
#  - closing the netlink socket that owns a freeze returns at once too;
#  - `ibckpt thaw`, and an interrupted holding `ibckpt freeze`, are still
#    running a second later, and return only once the limit is lifted and
#    every thread has left its park.
# With the module of 8b2bc99 the raw THAW answers only when the threads are
# out (here: after its 10 s bound), and the session is gone by then.
# vm-smp: 2
# (two vCPUs: 32 spinning threads beside the test itself)
. "$(dirname "$0")/lib.sh"
THAWLAT=tests/kmod/thawlat
[ -x "$THAWLAT" ] || fail "$THAWLAT not built (make)"
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
grep -qw cpu /sys/fs/cgroup/cgroup.controllers || skip "no cpu controller in cgroup v2"
grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
	echo +cpu > /sys/fs/cgroup/cgroup.subtree_control || fail "enable the cpu controller"
cg=/sys/fs/cgroup/ibckpt-thaw.$$
mkdir "$cg" || fail "mkdir $cg"
N=32
WL_FILE=$T/wl
setsid bash -c "echo \$\$ > $cg/cgroup.procs && exec $WORKLOAD spin $WL_FILE $N" \
	> "$T/wl.out" 2> "$T/wl.err" &
WL_PID=$!
# all N threads, not only their counters (on the debug kernel a freeze
# right after the counters appeared once parked 30 of 32)
wl_wait_ready
fast() { echo "max 100000" > "$cg/cpu.max"; }
hold() { echo "1000 1000000" > "$cg/cpu.max"; }
# key=value from a line of thawlat's
val() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<< "$2"; }
# what thawlat says of a session once nothing of it is parked any more
released() { [[ $1 =~ after=(gone|thawing\ parked=0)$ ]]; }
freeze() {
	fast
	ibckpt -j freeze --persist 60 "$WL_PID" > "$T/f" 2> "$T/e" || fail "freeze: $(cat "$T/e")"
	json_get SID "$T/f" session
	json_get parked "$T/f" parked
	expect_eq "$N" "$parked" "threads parked"
}
# wait for the first line of file $1 (15 s)
first_line() {
	for _ in $(seq 300); do [ -s "$1" ] && break; sleep 0.05; done
	head -n1 "$1"
}
# every thread runs again once the limit is lifted (within 15 s: 32
# spinners on 2 emulated CPUs may take a while to all get one, on a busy host)
all_run() {
	local a b i
	fast
	a=$(wl_snap)
	for i in $(seq 30); do
		sleep 0.5
		b=$(wl_snap)
		(wl_all_moved "$a" "$b") 2> /dev/null && return 0
	done
	wl_all_moved "$a" "$b"
}

# --- a raw THAW answers before the threads have left their parks
freeze
hold
"$THAWLAT" thaw "$SID" > "$T/t" 2> "$T/te" &
tl=$!
line=$(first_line "$T/t")
echo "raw THAW: $line" >&2
[ "$(val err "$line")" = 0 ] || fail "THAW failed: $line $(cat "$T/te")"
expect_eq "$SID" "$(val reply_session "$line")" "THAW's reply names the session"
expect_eq thawing "$(val after "$line")" "the session right after THAW"
[ "$(val parked "$line")" -gt 0 ] || fail "no thread parked right after THAW ($line)"
# while it is thawing: not the job's session any more, not thawed twice
refused 1 "no such freeze session" ibckpt thaw --id "$SID"
ibckpt status "$WL_PID" | grep -q "is not frozen" || fail "status by job sees a thawing session"
ibckpt status --id "$SID" > "$T/s"
grep -q "thawing" "$T/s" || fail "status --id $SID: $(cat "$T/s")"
fast
wait "$tl" || fail "thawlat: $(cat "$T/t" "$T/te")"
thaw_us=$(val thaw_us "$line")
echo "raw THAW ${thaw_us} us; the session went $(val unpark_us "$(tail -n1 "$T/t")") us after it" >&2
[ "$thaw_us" -le 1000000 ] || fail "THAW took ${thaw_us} us"
ibckpt status --id "$SID" | grep -q "is not frozen" || fail "the session outlived its threads"
all_run

# --- a new freeze of the job while the last one is still thawing: the
# threads leave the old session's parks for the new one's
freeze
hold
"$THAWLAT" thaw "$SID" > "$T/t" 2> "$T/te" &
tl=$!
line=$(first_line "$T/t")
expect_eq thawing "$(val after "$line")" "the session right after THAW"
ibckpt -j freeze --persist 60 --timeout 30000 "$WL_PID" > "$T/f2" 2> "$T/e" &
fz=$!
sleep 0.5
fast
wait "$fz" || fail "freeze while the last one thaws: $(cat "$T/e")"
json_get SID2 "$T/f2" session
json_get parked "$T/f2" parked
[ "$SID2" != "$SID" ] || fail "the same session again"
expect_eq "$N" "$parked" "threads parked by the new freeze"
wait "$tl" || fail "thawlat: $(cat "$T/t" "$T/te")"
a=$(wl_snap); sleep 0.5; b=$(wl_snap)
wl_none_moved "$a" "$b"
ibckpt thaw --id "$SID2" > /dev/null || fail "thaw $SID2"
all_run

# --- closing the socket that owns a freeze returns at once too
fast
mkfifo "$T/in"
"$THAWLAT" hold "$WL_PID" < "$T/in" > "$T/h" 2> "$T/he" &
hl=$!
exec 3> "$T/in"
line=$(first_line "$T/h")
[[ $line == frozen* ]] || fail "thawlat hold: $(cat "$T/h" "$T/he")"
hold
echo close >&3
exec 3>&-
for _ in $(seq 300); do [ "$(wc -l < "$T/h")" -ge 2 ] && break; sleep 0.05; done
line=$(sed -n 2p "$T/h")
echo "owner's close: $line" >&2
fast
wait "$hl" || fail "thawlat hold: $(cat "$T/h" "$T/he")"
close_us=$(val close_us "$line")
expect_eq thawing "$(val after "$line")" "the session right after its owner's close"
[ "$(val parked "$line")" -gt 0 ] || fail "no thread parked right after the close ($line)"
[ "$close_us" -le 1000000 ] || fail "close() took ${close_us} us"
all_run

# --- `ibckpt thaw` returns only once every thread has left its park
freeze
hold
"$THAWLAT" watch "$SID" ibckpt -j thaw --id "$SID" > "$T/w" 2> "$T/we" &
wp=$!
sleep 1
[ ! -s "$T/w" ] || fail "ibckpt thaw returned while its threads were held: $(cat "$T/w")"
fast
wait "$wp" || fail "watch: $(cat "$T/we")"
line=$(tail -n1 "$T/w")
echo "ibckpt thaw: $line" >&2
expect_eq 0 "$(val rc "$line")" "ibckpt thaw's exit status ($(cat "$T/we"))"
head -n1 "$T/w" | grep -q '"state":"thawed"' || fail "ibckpt thaw said: $(cat "$T/w")"
[ "$(val seen_parked "$line")" -gt 0 ] || fail "no thread seen parked while ibckpt thaw ran: $line"
released "$line" || fail "ibckpt thaw returned while threads were parked: $line"
all_run

# --- and so does a holding freeze, interrupted
fast
ibckpt freeze "$WL_PID" > "$T/f" 2>&1 &
cli=$!
for _ in $(seq 100); do grep -q holding "$T/f" && break; sleep 0.05; done
sid=$(sed -n 's/.*ibckpt thaw --id \([0-9]*\).*/\1/p' "$T/f")
[ -n "$sid" ] || fail "freeze: $(cat "$T/f")"
hold
kill -INT "$cli"
sleep 1
kill -0 "$cli" 2> /dev/null || fail "the interrupted freeze returned while its threads were held"
fast
wait "$cli" || fail "the interrupted freeze: $(cat "$T/f")"
after=$("$THAWLAT" get "$sid")
grep -q "thawed" "$T/f" || fail "the interrupted freeze said: $(cat "$T/f")"
released "$after" || fail "the interrupted freeze returned while its threads were parked:$after"
all_run

kill -9 "$WL_PID"
wait "$WL_PID" 2> /dev/null
rmdir "$cg" 2> /dev/null
pass
