#!/bin/bash
# Task works run inside do_exit() before PF_EXITING
# is set, from ptrace's exit event (ptrace_notify()) and from io_uring's
# cancel (io_uring_files_cancel()). A thread whose park work runs there
# must not park mid-exit and be reported parked: it counts as exited and
# goes on exiting while the rest of the job stays frozen.
#
# tests/kmod/exitpark holds a traced thread T of a two-thread job at a ptrace
# stop while the freeze queues T's park work (a stopped thread is not woken
# for it), then lets it go (see exitpark.c): "notify" at the syscall entry
# of its exit, "uring" at its exit event with an io_uring request in flight,
# "plain" (the control: PF_EXITING by the time the work runs) the same
# without io_uring; T calls exit() ("thread": only its system call says it
# is exiting) or exit_group() ("group"). The job freezes with the main
# thread parked and T exited, and T's exit completes while the job is
# frozen. With exit_group() the main thread is killed: by the freeze's
# release ("notify": both exited), or before the freeze ("uring", "plain":
# T alone is tracked).
# With the module of 8b2bc99, "notify" and "uring" park T inside do_exit().
. "$(dirname "$0")/lib.sh"
EXITPARK=tests/kmod/exitpark
[ -x "$EXITPARK" ] || fail "$EXITPARK not built (make)"

one() {
	local mode=$1 how=$2 pgid tid sid st
	# parked while T is held; parked and exited once frozen
	local held=1 want_parked=1 want_exited=1
	if [ "$how" = group ]; then
		want_parked=0
		[ "$mode" = notify ] && want_exited=2 || held=0
	fi
	mkfifo "$T/in.$mode.$how"
	"$EXITPARK" "$mode" "$how" < "$T/in.$mode.$how" > "$T/x" 2> "$T/xe" &
	local xp=$!
	exec 3> "$T/in.$mode.$how"
	for _ in $(seq 100); do grep -q ready "$T/x" && break; sleep 0.05; done
	read -r _ pgid tid <<< "$(grep ready "$T/x")" && [ -n "$tid" ] || fail "$mode $how: exitpark: $(cat "$T/x" "$T/xe")"
	ibckpt -j freeze --timeout 20000 --persist 60 "$pgid" > "$T/f" 2> "$T/e" &
	local fz=$!
	# T is held, its park work queued: one thread parked, one pending
	for _ in $(seq 200); do
		ibckpt -j status "$pgid" > "$T/s" 2> /dev/null
		json_get st "$T/s" pending
		[ "$st" = 1 ] && break
		sleep 0.05
	done
	[ "$st" = 1 ] || fail "$mode $how: T's park work is not pending: $(cat "$T/s")"
	json_get st "$T/s" parked
	expect_eq "$held" "$st" "$mode $how: threads parked while T is held"
	json_get sid "$T/s" session
	echo go >&3
	wait "$fz" || fail "$mode $how: freeze: $(cat "$T/e")"
	# exitpark says within 3 s whether T exited or is stuck in do_exit()
	for _ in $(seq 100); do grep -qE "^(exited|stuck)" "$T/x" && break; sleep 0.05; done
	json_get st "$T/f" parked
	echo "$mode $how: frozen with $st parked; T: $(sed -n '2,$p' "$T/x" | tr '\n' ' ')" >&2
	grep -q "^exited" "$T/x" || fail "$mode $how: T did not exit while the job was frozen: $(cat "$T/x")"
	expect_eq "$want_parked" "$st" "$mode $how: threads parked"
	json_get st "$T/f" exited
	expect_eq "$want_exited" "$st" "$mode $how: threads exited"
	ibckpt thaw --id "$sid" > /dev/null || fail "$mode $how: thaw"
	echo end >&3
	exec 3>&-
	wait "$xp" || fail "$mode $how: exitpark: $(cat "$T/xe")"
}

for mode in notify uring plain; do
	for how in thread group; do
		one "$mode" "$how"
	done
done
pass
