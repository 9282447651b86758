#!/bin/bash
# Restart milestone M0: Debian's stock criu (3.17.1) checkpoints and restores a
# small process tree in the test bed (Debian's 6.1 kernel, overlay root with a
# 9p lower layer, images on tmpfs), the way the restart will use it: a tree
# started with setsid (stdio to files, no --shell-job), `criu dump` (which
# kills it), `criu restore -d` (the tree runs on after criu exits), both with
# --manage-cgroups=ignore.
# `criu check` must say "Looks good." (not --all, which also wants tun and
# autofs), with the features the restart relies on: clone3_set_tid,
# get_rseq_conf and network_lock_nftables (no iptables in the bed:
# --tcp-established needs --network-lock nftables). The case loads the
# socket *_diag modules criu queries. Then tests/criu's
# criutest (a parent with a thread and a child): the same pids, tids, group,
# session and parent, the same descriptor numbers, the output file's offset,
# and, checked by the program itself after restore: anonymous (private and
# shared) memory, a pipe's unread bytes, an eventfd's counter, a thread
# blocked in read() on a pipe whose read is restarted and gets a byte written
# through /proc/PID/fd/N after the restore, and the child's blocked read().
# A control run without criu shows that the program's own checks can fail.
. "$(dirname "$0")/lib.sh"
CT=tests/criu/bin/criutest
[ -x "$CT" ] || fail "$CT is not built (make)"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"

# The socket diagnostics criu queries (it would autoload them through
# /sbin/modprobe, as guest-init configures; loaded here explicitly).
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"

# `criu check` without --all: --all also wants tun and autofs, which the
# restart does not use. Its first run probes the kernel (and prints errors for
# the missing iptables and /dev/net/tun, harmless) and caches the result in
# /run/criu.kdat.
criu check > "$T/check" 2>&1 || fail "criu check: $(cat "$T/check")"
grep -q '^Looks good\.$' "$T/check" || fail "criu check: $(cat "$T/check")"
# same pids (clone3 set_tid), threads with rseq (glibc 2.36), the lock of
# --tcp-established through libnftables (there is no iptables in the bed)
for f in clone3_set_tid get_rseq_conf network_lock_nftables; do
	criu check --feature "$f" > "$T/feat" 2>&1 || fail "criu feature $f: $(cat "$T/feat")"
done

ct_start() {
	mkdir -p "$1"
	setsid "$CT" run "$1" < /dev/null > "$1/out" 2> "$1/err" &
	for _ in $(seq 300); do [ -s "$1/state" ] && break; sleep 0.1; done
	[ -s "$1/state" ] || fail "criutest did not start: $(cat "$1/err")"
	# shellcheck disable=SC1091
	. "$1/state"
}
# ct_wake DIR: the byte for the blocked reader, through /proc; waits for the verdict
ct_wake() {
	printf x > "/proc/$PID/fd/$WAKE_W" || fail "cannot write into /proc/$PID/fd/$WAKE_W"
	for _ in $(seq 300); do [ -s "$1/result" ] && break; sleep 0.1; done
	[ -s "$1/result" ] || fail "criutest gave no verdict: $(cat "$1/err")"
}
# what must survive: "pid ppid pgid sid" of both processes, the tids, the fds
ids() { ps -o pid=,pgid=,sid= -p "$PID"; ps -o pid=,ppid=,pgid=,sid= -p "$CHILD"; }
threads() { ls "/proc/$PID/task" | sort -n | tr '\n' ' '; }
fds() { ls "/proc/$1/fd" | sort -n | tr '\n' ' '; }
# gone PID...: wait up to 10 s until the processes are gone, reaping our own
# zombies (one would keep its pid taken, and the restore needs it free)
gone() {
	local p s
	for _ in $(seq 100); do
		s=0
		for p in "$@"; do
			[ -e "/proc/$p" ] || continue
			s=1
			[ "$(awk '{print $3}' "/proc/$p/stat" 2> /dev/null)" = Z ] && wait "$p" 2> /dev/null
		done
		[ $s = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
# in_read TID: the thread is blocked in read() (syscall 0 on x86-64)
in_read() {
	local s
	for _ in $(seq 100); do
		read -r s _ < "/proc/$1/syscall" 2> /dev/null && [ "$s" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# Control: without criu, bytes slipped into the pipe must make criutest fail.
ct_start "$T/control"
printf abc > "/proc/$PID/fd/$PIPE_W"
ct_wake "$T/control"
grep -q 'FAIL: the pipe held 20003 unread bytes' "$T/control/result" ||
	fail "criutest missed extra pipe bytes: $(cat "$T/control/result")"
gone "$PID" "$CHILD" || fail "the control criutest did not exit"

# The real run.
D=$T/ct
IMG=$(mktemp -d /run/ckpt.XXXXXX)
ct_start "$D"
in_read "$TID" || fail "thread $TID is not blocked in read()"
in_read "$CHILD" || fail "child $CHILD is not blocked in read()"
before_ids=$(ids) before_threads=$(threads) before_fds=$(fds "$PID") before_cfds=$(fds "$CHILD")
[ "$(xargs <<< "$before_ids")" = "$PID $PID $PID $CHILD $PID $PID $PID" ] ||
	fail "criutest is not a setsid tree: $before_ids"
[ "$before_threads" = "$PID $TID " ] || fail "threads: $before_threads"
for fd in "$PIPE_R" "$PIPE_W" "$WAKE_R" "$WAKE_W" "$EFD" "$CHILD_W"; do
	case " $before_fds" in *" $fd "*) ;; *) fail "criutest's fds lack $fd: $before_fds" ;; esac
done

t0=$(date +%s%N)
criu dump -t "$PID" -D "$IMG" -v4 -o dump.log --manage-cgroups=ignore 2> "$T/dump.err" || {
	grep -E 'Error|Warn' "$IMG/dump.log" | tail -n 20 >&2
	fail "criu dump: $(cat "$T/dump.err")"
}
t1=$(date +%s%N)
gone "$PID" "$CHILD" || fail "pids $PID/$CHILD still exist after the dump: $(ps -o pid=,stat= -p "$PID,$CHILD")"
[ -s "$D/result" ] && fail "criutest ended before the restore: $(cat "$D/result")"

t2=$(date +%s%N)
criu restore -d -D "$IMG" -v4 -o restore.log --manage-cgroups=ignore 2> "$T/restore.err" || {
	grep -E 'Error|Warn' "$IMG/restore.log" | tail -n 20 >&2
	fail "criu restore: $(cat "$T/restore.err")"
}
t3=$(date +%s%N)
echo "criu dump $(((t1 - t0) / 1000000)) ms, restore $(((t3 - t2) / 1000000)) ms," \
	"images $(du -sk "$IMG" | cut -f1) KiB"

[ -e "/proc/$PID" ] || fail "pid $PID is not running after criu restore -d returned"
expect_eq "$before_ids" "$(ids)" "pid/pgid/sid (and the child's parent) after restore"
expect_eq "$before_threads" "$(threads)" "threads after restore"
expect_eq "$before_fds" "$(fds "$PID")" "descriptor numbers after restore"
expect_eq "$before_cfds" "$(fds "$CHILD")" "the child's descriptor numbers after restore"
in_read "$TID" || fail "thread $TID is not back in read() after restore"
in_read "$CHILD" || fail "child $CHILD is not back in read() after restore"
[ -s "$D/result" ] && fail "criutest ended before the byte was sent: $(cat "$D/result")"

ct_wake "$D"
[ "$(cat "$D/result")" = ok ] || fail "after restore: $(cat "$D/result")"
# stdout was restored at its offset: the line before the dump is still there
expect_eq "criutest: pid $PID ready
criutest: ok" "$(cat "$D/out")" "criutest's output file"
gone "$PID" "$CHILD" || fail "criutest $PID did not exit after its verdict"
rm -rf "$IMG"
pass
