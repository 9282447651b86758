#!/bin/bash
# Bad requests get a clear error and a non-zero exit, and change nothing:
# freezing twice, thawing a running group, unknown or malformed pgid, the
# requester's own group ("the job contains the requester itself"), an
# unprivileged thaw, a bad option. `ibckpt status` needs no privilege, but
# as nobody it shows no thread's ip or system call (where another user's
# threads are parked is not for everyone to read). nobody with
# CAP_CHECKPOINT_RESTORE alone (a checkpoint tool that is not root) can
# neither dump nor freeze root's process (it needs CAP_SYS_ADMIN) nor freeze
# --tree 1, but freezes and thaws its own.
. "$(dirname "$0")/lib.sh"
wl_start run 1
refused 1 "not frozen" ibckpt thaw "$WL_PID"
# persistent long enough for what follows on a loaded debug kernel (30 s
# once ran out there); the case thaws it itself
ibckpt freeze --persist 300 "$WL_PID" > /dev/null || fail "freeze"
refused 1 "already frozen" ibckpt freeze --persist 30 "$WL_PID"
refused 1 "no such process group" ibckpt freeze 999999
refused 1 "no such process group" ibckpt thaw 999999
refused 2 "not a process group id" ibckpt freeze abc
refused 2 "not a process group id" ibckpt thaw -5
refused 2 "--persist takes" ibckpt freeze --persist 0 "$WL_PID"
refused 2 "usage" ibckpt freeze
refused 1 "needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN" \
	setpriv --reuid=65534 --regid=65534 --clear-groups ibckpt thaw "$WL_PID"
refused 1 "the job contains the requester itself" setsid bash -c 'ibckpt freeze $(ps -o pgid= $$)'
# none of that changed the freeze
ibckpt status "$WL_PID" > "$T/st" 2>&1
grep -q "frozen, 7 threads: 7 parked" "$T/st" || fail "state changed: $(cat "$T/st")"
# reading status needs no privilege, but where another user's threads are
# parked (user-space PCs, system calls) is not shown
setpriv --reuid=65534 --regid=65534 --clear-groups ibckpt -j status "$WL_PID" > "$T/n" ||
	fail "status as nobody"
jq -e '[.sessions[0].thread_list[] | select(.ip != 0 or has("syscall"))] | length == 0' "$T/n" \
	> /dev/null || fail "status as nobody shows where threads are: $(head -c 300 "$T/n")"
ibckpt -j status "$WL_PID" | jq -e '[.sessions[0].thread_list[] | select(.ip != 0)] | length == 7' \
	> /dev/null || fail "status as root does not show where threads are"
# CAP_CHECKPOINT_RESTORE alone (a checkpoint tool that is not root) stops
# and reads only its own user's processes
cr() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+checkpoint_restore \
	--ambient-caps=+checkpoint_restore "$@"; }
# a provider of root's that gave a snapshot: its MR keys are not for nobody
setsid tests/kmod/regtest answer > "$T/ans" 2>&1 &
for _ in $(seq 50); do grep -q registered "$T/ans" && break; sleep 0.1; done
rpid=$(awk '/registered/ {print $2}' "$T/ans")
ibckpt freeze --persist 300 "$rpid" > /dev/null || fail "freeze regtest"
ibckpt dump "$rpid" > /dev/null || fail "root cannot dump regtest"
refused 1 "the job has another user's process: needs CAP_SYS_ADMIN" cr ibckpt dump "$rpid"
ibckpt thaw "$rpid" > /dev/null || fail "thaw regtest"
ibckpt thaw "$WL_PID" > /dev/null || fail "thaw"
refused 1 "the job has another user's process: needs CAP_SYS_ADMIN" cr ibckpt freeze --persist 5 "$WL_PID"
refused 1 "contains PID 1" cr ibckpt freeze --persist 5 --tree 1
nbd=$(mktemp -d /tmp/nb.XXXXXX) && chmod 0777 "$nbd"
cr setsid sh -c 'echo $$ > "$1/pid"; exec "$2" spin "$1/wl" 1' sh "$nbd" "$WORKLOAD" \
	> /dev/null 2>&1 &
for _ in $(seq 50); do [ -s "$nbd/pid" ] && break; sleep 0.1; done
nb=$(cat "$nbd/pid")
sleep 0.5
cr ibckpt freeze --persist 300 "$nb" > "$T/o" 2> "$T/e" || fail "freeze one's own process: $(cat "$T/e")"
a=$("$WORKLOAD" snap "$nbd/wl"); sleep 0.3; b=$("$WORKLOAD" snap "$nbd/wl")
wl_none_moved "$a" "$b"
cr ibckpt thaw "$nb" > /dev/null || fail "thaw one's own process"
kill -9 "$nb" "$WL_PID"
pass
