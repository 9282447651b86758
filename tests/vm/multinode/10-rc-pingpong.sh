#!/bin/bash
# Two nodes, one link (tests/vm/run --nodes 2): unmodified ibv_rc_pingpong,
# server on node 0 and client on node 1, both through the ibckpt provider,
# each in a session of its own, is frozen as one job again and again while
# it runs (IBCKPT_CYCLES times, default 8; `make soak` runs 200). Each node
# freezes its own
# process with `ibckpt freeze --node R/2` (restart.rst, "A job on several
# nodes"), which returns only once both parts are quiesced; both `ibckpt
# status` say frozen and the QP's PSNs stand still, the nodes meet, each
# thaws (`ibckpt thaw --node R/2`), and the PSNs move again. Both sides then finish with exit 0 and
# their own success line. Then the same with perftest's ib_write_bw. Nodes
# beyond the first two only take part in the barriers. The iteration counts
# grow with the cycles, so that both programs run through them: a program
# that ends before the last freeze fails the case, saying so. After the
# cycles each side prints its QP every 30 s; a QP that stands still for 60 s
# while its program runs fails the case as a stall, and 300 s is the limit.
# vm-timeout: 600
. "$(dirname "$0")/../cases/lib.sh"
[ "${IBCKPT_NODES:-1}" -ge 2 ] || skip "needs two nodes: tests/vm/run --nodes 2 -- $0"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
CYCLES=${IBCKPT_CYCLES:-8}	# `make soak` runs 200
RV=$IBCKPT_SHARED/rendezvous	# where the nodes' ibckpt meet
SERVER_IP=$(node_ip 0) || fail "no address for node 0"
me=node$IBCKPT_NODE
mine() { node_is 0 || node_is 1; }	# this node runs a side

# qp_state PID: "STATE SQ-PSN RQ-PSN" of PID's RC QP on rxe0, empty if none
qp_state() {
	rdma res show qp link rxe0 pid "$1" 2> /dev/null |
		sed -n 's/.* type RC state \([A-Z]*\) rq-psn \([0-9]*\) sq-psn \([0-9]*\).*/\1 \3 \2/p' |
		head -n1
}

# cycle_pair NAME PATTERN SERVER-CMD... -- CLIENT-CMD...: run NAME's server
# (node 0, with -p PORT) and client (node 1, with -p PORT SERVER_IP), each in
# a session of its own; freeze both CYCLES times; each side must exit 0 and
# print PATTERN (grep -E).
cycle_pair() {
	local name=$1 pat=$2 port c pid='' st a b s0 i rc
	local -a srv=() cli=()
	shift 2
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	if node_is 0; then
		port=$(bed_port)
		setsid "${srv[@]}" -p "$port" < /dev/null > "$T/$name.out" 2> "$T/$name.err" &
		pid=$!
		bed_wait_listen "$port"
		node_put "$name.port" "$port"
	elif node_is 1; then
		port=$(node_get "$name.port") || fail "$name: node 0 published no port"
		setsid "${cli[@]}" -p "$port" "$SERVER_IP" < /dev/null > "$T/$name.out" 2> "$T/$name.err" &
		pid=$!
	fi
	if mine; then
		for i in $(seq 600); do
			st=$(qp_state "$pid")
			case ${st%% *} in RTR|RTS) break ;; esac
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.1
		done
		case ${st%% *} in
		RTR|RTS) ;;	# perftest's write_bw server goes no further than RTR
		*) fail "$name: $me's QP is not connected (${st:-no QP}): $(cat "$T/$name.out" "$T/$name.err")" ;;
		esac
		echo "$name: $me: pid $pid, QP connected"
	fi
	node_barrier "$name.connected"
	s0=$(date +%s.%N)
	for c in $(seq "$CYCLES"); do
		if mine; then
			kill -0 "$pid" 2> /dev/null ||
				fail "$name: ended before freeze $c of $CYCLES (give it more iterations): $(cat "$T/$name.out")"
			ibckpt freeze --timeout 10000 --persist 30 -D "$RV" --node "$IBCKPT_NODE/2" \
				--run "$name.freeze.$c" "$pid" > "$T/f" 2> "$T/e" ||
				fail "$name: $me: freeze $c: $(cat "$T/e" "$T/f")"
			# both parts are frozen once it returns: no barrier of ours
			ibckpt status "$pid" > "$T/s" 2>&1
			grep -q "process group $pid: frozen" "$T/s" ||
				fail "$name: $me: not frozen in cycle $c: $(cat "$T/s")"
			a=$(qp_state "$pid"); sleep 0.5; b=$(qp_state "$pid")
			[ "$a" = "$b" ] || fail "$name: $me: the QP moved while both sides were frozen: $a -> $b"
			node_put "$name.status.$c.$me" "$(head -n1 "$T/s"); QP $b"
		fi
		node_barrier "$name.checked.$c"
		if node_is 0; then
			echo "$name: cycle $c: node0 $(node_get "$name.status.$c.node0")"
			echo "$name: cycle $c: node1 $(node_get "$name.status.$c.node1")"
		fi
		if mine; then
			ibckpt thaw -D "$RV" --node "$IBCKPT_NODE/2" --run "$name.thaw.$c" "$pid" \
				> "$T/t" 2>&1 || fail "$name: $me: thaw $c: $(cat "$T/t")"
		fi
		node_barrier "$name.thawed.$c"
		if mine; then
			# moving again (or done, after the last cycle)
			for i in $(seq 600); do
				a=$(qp_state "$pid")
				[ -n "$a" ] && [ "$a" != "$b" ] && break
				kill -0 "$pid" 2> /dev/null || { [ "$c" = "$CYCLES" ] && break; }
				sleep 0.1
			done
			[ "$a" != "$b" ] || ! kill -0 "$pid" 2> /dev/null ||
				fail "$name: $me: no traffic in 60 s after thaw $c (QP $b)"
		fi
	done
	if mine; then
		echo "$name: $me: $CYCLES cycles in $(echo "$(date +%s.%N) - $s0" | bc) s, QP $a"
		# To its end, at most 300 s; a QP that stands still for 60 s while
		# the program runs is a stall, not a slow host.
		b=$a
		local moved=$SECONDS next=$((SECONDS + 30)) end=$((SECONDS + 300))
		while kill -0 "$pid" 2> /dev/null; do
			[ $SECONDS -lt $end ] ||
				{ kill -9 "$pid"; fail "$name: $me: still running 300 s after the last thaw (QP $b)"; }
			if [ $SECONDS -ge $next ]; then
				next=$((SECONDS + 30))
				a=$(qp_state "$pid")
				echo "$name: $me: running, QP $a"
				if [ "$a" != "$b" ]; then
					b=$a moved=$SECONDS
				elif [ $((SECONDS - moved)) -ge 60 ]; then
					kill -9 "$pid"
					fail "$name: $me: stalled: QP $a for $((SECONDS - moved)) s"
				fi
			fi
			sleep 0.1
		done
		wait "$pid"
		rc=$?
		cat "$T/$name.out"
		# the device's counters say whether the link lost packets (retries)
		[ "$rc" = 0 ] || fail "$name: $me: exit $rc: $(cat "$T/$name.err")" \
			"$(rdma statistic show link rxe0/1 2> /dev/null | tr -s ' ' | cut -c1-600)"
		grep -Eq "$pat" "$T/$name.out" || fail "$name: $me: no '$pat' in its output"
	fi
	node_barrier "$name.done" 400
}

# Iterations to outlast the cycles, which took up to 83 pingpong iterations
# and about 2,300 writes a cycle, with a margin that keeps the programs'
# run after the last cycle short.
cycle_pair rc_pingpong "^${PP_ITERS:=$((1000 + 150 * CYCLES))} iters in [0-9.]+ seconds" \
	ibv_rc_pingpong -d rxe0 -g 0 -n "$PP_ITERS" -- \
	ibv_rc_pingpong -d rxe0 -g 0 -n "$PP_ITERS"
cycle_pair write_bw "^ +${BW_SIZE:=4096} +${BW_ITERS:=$((20000 + 3500 * CYCLES))} +[0-9.]+ +[0-9.]+" \
	ib_write_bw -d rxe0 -x 0 -s "$BW_SIZE" -n "$BW_ITERS" -- \
	ib_write_bw -d rxe0 -x 0 -s "$BW_SIZE" -n "$BW_ITERS"
pass
