#!/bin/bash
# An Open MPI job (Debian's openmpi-bin, UCX rc_verbs/ud_verbs over soft-RoCE,
# one rank per device, both ranks through the ibckpt provider) running
# tests/mpi/bin/ring, frozen whole, by --session and by --tree of mpirun,
# again and again under traffic: Open MPI puts every rank in a process
# group of its own (checked first), so one freeze of the job must reach them
# all (IBCKPT_CYCLES times each, default 10; `make soak` runs more). Each
# freeze has both ranks' providers quiesced, nothing moves while frozen,
# traffic goes on after the thaw, and the job ends with its own verdict
# ("ring: OK rounds=N": every message checked byte by byte, round counts
# agreed).
# vm-timeout: 900
# vm-smp: 2
# (two vCPUs: Open MPI gives each of its two ranks a core of its own)
. "$(dirname "$0")/lib.sh"
[ -x tests/mpi/bin/ring ] || fail "tests/mpi/bin/ring not built (scripts/install-deps vm; make)"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# each rank on its own device: rank 0 on rxe0, rank 1 on rxe1 (the veth's two ends)
cat > "$T/rank.sh" <<'R'
#!/bin/bash
export UCX_NET_DEVICES=rxe${OMPI_COMM_WORLD_RANK}:1
exec "$@"
R
chmod +x "$T/rank.sh"
setsid mpirun -np 2 --mca pml ucx --mca btl ^openib,ofi --mca mtl ^ofi \
	-x RDMAV_DRIVERS -x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_IB_GID_INDEX=0 \
	"$T/rank.sh" tests/mpi/bin/ring "$T/progress" "$T/stop" > "$T/mpi.out" 2> "$T/mpi.err" &
mpi=$!
progress() { od -An -tu8 "$T/progress" 2>/dev/null | tr -d ' '; }
for _ in $(seq 300); do
	[ "$(progress)" -gt 100 ] 2>/dev/null && break
	kill -0 "$mpi" 2>/dev/null || fail "the MPI job died: $(tail -n 20 "$T/mpi.err")"
	sleep 0.1
done
[ "$(progress)" -gt 100 ] || fail "the MPI job does not run: $(tail -n 20 "$T/mpi.err")"
ranks=$(pgrep -x ring | wc -l)
[ "$ranks" = 2 ] || fail "$ranks ranks"
pgids=$(pgrep -x ring | xargs -n1 ps -o pgid= -p | sort -u | wc -l)
[ "$pgids" = 2 ] || fail "the ranks share a process group: what this test is about is gone"

drained=0
cycles=${IBCKPT_CYCLES:-10}
for how in --session --tree; do
	for i in $(seq "$cycles"); do
		sleep "0.$((RANDOM % 3))"
		ibckpt -j freeze --timeout 20000 --persist 60 "$how" "$mpi" > "$T/f" 2> "$T/fe" ||
			fail "$how #$i: $(cat "$T/fe")"
		json_get v "$T/f" providers
		[ "$v" = 2 ] || fail "$how #$i: $v providers: $(cat "$T/f")"
		ibckpt -j status --id "$(jq .session "$T/f")" > "$T/s"
		json_get v "$T/s" quiesced
		[ "$v" = 2 ] || fail "$how #$i: $v quiesced: $(head -c 300 "$T/s")"
		json_get v "$T/f" drained
		drained=$((drained + v))
		a=$(progress); sleep 0.3; b=$(progress)
		[ "$a" = "$b" ] || fail "$how #$i: the job moved while frozen ($a -> $b)"
		ibckpt thaw "$how" "$mpi" > /dev/null || fail "$how #$i: thaw"
		for _ in $(seq 100); do
			[ "$(progress)" -gt "$b" ] && break
			sleep 0.05
		done
		[ "$(progress)" -gt "$b" ] || fail "$how #$i: no progress after the thaw"
	done
done
touch "$T/stop"
wait "$mpi"
rc=$?
cat "$T/mpi.out"
expect_eq 0 "$rc" "mpirun's exit status ($(tail -n 5 "$T/mpi.err"))"
grep -q "^ring: OK rounds=" "$T/mpi.out" || fail "no verdict from the job"
echo "$((2 * cycles)) freezes of a 2-rank Open MPI/UCX job ($cycles by session, $cycles by tree), $drained" \
	"completions drained, $(progress) rounds verified"
pass
