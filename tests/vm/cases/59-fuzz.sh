#!/bin/bash
# vm-timeout: 600
# tests/kmod/fuzz against the module's user-facing surface (generic netlink
# and /dev/ibckpt), after a short warm-up run, as root and as nobody, with a
# fixed seed and a random one each (both printed), while `ibckpt freeze
# --timeout 2000 --persist 5` / `ibckpt thaw` run in a loop on the fuzzer's
# victim provider, so that its random answers race real sessions. Then: no
# fuzzer check failed (as nobody, FREEZE, THAW and SNAPSHOT_GET refused with
# EPERM), the module still freezes and thaws a workload, nothing is left
# behind (no session, no registration, no vmalloc'ed snapshot, slab objects
# roughly where they were, no reference: rmmod succeeds). Debian's kernel
# has no kmemleak, so leaks are looked for in the memory cgroup the runs
# were in: the module charges its files, registrations, sessions and
# snapshots to it (GFP_KERNEL_ACCOUNT), so once their processes are gone
# its slab_unreclaimable must be under 48 KiB. A kernel BUG/WARNING/Oops
# fails the run (tests/vm/run).
#
# IBCKPT_FUZZ_SECS: seconds per fuzzer run (4 runs; default 10);
# IBCKPT_FUZZ_SEED: the fixed seed (default 20261124).
# vm-guest: own
# (it fuzzes the module, counts the kernel's allocations and unloads the module)
. "$(dirname "$0")/lib.sh"
F=tests/kmod/fuzz
[ -x "$F" ] || fail "$F is not built (make)"
SECS=3
FIXED=${IBCKPT_FUZZ_SEED:-20261124}
RANDSEED=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# cgroup fds for the fuzzer: v2 (directories it creates as root) and a v1
# hierarchy, which is no cgroup v2 directory
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
mkdir -p /tmp/fuzz-cg1
mount -t cgroup -o none,name=ibckptfuzz cgroup /tmp/fuzz-cg1 2> /dev/null ||
	echo "no cgroup v1 hierarchy: that fd is left out"
# Everything that talks to the module runs in cgroup $L: what the module
# allocates with GFP_KERNEL_ACCOUNT (files, registrations, sessions,
# snapshots) is charged to it object by object, so once they have all exited
# its slab_unreclaimable must be back to (nearly) nothing.
grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control || fail "enable the memory controller"
L=/sys/fs/cgroup/ibckpt-fuzz-leak.$$
mkdir "$L" || fail "mkdir $L"
memstat() { awk -v k="$1" '$1 == k {print $2}' "$L/memory.stat"; }
shared=$(mktemp -d /tmp/fuzz.XXXXXX)
chmod 0777 "$shared"
VF=$shared/victim

# Debian's kernel has no kmemleak (CONFIG_DEBUG_KMEMLEAK is off). Besides
# the cgroup's charges (above), the objects of the caches the module
# allocates from without accounting (kmalloc) and of what it holds references
# to (pid, cred, task_struct), after per-CPU slabs are flushed: a coarse
# check (these move by a few hundred objects with no leak at all).
slabs() {
	local f
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2> /dev/null
	sleep 1
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2> /dev/null
	awk 'NR > 2 && $1 ~ /^(kmalloc-|pid$|cred_jar$|task_struct$)/ {print $1, $2}' \
		/proc/slabinfo | sort
}

cli_loop() {
	local pg n=0 ok=0
	while [ ! -e "$shared/stop" ]; do
		pg=$(cat "$VF" 2> /dev/null)
		if [ -z "$pg" ]; then
			sleep 0.05
			continue
		fi
		n=$((n + 1))
		ibckpt freeze --timeout 2000 --persist 5 "$pg" > /dev/null 2>&1 && ok=$((ok + 1))
		sleep "0.$((RANDOM % 3))"
		ibckpt thaw "$pg" > /dev/null 2>&1
	done
	echo "$n $ok" > "$shared/loop"
}

fuzz() {	# fuzz NAME SEED [PREFIX...]: one run; its output in $T/NAME
	local name=$1 seed=$2 rc
	shift 2
	echo "--- fuzz $name: seed $seed, $SECS s"
	(echo "$BASHPID" > "$L/cgroup.procs" &&
		exec timeout -k 5 $((SECS * 4 + 120)) "$@" "$F" --seed "$seed" --time "$SECS" \
		--victim-file "$VF") > "$T/$name" 2>&1
	rc=$?
	rm -f "$VF"
	cat "$T/$name"
	[ "$rc" = 0 ] || BAD="$BAD $name(seed $seed: exit $rc)"
}

# warm the caches up (a short run, checked like the others), then the baseline
BAD=
fuzz warm-up 1
SECS=${IBCKPT_FUZZ_SECS:-10}
slabs > "$T/slab.a"
(echo "$BASHPID" > "$L/cgroup.procs" && cli_loop) &
loop=$!
fuzz root-fixed "$FIXED"
fuzz root-random "$RANDSEED"
fuzz nobody-fixed "$FIXED" $NOBODY
fuzz nobody-random "$RANDSEED" $NOBODY
touch "$shared/stop"
wait "$loop"
read -r tries frozen < "$shared/loop"
echo "freeze loop: $tries freezes of the victim asked, $frozen frozen"
asked=$(cat "$T"/root-* "$T"/nobody-* | grep -o 'v-quiesce=[0-9]*' | cut -d= -f2 |
	awk '{s += $1} END {print s + 0}')
echo "the victims were asked to quiesce $asked times"

# nothing left: no session, no registered process
for _ in $(seq 50); do
	ibckpt -j status > "$T/st" 2>&1
	jq -e '(.sessions | length) == 0 and (.processes | length) == 0' "$T/st" > /dev/null &&
		break
	sleep 0.2
done
jq -e '(.sessions | length) == 0 and (.processes | length) == 0' "$T/st" > /dev/null ||
	BAD="$BAD leftovers($(head -c 300 "$T/st"))"

# what the cgroup still holds, its processes gone
for _ in $(seq 50); do [ -s "$L/cgroup.procs" ] || break; sleep 0.1; done
[ -s "$L/cgroup.procs" ] && BAD="$BAD processes-left($(cat "$L/cgroup.procs" | tr '\n' ' '))"
echo 3 > /proc/sys/vm/drop_caches
sleep 1
slab_left=$(memstat slab_unreclaimable)
kern_left=$(memstat kernel)
echo "cgroup of the runs, its processes gone: slab_unreclaimable $slab_left bytes," \
	"kernel $kern_left bytes (measured without a leak: 0-20 KiB)"
# a session is ~1 KiB, a registration ~200 bytes, a snapshot its length
[ "${slab_left:-0}" -le 49152 ] || BAD="$BAD charged-slab-left($slab_left)"
[ "${kern_left:-0}" -le 131072 ] || BAD="$BAD charged-kernel-memory-left($kern_left)"

# the module still does its job
wl_start run 1
wl_freeze_cycles 3 0.3
disown "$WL_PID"
kill -9 "$WL_PID"

# leaks: snapshots (kvmalloc), slab objects, references to the module
sleep 1
grep '\[ibckpt\]' /proc/vmallocinfo > "$T/vm" || true
[ -s "$T/vm" ] && BAD="$BAD vmalloc($(head -n 3 "$T/vm"))"
slabs > "$T/slab.b"
join "$T/slab.a" "$T/slab.b" | awk '{d = $3 - $2; t += d; if (d > 100 || d < -100) printf "  %s %+d\n", $1, d}
	END {printf "slab objects: %+d in all\n", t}' | tee "$T/slabdiff"
grew=$(join "$T/slab.a" "$T/slab.b" | awk '$3 - $2 > 1000 {print $1 "+" $3 - $2}' | tr '\n' ' ')
[ -n "$grew" ] && BAD="$BAD slab-growth($grew)"
dmesg | grep -E 'ibckpt: .*(still parked|events behind)' && BAD="$BAD kernel-log"
refs=$(awk '$1 == "ibckpt" {print $3}' /proc/modules)
echo "module references before rmmod: $refs"
rmmod ibckpt 2> "$T/rmmod" || BAD="$BAD rmmod($(cat "$T/rmmod"))"
[ -e /dev/ibckpt ] && BAD="$BAD /dev/ibckpt-after-rmmod"
rmdir "$L" 2> /dev/null

echo "seeds: fixed $FIXED, random $RANDSEED"
[ -z "$BAD" ] || fail "$BAD"
[ "${frozen:-0}" -gt 0 ] || fail "the freeze loop never froze the victim: answers raced no session"
[ "$asked" -gt 0 ] || fail "no victim was ever asked to quiesce"
pass
