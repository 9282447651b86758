#!/bin/bash
# An Open MPI job across the two nodes, launched by Slurm directly (`srun
# --mpi=pmix`: Debian's Open MPI 4.1 and Slurm 22.05's PMIx plugin, UCX
# rc_verbs/ud_verbs over each node's rxe0, both ranks through the ibckpt
# provider), frozen and thawed as one job IBCKPT_CYCLES times (default 10;
# `make soak` runs more) by `ibckpt freeze --slurm JOBID.0`, which runs on
# both nodes through srun: each freeze has both
# ranks' providers quiesced, nothing moves while frozen, traffic goes on
# after the thaw, and the job ends with its own verdict (every message
# checked byte by byte, round counts agreed).
# With IBCKPT_MPI_RESTART=1 (a measurement, not in make check), the job is
# instead checkpointed through Slurm (`ibckpt checkpoint --slurm`) and
# restarted as a new step of its allocation (`ibckpt restart --slurm`): it
# goes on where it stopped and, unless its PMIx client notices first that
# its server (the old step's slurmstepd) is gone and the job ends with 195
# (restart.rst: measured once in three runs, after 92 rounds), to its own
# verdict. The job runs with UCX_MODULES=^rdmacm (UCX would hold the
# rdma_cm file, which no release can take) and PMIX_MCA_gds=hash (no
# mapping of slurmd's PMIx store, which the old step's end removes).
# vm-timeout: 900
. "$(dirname "$0")/../cases/lib.sh"
[ "${IBCKPT_NODES:-1}" -ge 2 ] || skip "needs two nodes: tests/vm/run --nodes 2 -- $0"
[ -x tests/mpi/bin/ring ] || fail "tests/mpi/bin/ring not built (scripts/install-deps vm; make)"
CYCLES=${IBCKPT_CYCLES:-10}
modprobe -a unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
slurm_up
if ! node_is 0; then
	node_barrier done $((600 + 30 * CYCLES))	# a freeze and a thaw through srun: 8 s
	pass
fi
FZ=$IBCKPT_SHARED/fz CK=$IBCKPT_SHARED/ck O=$IBCKPT_SHARED/out
mkdir -p "$FZ" "$O" || fail "mkdir"
# srun passes the environment on to the ranks
export RDMAV_DRIVERS=$PWD/provider/libibckpt
export OMPI_MCA_pml=ucx OMPI_MCA_btl=^openib,ofi OMPI_MCA_mtl=^ofi
export UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=0
export UCX_MODULES=^rdmacm PMIX_MCA_gds=hash
jid=$(salloc -N2 --no-shell 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[ -n "$jid" ] || fail "salloc -N2 granted nothing: $(salloc -N2 --no-shell 2>&1)"
trap 'scancel "$jid" 2> /dev/null' EXIT
# rank 0 runs here (node 0, the step's first node): its progress and stop
# files are this node's (9p refuses a shared writable mapping). The ranks'
# output goes to files (srun -o, -e), which a restore opens again.
srun --jobid="$jid" --mpi=pmix -N2 --ntasks-per-node=1 -o "$O/rank.%t.out" -e "$O/rank.%t.err" \
	"$PWD/tests/mpi/bin/ring" "$T/progress" "$T/stop" > "$T/mpi.out" 2> "$T/mpi.err" &
mpi=$!
progress() { od -An -tu8 "$T/progress" 2> /dev/null | tr -d ' '; }
for _ in $(seq 600); do
	[ "$(progress)" -gt 100 ] 2> /dev/null && break
	kill -0 "$mpi" 2> /dev/null || fail "the MPI job died: $(tail -n 20 "$T/mpi.err")"
	sleep 0.1
done
[ "$(progress)" -gt 100 ] 2> /dev/null || fail "the MPI job does not run: $(tail -n 20 "$T/mpi.err")"

s0=$(date +%s.%N)
for i in $(seq "$CYCLES"); do
	ibckpt -j freeze --slurm "$jid.0" -D "$FZ" --timeout 20000 --persist 60 > "$T/f" 2> "$T/fe" ||
		fail "freeze $i: $(cat "$T/fe" "$T/f") $(tail -n 5 "$T/mpi.err")"
	# one line per node, each with its rank's provider quiesced
	[ "$(grep -c '"state":"frozen".*"providers":1,' "$T/f")" = 2 ] ||
		fail "freeze $i: not both ranks' providers quiesced: $(cat "$T/f")"
	a=$(progress); sleep 0.3; b=$(progress)
	[ "$a" = "$b" ] || fail "freeze $i: the job moved while frozen ($a -> $b)"
	ibckpt thaw --slurm "$jid.0" -D "$FZ" > "$T/t" 2> "$T/te" || fail "thaw $i: $(cat "$T/te")"
	for _ in $(seq 200); do
		[ "$(progress)" -gt "$b" ] && break
		sleep 0.05
	done
	[ "$(progress)" -gt "$b" ] || fail "freeze $i: no progress after the thaw"
done
t=$(echo "$(date +%s.%N) - $s0" | bc)
echo "$CYCLES freezes of a 2-node Open MPI/UCX job step through srun in $t s, $(progress) rounds"
if [ "${IBCKPT_MPI_RESTART:-0}" != 1 ]; then
	touch "$T/stop"
	wait "$mpi"
	rc=$?
	cat "$O/rank.0.out"
	expect_eq 0 "$rc" "srun's exit status ($(tail -n 5 "$O"/rank.*.err))"
	grep -q "^ring: OK rounds=" "$O/rank.0.out" || fail "no verdict from the job"
	node_barrier done 900
	pass
fi

# checkpoint through Slurm: both ranks dumped, the step ends
ibckpt checkpoint --slurm "$jid.0" -D "$CK" > "$T/c" 2> "$T/ce" ||
	fail "checkpoint: $(cat "$T/ce" "$T/c") $(tail -n 5 "$O"/rank.*.err)"
[ "$(grep -c "of 2: checkpoint $CK written; the job is gone" "$T/c")" = 2 ] ||
	fail "checkpoint said: $(cat "$T/c" "$T/ce")"
wait "$mpi"
at=$(progress)
# restart as a new step of the allocation: the job goes on
ibckpt restart --slurm "$jid" -D "$CK" > "$T/r" 2> "$T/re" &
rs=$!
for _ in $(seq 600); do
	[ "$(grep -c "of 2: 1 process restarted from $CK" "$T/r")" = 2 ] && break
	kill -0 "$rs" 2> /dev/null || break
	sleep 0.1
done
[ "$(grep -c "of 2: 1 process restarted from $CK" "$T/r")" = 2 ] ||
	fail "restart: $(cat "$T/r" "$T/re") $(grep -h -B3 Error "$CK"/part.*/restore.log 2> /dev/null | tail -n 20)"
for _ in $(seq 600); do
	[ "$(progress)" -gt $((at + 100)) ] && break
	kill -0 "$rs" 2> /dev/null || break
	sleep 0.1
done
[ "$(progress)" -gt $((at + 100)) ] ||
	fail "the restarted job does not run ($at -> $(progress)): $(tail -n 5 "$O"/rank.*.err "$T/re")"
touch "$T/stop"
wait "$rs"
rc=$?
cat "$O/rank.0.out"
grep -q "^ring: OK rounds=" "$O/rank.0.out" ||
	fail "no verdict from the restarted job (status $rc): $(tail -n 5 "$O"/rank.*.err)"
echo "checkpointed and restarted through Slurm at round $at, verified to round $(progress);" \
	"the restarted step ended with $rc (MPI_Finalize without its PMIx server may fail)"
node_barrier done 900
pass
