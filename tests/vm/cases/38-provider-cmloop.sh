#!/bin/bash
# librdmacm's own completion channels through ibckpt: 1,000 rdma_cm
# connections one after the other (tests/provider/bin/cmloop), server and
# client both stacked, each connection with the two channels and two CQs
# librdmacm creates and destroys for it, its message and echo waited for
# on those channels. glibc gives each connection's channels the previous
# ones' addresses, the kernel their fd numbers. Regression: ibckpt found a
# channel by its address, bound the next connection's CQ to the destroyed
# channel whenever its forwarder had not yet seen that one closed, and the
# program waited for the event forever. IBCKPT_CM_CYCLES sets the count.
. "$(dirname "$0")/lib.sh"
prov=$PWD/provider/libibckpt
x=tests/provider/bin/cmloop
cycles=${IBCKPT_CM_CYCLES:-1000}

# run NAME CYCLES [VAR=VALUE...]: a server and a client on rxe0, both with the variables
run() {
	local name=$1 n=$2 port spid
	shift 2
	port=$(bed_port)
	env "$@" timeout 240 $x -s 198.18.0.1 "$port" "$n" > "$T/$name.srv" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		grep -q listening "$T/$name.srv" && break
		sleep 0.1
	done
	env "$@" timeout 240 $x -c 198.18.0.1 "$port" "$n" > "$T/$name.cli" 2>&1 ||
		fail "$name client (exit $?): $(tail -n 5 "$T/$name.cli") / server: $(tail -n 5 "$T/$name.srv")"
	wait $spid || fail "$name server (exit $?): $(tail -n 5 "$T/$name.srv")"
	grep -q "^cycles $n\$" "$T/$name.cli" || fail "$name: $(cat "$T/$name.cli")"
}

t0=$SECONDS
run direct 20
run stacked "$cycles" RDMAV_DRIVERS="$prov" IBCKPT_STATS=1
echo "$cycles connections through ibckpt in $((SECONDS - t0)) s (with 20 direct)"
for side in srv cli; do
	grep -E 'stats rxe0: ' "$T/stacked.$side"
	grep -Eq 'stats rxe0: .* cq_events [1-9]' "$T/stacked.$side" ||
		fail "$side: completion events did not go through ibckpt"
	if grep 'ibckpt:' "$T/stacked.$side" | grep -v 'ibckpt: stats'; then
		fail "$side: the provider complained"
	fi
done
pass
