#!/bin/bash
# A provider that fails to quiesce (fault injected: IBCKPT_FAULT_QUIESCE=5,
# EIO, after its gates closed) aborts the freeze: `ibckpt freeze` exits
# non-zero naming the process, in the caller's own pid namespace, and the
# error; the group is left running, the provider reopens its gates and the
# program completes with nothing lost. Run once in the initial pid namespace
# and once from inside a new one (unshare -p).
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt IBCKPT_FAULT_QUIESCE=5
x=$PWD/tests/provider/bin/excheck

# One round: start excheck, fail its freeze, let it finish. Prints its pid as
# this shell's namespace sees it on fd 4 (stdout is the log).
round() {
	local in=$1 pid fe=$1.fe
	mkfifo "$in"
	setsid "$x" rxe0 --wait < "$in" > "$in.out" 2> "$in.err" &
	pid=$!
	exec 3> "$in"
	for _ in $(seq 100); do
		grep -q posted "$in.out" && break
		sleep 0.1
	done
	grep -q posted "$in.out" || { echo "excheck did not post: $(cat "$in.err")"; return 1; }
	if ibckpt freeze --timeout 10000 "$pid" > /dev/null 2> "$fe"; then
		echo "freeze succeeded although the provider failed"
		return 1
	fi
	cat "$fe"
	grep -q "the provider of process $pid could not quiesce (Input/output error); the group was left running" "$fe" ||
		{ echo "no clear error naming process $pid"; return 1; }
	if ibckpt -j status "$pid" | grep -q '"state":"frozen"'; then
		echo "the group is frozen after a failed freeze"
		return 1
	fi
	echo go >&3
	exec 3>&-
	wait "$pid" || { echo "excheck after the failed freeze: $(cat "$in.err")"; return 1; }
	echo "round ok: process $pid"
}

round "$T/a" || fail "initial pid namespace"
export -f round
export T x
unshare -p -f --mount-proc bash -c '. tests/vm/cases/lib.sh; round "$0/b"' "$T" ||
	fail "from inside a new pid namespace"
pass
