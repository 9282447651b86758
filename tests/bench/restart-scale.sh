#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): what a checkpoint to disk
# and a restart cost against QPs and MRs, phase by phase, beside plain criu
# on the same program without RDMA, in the same run. The program is
# tests/bench/bin/ckscale (QPS RC QPs in loopback pairs on rxe0, MRS MRs of
# 4 KiB, one message every 100 ms, each checked), a session of its own
# through the provider. Per round: `ibckpt checkpoint` and `ibckpt restart`
# as the CLI sees them, split by IBCKPT_TIMING=1 into freeze (with
# quiesce), release, dump (criu's) and restore (criu's), reacquire; criu's
# image size. Then `ckscale --no-rdma` (same memory, no verbs, no provider)
# through plain `criu dump` / `criu restore -d` with the options ibckpt uses.
# Medians of REPS rounds. Every ckscale must exit 0 on SIGINT at the end.
#   tests/bench/restart-scale.sh [REPS [QPS:MRS...]]
# Default configurations: 1:1 64:1 1024:1 1:1000 1:10000, then 64:1000 if
# fewer than IBCKPT_SCALE_BUDGET seconds (default 1000) have gone by.
set -u
reps=${1:-3}
shift $(($# > 0 ? 1 : 0))
. tests/vm/cases/lib.sh
cks=$PWD/tests/bench/bin/ckscale
prov=$PWD/provider/libibckpt
budget=${IBCKPT_SCALE_BUDGET:-1000}
copts=(-v4 --manage-cgroups=ignore --tcp-established --network-lock nftables)
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
# criu's first run in a guest probes the kernel (about 1.3 s under emulation)
# and caches it in /run/criu.kdat: not the first configuration's to pay
criu check > /dev/null 2>&1
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
# phase FILE NAME: the milliseconds IBCKPT_TIMING gave phase NAME (summed: a
# checkpoint that found requests in flight freezes again)
phase() { awk -v p="$2" '$1 == "ibckpt:" && $2 == "timing:" && $3 == p { s += $4 } END { printf "%.1f\n", s }' "$1"; }
mb() { du -sk "$1" | awk '{ printf "%.1f\n", $1 / 1024 }'; }
rc=0

# start TAG ARGS...: ckscale ARGS in a session of its own (a bash that keeps
# its exit status, as a launcher would), T/TAG.{out,err,pid,rc}; sets SID.
start() {
	local tag=$1
	shift
	rm -f "$T/$tag".*
	setsid bash -c "$cks $* > $T/$tag.out 2> $T/$tag.err &
		echo \$! > $T/$tag.pid; wait \$!; echo \$? > $T/$tag.rc" < /dev/null &
	SID=$!
	disown "$SID"	# criu kills it at the dump: no word of it here
	for _ in $(seq 3000); do
		grep -qs ready "$T/$tag.out" && return 0
		[ -e "$T/$tag.rc" ] && break
		sleep 0.1
	done
	echo "FAILED: ckscale $* did not start: $(cat "$T/$tag.err" 2> /dev/null)"
	kill -KILL -- "-$SID" 2> /dev/null
	return 1
}
# verdict TAG: SIGINT to ckscale, its exit status must be 0
verdict() {
	kill -INT "$(cat "$T/$1.pid")"
	for _ in $(seq 3000); do [ -s "$T/$1.rc" ] && break; sleep 0.1; done
	[ "$(cat "$T/$1.rc" 2> /dev/null)" = 0 ] && return 0
	echo "FAILED: ckscale's verdict ($1: exit $(cat "$T/$1.rc" 2> /dev/null)):" \
		"$(tail -n 3 "$T/$1.err")"
	return 1
}
# abandon TAG: a job that failed goes (its process group: the session's leader's)
abandon() { kill -KILL -- "-$SID" 2> /dev/null; }

# rdma QPS MRS: ckscale through ibckpt, REPS checkpoints and restarts.
rdma() {
	local q=$1 m=$2 i dir t0
	: > "$T/fz"; : > "$T/rl"; : > "$T/dp"; : > "$T/ck"; : > "$T/rs"; : > "$T/ra"
	: > "$T/rt"; : > "$T/mb"
	RDMAV_DRIVERS=$prov start rd rxe0 "$q" "$m" || return 1
	sleep 1
	for i in $(seq "$reps"); do
		dir=/run/ibckpt-scale.$q.$m.$i
		t0=$EPOCHREALTIME
		IBCKPT_TIMING=1 ibckpt checkpoint -D "$dir" --session "$SID" > /dev/null 2> "$T/c.err" ||
			{ echo "FAILED: checkpoint ($q QPs, $m MRs): $(cat "$T/c.err")"; abandon; return 1; }
		since "$t0" >> "$T/ck"
		phase "$T/c.err" freeze >> "$T/fz"
		phase "$T/c.err" release >> "$T/rl"
		phase "$T/c.err" dump >> "$T/dp"
		mb "$dir/criu" >> "$T/mb"
		t0=$EPOCHREALTIME
		IBCKPT_TIMING=1 ibckpt restart -D "$dir" > /dev/null 2> "$T/r.err" ||
			{ echo "FAILED: restart ($q QPs, $m MRs): $(cat "$T/r.err")"; abandon; return 1; }
		since "$t0" >> "$T/rt"
		phase "$T/r.err" restore >> "$T/rs"
		phase "$T/r.err" reacquire >> "$T/ra"
		rm -rf "$dir"
		sleep 1		# about ten messages, checked, before the next round
	done
	verdict rd
}

# plain QPS MRS: ckscale --no-rdma, no provider, through criu alone.
plain() {
	local q=$1 m=$2 i dir t0
	: > "$T/pd"; : > "$T/pr"; : > "$T/pm"
	start pl rxe0 "$q" "$m" --no-rdma || return 1
	sleep 1
	for i in $(seq "$reps"); do
		dir=/run/plain-scale.$q.$m.$i
		mkdir -p "$dir/criu"
		t0=$EPOCHREALTIME
		criu dump -t "$SID" -D "$dir/criu" "${copts[@]}" > "$dir/dump.log" 2>&1 ||
			{ echo "FAILED: criu dump: $(grep 'Error (' "$dir/dump.log" | tail -n 3)"; abandon; return 1; }
		since "$t0" >> "$T/pd"
		mb "$dir/criu" >> "$T/pm"
		t0=$EPOCHREALTIME
		criu restore -d -D "$dir/criu" "${copts[@]}" --pidfile "$dir/restore.pid" \
			> "$dir/restore.log" 2>&1 ||
			{ echo "FAILED: criu restore: $(grep 'Error (' "$dir/restore.log" | tail -n 3)"; abandon; return 1; }
		since "$t0" >> "$T/pr"
		rm -rf "$dir"
		sleep 1
	done
	verdict pl
}

fmt='%-5s %-6s %9s %10s %8s %13s %10s %12s %10s %9s %13s %16s %8s\n'
# shellcheck disable=SC2059
printf "$fmt" qps mrs freeze_ms release_ms dump_ms checkpoint_ms restore_ms reacquire_ms \
	restart_ms images_MB plain_dump_ms plain_restore_ms plain_MB
if [ $# -gt 0 ]; then
	configs=("$@")
else
	configs=(1:1 64:1 1024:1 1:1000 1:10000 64:1000)
fi
for cfg in "${configs[@]}"; do
	q=${cfg%:*} m=${cfg#*:}
	if [ $# = 0 ] && [ "$cfg" = 64:1000 ] && [ "$SECONDS" -ge "$budget" ]; then
		echo "($cfg skipped: ${SECONDS}s gone by, budget ${budget}s)"
		continue
	fi
	r=(- - - - - - - -) p=(- - -)
	if rdma "$q" "$m"; then
		r=("$(median < "$T/fz")" "$(median < "$T/rl")" "$(median < "$T/dp")"
		   "$(median < "$T/ck")" "$(median < "$T/rs")" "$(median < "$T/ra")"
		   "$(median < "$T/rt")" "$(median < "$T/mb")")
	else
		rc=1
	fi
	if plain "$q" "$m"; then
		p=("$(median < "$T/pd")" "$(median < "$T/pr")" "$(median < "$T/pm")")
	else
		rc=1
	fi
	# shellcheck disable=SC2059
	printf "$fmt" "$q" "$m" "${r[@]}" "${p[@]}"
done
echo "(ms: medians of $reps rounds; checkpoint and restart as the CLI sees them, the"
echo " phases as IBCKPT_TIMING=1 reports them; images: criu's, MB; plain: ckscale"
echo " --no-rdma through criu alone; every ckscale verified its messages and exited 0)"
exit $rc
