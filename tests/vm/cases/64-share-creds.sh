#!/bin/bash
# IBCKPT_IOC_SHARE_CREDS (kmod/creds.c): threads whose credentials became
# objects of their own with the same content, as CRIU's restorer leaves them,
# take the control thread's object again, and uverbs' legacy write() then
# accepts them on a device the control thread opened (before: EACCES); a
# thread whose credentials differ keeps them (a capability dropped; a
# Landlock domain, which only the LSM blob shows: Debian's kernel runs
# Landlock); the counts say so. tests/kmod/sharecreds: of six threads asleep
# in read() between commands, two call prctl(PR_SET_SECUREBITS) with the
# current bits and one capset() with the current sets (new objects, same
# content), one drops CAP_SYS_NICE, one enters a Landlock domain, and one
# calls setresuid(-1, -1, -1), which 6.1 does not commit at all: the ioctl
# answers 3 switched, 2 differ, 1 shared; GET_CONTEXT and QUERY_DEVICE by
# write() then succeed from the switched threads, the two others still get
# EACCES and keep their restrictions. Refusals: ENOTCONN before the
# registration and on another file, EPERM from another thread. Then: works
# still queued (threads asleep in read(): TWA_RESUME does not wake them) pin
# the module, one reference each, rmmod is refused, and once the threads
# have run them it succeeds.
# vm-guest: own
# (it unloads the module)
. "$(dirname "$0")/lib.sh"
X=tests/kmod/sharecreds
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
echo "LSMs: $(cat /sys/kernel/security/lsm 2> /dev/null)"

dev=
for d in /sys/class/infiniband_verbs/uverbs*; do
	[ "$(cat "$d/ibdev" 2> /dev/null)" = rxe0 ] && dev=/dev/infiniband/$(basename "$d")
done
[ -n "$dev" ] || fail "no uverbs device for rxe0"
$X "$dev" > "$T/out" 2> "$T/err"
rc=$?
cat "$T/out"
[ "$rc" = 0 ] || fail "sharecreds $dev: exit $rc: $(cat "$T/err")"
grep -q "^share: switched 3 differ 2 shared 1$" "$T/out" || fail "counts (Landlock on): $(cat "$T/out")"

# queued works pin the module; the threads run them once woken
posted_start "$T/hold" $X hold || fail "hold: $(cat "$T/hold/err")"
refs=$(cat /sys/module/ibckpt/refcnt)
echo "ibckpt references with the threads asleep: $refs"
expect_eq 2 "$refs" "module references (one per queued work)"
rmmod ibckpt 2> "$T/rm" && fail "rmmod succeeded with switch works queued"
grep -q 'in use' "$T/rm" || fail "rmmod: $(cat "$T/rm")"
posted_release
wait "$POSTED_PID" || fail "hold: $(cat "$T/hold/out" "$T/hold/err")"
grep -q 'sharecreds: ran' "$T/hold/out" || fail "hold: $(cat "$T/hold/out")"
rmmod ibckpt || fail "rmmod after the works ran"
modprobe ibckpt || fail "modprobe ibckpt"
pass
