#!/bin/bash
# What a release refuses, with a message and exit 1, leaving the job as it
# was: a process that holds the application's own rdma_cm file (its
# connections are kernel state no provider can release; tests/provider/bin/cmloop
# as a server, which then serves its client), alone and beside a traffic
# pair that could be released (every process is asked first: none is
# released); a job that is not frozen; a job released already (frozen again
# before its reacquire). The refused jobs go on working.
. "$(dirname "$0")/lib.sh"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
x=tests/provider/bin/cmloop

# an rdma_cm server, waiting for its client
port=$(bed_port)
setsid $x -s 198.18.0.1 "$port" 3 > "$T/srv" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q listening "$T/srv" && break; sleep 0.1; done
ibckpt freeze --persist 60 "$spid" > /dev/null 2> "$T/fe" || fail "freeze: $(cat "$T/fe")"
refused 1 "rdma_cm.*cannot be released" ibckpt release -D "$T/ck" "$spid"
ibckpt thaw "$spid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
timeout 60 $x -c 198.18.0.1 "$port" 3 > "$T/cli" 2>&1 || fail "client after the refusal: $(cat "$T/cli")"
wait $spid || fail "server after the refusal: $(cat "$T/srv")"

# the traffic pair and an rdma_cm server in one session: the server refuses,
# so nobody is released and the traffic goes on
traffic_start_session 2 -P 0.2
sid=$TRAFFIC_JOB
traffic_wait_progress 2
port=$(bed_port)
setsid $x -s 198.18.0.1 "$port" 1 > "$T/srv2" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q listening "$T/srv2" && break; sleep 0.1; done
mkdir -p /sys/fs/cgroup/ibckpt-62 2> /dev/null || mount -t cgroup2 none /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/ibckpt-62
for p in "$TRAFFIC_SERVER_PID" "$TRAFFIC_CLIENT_PID" "$spid"; do
	echo "$p" > /sys/fs/cgroup/ibckpt-62/cgroup.procs
done
qpns() { rdma res show qp | grep -v GSI | awk '{ print $4 }' | sort -n | tr '\n' ' '; }
before=$(qpns)
ibckpt freeze --persist 60 --cgroup /sys/fs/cgroup/ibckpt-62 > /dev/null 2> "$T/fe" ||
	fail "freeze the mixed job: $(cat "$T/fe")"
refused 1 "rdma_cm.*cannot be released" ibckpt release -D "$T/ckm" --cgroup /sys/fs/cgroup/ibckpt-62
# nothing was released (not even released and reacquired: the QPs are the same)
expect_eq "$before" "$(qpns)" "QPNs after the refused release"
for p in "$TRAFFIC_SERVER_PID" "$TRAFFIC_CLIENT_PID"; do
	ls -l "/proc/$p/fd" | grep -q infiniband/uverbs || fail "process $p was released"
done
ibckpt thaw --cgroup /sys/fs/cgroup/ibckpt-62 > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
timeout 60 $x -c 198.18.0.1 "$port" 1 > "$T/cli2" 2>&1 || fail "rdma_cm client: $(cat "$T/cli2")"
wait $spid || fail "rdma_cm server after the refusal: $(cat "$T/srv2")"

# not frozen; then released, frozen again: a released process holds
# nothing of the module's, so it has no snapshot to give
refused 1 "not frozen" ibckpt release -D "$T/ck" --session "$sid"
ibckpt freeze --persist 60 --session "$sid" > /dev/null 2> "$T/fe" || fail "freeze: $(cat "$T/fe")"
ibckpt release -D "$T/ck" --session "$sid" > /dev/null 2> "$T/re" || fail "release: $(cat "$T/re")"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
ibckpt freeze --persist 60 --session "$sid" > /dev/null 2> "$T/fe" || fail "freeze released: $(cat "$T/fe")"
refused 1 "they are released" ibckpt release -D "$T/ck2" --session "$sid"
ibckpt thaw --session "$sid" > /dev/null 2> "$T/te" || fail "thaw: $(cat "$T/te")"
ibckpt reacquire -D "$T/ck" > /dev/null 2> "$T/qe" || fail "reacquire: $(cat "$T/qe")"
sleep 1
kill -INT "$TRAFFIC_CLIENT_PID"
wait "$sid"
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 100
pass
