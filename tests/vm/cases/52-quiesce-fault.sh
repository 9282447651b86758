#!/bin/bash
# A provider that fails to quiesce aborts the freeze, and so does one that
# never answers (fault injection in the provider: IBCKPT_FAULT_QUIESCE=5,
# EIO once its gates are closed; IBCKPT_FAULT_NO_ANSWER=1). `ibckpt freeze`
# exits non-zero with a clear message: for a failure, it names the process,
# in the caller's own pid namespace, and the error; for silence, how many
# providers did not answer within the timeout (2 s here). The group is left
# running, the provider reopens its gates and the program completes with
# nothing lost. The failure is tried in the initial pid namespace and from
# inside a new one.
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
x=$PWD/tests/provider/bin/excheck

# round DIR TIMEOUT_MS MESSAGE: start excheck, fail its freeze with MESSAGE
# (%PID% stands for its pid as this shell sees it), let it finish.
round() {
	local pid want

	posted_start "$1" "$x" rxe0 --wait || { echo "excheck did not post: $(cat "$1/err")"; return 1; }
	pid=$POSTED_PID
	if ibckpt freeze --timeout "$2" "$pid" > /dev/null 2> "$1/fe"; then
		echo "freeze succeeded although the provider failed"
		return 1
	fi
	cat "$1/fe"
	want=${3//%PID%/$pid}
	grep -qF "$want" "$1/fe" || { echo "expected: $want"; return 1; }
	if ibckpt -j status "$pid" | grep -q '"state":"frozen"'; then
		echo "the group is frozen after a failed freeze"
		return 1
	fi
	posted_release
	wait "$pid" || { echo "excheck after the failed freeze: $(cat "$1/err")"; return 1; }
	echo "round ok: process $pid"
}

failed="the provider of process %PID% could not quiesce (Input/output error); the job was left running"
IBCKPT_FAULT_QUIESCE=5 round "$T/a" 10000 "$failed" || fail "a failing provider"
export -f round
export x failed
IBCKPT_FAULT_QUIESCE=5 unshare -p -f --mount-proc \
	bash -c '. tests/vm/cases/lib.sh; round "$0/b" 10000 "$failed"' "$T" ||
	fail "a failing provider, from inside a new pid namespace"
IBCKPT_FAULT_NO_ANSWER=1 round "$T/c" 2000 \
	"1 of 1 providers did not quiesce within 2000 ms; the job was left running" ||
	fail "a provider that never answers"
pass
