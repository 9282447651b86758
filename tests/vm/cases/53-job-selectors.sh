#!/bin/bash
# A whole job in one freeze, named by session, process tree or cgroup:
# tests/freeze/workload mover forks a child every 50 ms, each of which
# leaves for a process group, or a group and a session, of its own; frozen
# 8 times each by --tree, --session and --cgroup (a cgroup and one below it)
# while it forks, it is frozen whole (no process of it moves while FROZEN,
# not even a child born during the freeze, and every process is counted);
# a process moved into a frozen cgroup is frozen too and listed among the
# members; once the root is killed, thaw by --tree fails ("no such
# process"), a thaw by session id works and the orphaned child resumes;
# threads blocked in every kind of call are parked by each selector;
# overlapping jobs are refused naming the process and the session, a second
# freeze of the tree says "already frozen"; bad selectors get a clear error
# and leave no session.
# vm-timeout: 900
# vm-debug-timeout: 4800
# (its movers fork without pause, which KASAN, lockdep and kmemleak make about eight times slower)
. "$(dirname "$0")/lib.sh"

# mover_running: the workload runs (a fixed 0.5 s was not always enough
# under load)
mover_running() { wl_wait_ready; }
# The movers tick every IBCKPT_MOVER_TICK_MS (default 10; `make soak` runs 1,
# which keeps the guest's CPU busy with wakeups).
tick=${IBCKPT_MOVER_TICK_MS:-10}
# mover_start HOW N: tests/freeze/workload mover, in a session of its own
mover_start() {
	WL_FILE=$T/wl.$RANDOM
	setsid "$WORKLOAD" mover "$WL_FILE" "$1" "$2" "$tick" > "$T/wl.out" 2> "$T/wl.err" &
	WL_PID=$!
	mover_running
}

# moved_on FROZEN LATER: every process counted while frozen went on (the
# workload may have started new ones since, which are not compared)
moved_on() {
	local a=($1) b=($2) i
	[ "${b[0]}" = 0 ] || fail "workload reported ${b[0]} errors: $(cat "$T/wl.err")"
	for ((i = 1; i < ${#a[@]}; i++)); do
		[ "${b[i]}" -gt "${a[i]}" ] || fail "process $((i - 1)) made no progress ($1 -> $2)"
	done
}

# cycles N SELECTOR...: freeze and thaw N times while the mover forks
cycles() {
	local n=$1 i a b c procs
	shift
	for i in $(seq "$n"); do
		ibckpt -j freeze --persist 60 "$@" > "$T/f" 2> "$T/fe" ||
			fail "freeze $* #$i: $(cat "$T/fe")"
		a=$(wl_snap); sleep 0.3; b=$(wl_snap)
		wl_none_moved "$a" "$b"
		# every process the workload started (one counter each) is a member
		json_get procs "$T/f" procs
		[ "$procs" -ge $(($(wc -w <<< "$b") - 1)) ] ||
			fail "freeze $* #$i: $procs processes frozen, workload has $(($(wc -w <<< "$b") - 1)): $(cat "$T/f")"
		ibckpt thaw "$@" > /dev/null || fail "thaw $* #$i"
		sleep 0.25
		c=$(wl_snap)
		moved_on "$b" "$c"
	done
}

# --- a process tree: children move to new groups and sessions
mover_start sid 80
cycles 8 --tree "$WL_PID"
ps -o sid=,pgid= -p "$(pgrep -P "$WL_PID" | tail -n1)" > "$T/ids"
read -r sid pg < "$T/ids"
[ "$sid" != "$WL_PID" ] || [ "$pg" != "$WL_PID" ] || fail "the children did not move"
ibckpt status --tree "$WL_PID" | grep -q "process tree of $WL_PID is not frozen" ||
	fail "status of a thawed tree"
# overlapping jobs: the tree is frozen, a process of it is in this group
ibckpt freeze --persist 60 --tree "$WL_PID" > /dev/null || fail "freeze the tree"
ibckpt -j status --tree "$WL_PID" > "$T/s"
jq -e '.sessions[0].job.type == "tree" and (.sessions[0].members | length) > 10' "$T/s" > /dev/null ||
	fail "status -j shows no tree job with its members: $(head -c 400 "$T/s")"
ibckpt status --tree "$WL_PID" | grep -q "^  members: $WL_PID " || fail "status lists no members"
ibckpt freeze --persist 60 "$WL_PID" > /dev/null 2> "$T/e" && fail "an overlapping freeze worked"
grep -Eq "process $WL_PID is frozen by session [0-9]+" "$T/e" || fail "EBUSY message: $(cat "$T/e")"
ibckpt freeze --persist 60 --tree "$WL_PID" > /dev/null 2> "$T/e" && fail "a second freeze worked"
grep -q "already frozen" "$T/e" || fail "second freeze: $(cat "$T/e")"
# the root dies while frozen: the rest stays frozen, a thaw by id still works
id=$(ibckpt -j status --tree "$WL_PID" | jq '.sessions[0].session')
kill -9 "$WL_PID"
sleep 0.3
a=$(wl_snap); sleep 0.3; b=$(wl_snap)
wl_none_moved "$a" "$b"
ibckpt thaw --tree "$WL_PID" > /dev/null 2> "$T/e" && fail "thaw of a dead root worked"
grep -q "no such process" "$T/e" || fail "thaw of a dead root: $(cat "$T/e")"
ibckpt thaw --id "$id" | grep -q "freeze session $id thawed" || fail "thaw --id"
sleep 0.3
c=$(wl_snap)
a=($b) c=($c)
[ "${c[2]}" -gt "${a[2]}" ] || fail "an orphaned child did not resume"
pkill -9 -f "workload mover $WL_FILE"

# --- a session: children move to new process groups of the same session
mover_start pgrp 80
cycles 8 --session "$WL_PID"
pkill -9 -f "workload mover $WL_FILE"

# --- a cgroup and the cgroups below it
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
cg=/sys/fs/cgroup/ibckpt-job.$$
mkdir -p "$cg/inner" || fail "mkdir $cg"
WL_FILE=$T/wl.cg
setsid bash -c "echo \$\$ > $cg/inner/cgroup.procs && exec $WORKLOAD mover $WL_FILE sid 80 $tick" \
	> "$T/wl.out" 2> "$T/wl.err" &
WL_PID=$!
mover_running
cycles 8 --cgroup "$cg"
# a process moved into the frozen cgroup is frozen too
ibckpt -j freeze --persist 60 --cgroup "$cg" > "$T/f" || fail "freeze the cgroup"
json_get before "$T/f" procs
setsid "$WORKLOAD" spin "$T/late" 2 > /dev/null 2>&1 &
late=$!
sleep 0.3
echo "$late" > "$cg/cgroup.procs" || fail "move $late into $cg"
for _ in $(seq 50); do
	x=$("$WORKLOAD" snap "$T/late"); sleep 0.1; y=$("$WORKLOAD" snap "$T/late")
	[ "$x" = "$y" ] && break
done
[ "$x" = "$y" ] || fail "a process moved into the frozen cgroup keeps running"
ibckpt -j status --cgroup "$cg" > "$T/s"
json_get state "$T/s" state
json_get after "$T/s" procs
[ "$state" = frozen ] && [ "$after" -gt "$before" ] ||
	fail "status after the newcomer: $(head -c 300 "$T/s")"
ibckpt status --cgroup "$cg" | grep -q "members:.* $late\\b" || fail "the newcomer is no member"
ibckpt thaw --cgroup "$cg" > /dev/null || fail "thaw the cgroup"
sleep 0.3
z=$("$WORKLOAD" snap "$T/late")
[ "$z" != "$y" ] || fail "the newcomer did not resume"
kill -9 "$late"
pkill -9 -f "workload mover $WL_FILE"

# --- threads blocked in every kind of call (workload run), by each selector
wl_start run 2
echo "$WL_PID" > "$cg/cgroup.procs" || fail "move the thread workload into $cg"
for sel in "--session $WL_PID" "--tree $WL_PID" "--cgroup $cg" "$WL_PID"; do
	ibckpt freeze --persist 60 $sel > "$T/f" || fail "freeze $sel"
	grep -q "frozen: 8 threads parked, 0 exited" "$T/f" || fail "freeze $sel: $(cat "$T/f")"
	a=$(wl_snap); sleep 0.3; b=$(wl_snap)
	wl_none_moved "$a" "$b"
	ibckpt thaw $sel > /dev/null || fail "thaw $sel"
	sleep 0.3
	c=$(wl_snap)
	wl_all_moved "$b" "$c"
done
kill -9 "$WL_PID"

# --- bad input: a clear error, a non-zero exit, nothing changed
refused 1 "no such session" ibckpt freeze --session 999999
refused 1 "no such process" ibckpt freeze --tree 999999
refused 1 "no such cgroup" ibckpt freeze --cgroup /sys/fs/cgroup/none-such
refused 1 "not a cgroup v2 directory" ibckpt freeze --cgroup /tmp
refused 1 "the job contains PID 1" ibckpt freeze --tree 1
refused 1 "the job contains the requester itself" ibckpt freeze --tree $$
refused 1 "the job contains the requester itself" setsid bash -c 'ibckpt freeze --session $$'
refused 1 "no such freeze session" ibckpt thaw --id 123456
refused 2 "name one job only" ibckpt freeze --tree $$ --session $$
refused 2 "not a session id" ibckpt freeze --session abc
refused 2 "names an existing freeze" ibckpt freeze --id 3
ibckpt status | grep -q "no job frozen" || fail "a refused request left a session: $(ibckpt status)"
rmdir "$cg/inner" "$cg" 2>/dev/null
pass
