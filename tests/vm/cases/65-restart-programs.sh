#!/bin/bash
# Unmodified programs checkpointed to disk mid-run (once their QPs are at
# RTS), their processes gone, restarted through criu, finish with their own
# success output: rdma-core's
# ibv_rc_pingpong --chk (RC, data checked), ibv_ud_pingpong (UD, AHs),
# ibv_srq_pingpong (an SRQ shared by 16 QPs), and perftest's ib_write_bw,
# ib_read_bw and ib_atomic_bw (the ibv_wr_* post API, unsignaled requests), by
# iterations and ib_write_bw by duration.
# Each program's server (rxe0) and client (rxe1) run as one session.
# ib_write_bw -D 8 (its phases driven by alarm()), checkpointed in its
# warm-up, must measure after the restart (more than 0 iterations): criu
# 3.17 drops a one-shot alarm at the restore (restart.rst, "Interval timers").
# vm-timeout: 900
# vm-smp: 2
# (two vCPUs: perftest's server and client poll at once; on one vCPU the case took 623 s, on two 117 s)
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
export RDMAV_DRIVERS=$PWD/provider/libibckpt

# run NAME PATTERN SERVER-ARGS -- CLIENT-ARGS: both through ibckpt in one
# session; checkpoint once the client's QPs exist, restart, wait for both,
# each must exit 0 and its output match PATTERN
run() {
	local name=$1 pat=$2 port dir=/run/ibckpt-prog.$1 sid cl srv
	shift 2
	local sargs=() cargs=()
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	port=$(bed_port)
	rm -f "$T/$name".*
	setsid bash -c "
		${sargs[*]} -p $port > $T/$name.srv 2>&1 &
		s=\$!
		for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
		${cargs[*]} -p $port 127.0.0.1 > $T/$name.cli 2>&1 &
		c=\$!; echo \$c > $T/$name.cpid
		wait \$c; echo \$? > $T/$name.crc
		wait \$s; echo \$? > $T/$name.src" < /dev/null &
	sid=$!
	for _ in $(seq 100); do [ -s "$T/$name.cpid" ] && break; sleep 0.1; done
	cl=$(cat "$T/$name.cpid")
	# running: the client's QPs are connected (RTS)
	for _ in $(seq 200); do
		rdma res show qp | grep -q "pid $cl .*state RTS\|state RTS .*pid $cl" && break
		sleep 0.05
	done
	sleep 0.5
	[ -s "$T/$name.crc" ] && fail "$name finished before its checkpoint: make it run longer"
	ibckpt checkpoint -D "$dir" --session "$sid" > "$T/$name.ck" 2>&1 ||
		fail "$name: checkpoint: $(cat "$T/$name.ck") $(tail -n 5 "$dir/dump.log" 2> /dev/null)"
	{ wait "$sid"; } 2> /dev/null
	kill -0 "$cl" 2> /dev/null && fail "$name: the client still runs after its checkpoint"
	ibckpt restart -D "$dir" > "$T/$name.rs" 2>&1 ||
		fail "$name: restart: $(cat "$T/$name.rs") $(tail -n 5 "$dir/restore.log" 2> /dev/null)"
	for _ in $(seq 1200); do [ -s "$T/$name.src" ] && break; sleep 0.1; done
	srv=$(cat "$T/$name.src" 2> /dev/null)
	[ "$(cat "$T/$name.crc" 2> /dev/null)" = 0 ] && [ "$srv" = 0 ] ||
		fail "$name: exit statuses client $(cat "$T/$name.crc" 2> /dev/null) server $srv:
$(tail -n 8 "$T/$name.cli") / $(tail -n 8 "$T/$name.srv")"
	grep -Eq "$pat" "$T/$name.cli" || fail "$name: no success output: $(tail -n 8 "$T/$name.cli")"
	echo "$name: checkpointed mid-run and restarted: $(grep -E "$pat" "$T/$name.cli" | tail -n 1)"
	rm -rf "$dir"
}

run rc_pingpong "[0-9]+ iters in" \
	ibv_rc_pingpong -d rxe0 -g 0 -n 30000 -s 1024 --chk -- \
	ibv_rc_pingpong -d rxe1 -g 0 -n 30000 -s 1024 --chk
run ud_pingpong "[0-9]+ iters in" \
	ibv_ud_pingpong -d rxe0 -g 0 -n 30000 -s 512 -- \
	ibv_ud_pingpong -d rxe1 -g 0 -n 30000 -s 512
run srq_pingpong "[0-9]+ iters in" \
	ibv_srq_pingpong -d rxe0 -g 0 -n 20000 -s 1024 -- \
	ibv_srq_pingpong -d rxe1 -g 0 -n 20000 -s 1024
# by duration (-D: alarm() ends its warm-up, measurement and stop), checkpointed
# in its warm-up, must measure after the restart. Regressions: its phases ran
# out while the job waited at the gates for criu's seize, and it reported 0
# iterations; then, with the job frozen up to the seize, criu 3.17 dropped its
# one-shot alarm at the restore and it never ended (restart.rst, "Interval
# timers").
run ib_write_bw_D "^ *8192 +[1-9][0-9]* +[0-9.]+ +[0-9.]+" \
	ib_write_bw -d rxe0 -x 0 -D 8 -s 8192 -F -- \
	ib_write_bw -d rxe1 -x 0 -D 8 -s 8192 -F
for t in write read; do
	run "ib_${t}_bw" "^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+" \
		ib_${t}_bw -d rxe0 -x 0 -n 100000 -s 8192 -F -- \
		ib_${t}_bw -d rxe1 -x 0 -n 100000 -s 8192 -F
done
run ib_atomic_bw "^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+" \
	ib_atomic_bw -d rxe0 -x 0 -n 200000 -F -- \
	ib_atomic_bw -d rxe1 -x 0 -n 200000 -F
pass
