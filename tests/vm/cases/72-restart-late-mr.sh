#!/bin/bash
# Receives that name an MR registered after their queue was created (UCX
# grows its receive pool so) come back usable after a reacquire: every
# object is re-created before any receive is posted again (regression: the
# SRQ's and QPs' receives went back with their old lkeys when the queue was
# re-created before the MR, and the first message into them failed the
# receiving QP; an Open MPI/UCX job restarted so died of "remote operation
# error"). tests/provider/latemr, released and reacquired in place by
# `ibckpt checkpoint --leave-running`, then sends into both queues.
# vm-timeout: 300
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
setsid bash -c "tests/provider/bin/latemr rxe0 $T/go > $T/out 2> $T/err; echo \$? > $T/rc" \
	< /dev/null &
sid=$!
for _ in $(seq 100); do grep -q ready "$T/out" 2> /dev/null && break; sleep 0.1; done
grep -q ready "$T/out" || fail "latemr is not ready: $(cat "$T/err")"
ibckpt checkpoint -D "$T/ck" --leave-running --session "$sid" > "$T/c" 2> "$T/ce" ||
	fail "checkpoint --leave-running: $(cat "$T/ce")"
grep -q "released and reacquired in place" "$T/c" || fail "checkpoint said: $(cat "$T/c")"
touch "$T/go"
for _ in $(seq 200); do [ -s "$T/rc" ] && break; sleep 0.1; done
expect_eq 0 "$(cat "$T/rc" 2> /dev/null)" "latemr's exit status ($(cat "$T/err"))"
cat "$T/out"
pass
