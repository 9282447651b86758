#!/bin/bash
# A job that holds a terminal and leads no session (programs run from an
# interactive shell) cannot be restored by criu, which would have to give
# it its terminal back: its checkpoint to disk is refused by criu's dump,
# and the job is reacquired in place and runs on (regression: criu's
# --shell-job, meant for a Slurm task, which has no terminal, was given to
# every root that leads no session, and such a job was dumped, killed and
# could not be restarted). The traffic generator's server and client run
# under script(1) (a pseudo-terminal), in a shell below the session's.
# Before, a checkpoint whose criu never runs thaws the job it kept frozen.
. "$(dirname "$0")/lib.sh"
command -v criu > /dev/null || fail "criu is not installed (scripts/install-deps vm)"
modprobe -a unix_diag inet_diag tcp_diag udp_diag netlink_diag af_packet_diag ||
	fail "cannot load the *_diag modules"
export RDMAV_DRIVERS=$PWD/provider/libibckpt
port=$(bed_port)
cat > "$T/job.sh" <<J
$IBTRAFFIC -s -d rxe0 -g 0 -p $port -q 2 > $T/server.out 2> $T/server.err &
s=\$!
for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
$IBTRAFFIC -c 127.0.0.1 -d rxe1 -g 0 -p $port -q 2 -P 0.2 > $T/client.out 2> $T/client.err &
c=\$!; echo \$c > $T/client.pid
wait \$c; echo \$? > $T/client.rc
wait \$s; echo \$? > $T/server.rc
J
# "; true": script's shell stays, the job's shell its child (not a session leader)
script -qefc "bash $T/job.sh; true" "$T/typescript" < /dev/null > /dev/null 2>&1 &
traffic_wait_progress 2
job=$(pgrep -f -n "^bash $T/job.sh") || fail "no job shell"
[ "$(ps -o sid= -p "$job" | tr -d ' ')" != "$job" ] || fail "the job leads its session"
[ "$(ps -o tty= -p "$job" | tr -d ' ')" != "?" ] || fail "the job has no terminal"
# criu never runs (its images' directory cannot be made): the job, kept
# frozen after its release for criu's pre-dump action to thaw, is thawed
# here and reacquired in place, and its traffic goes on
mkdir -p "$T/ck0" && : > "$T/ck0/criu"
refused 1 "the job is reacquired and runs on" ibckpt checkpoint -D "$T/ck0" --tree "$job"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
ibckpt status > "$T/st"
grep -q "no job frozen" "$T/st" || fail "a job is left frozen: $(cat "$T/st")"
refused 1 "the job is reacquired and runs on" ibckpt checkpoint -D "$T/ck" --tree "$job"
# criu's own reason (its terminal) is said
grep -q "criu: .*Error (criu/tty.c" "$T/e" || fail "criu's reason is not said: $(cat "$T/e")"
[ ! -e "$T/ck/criu-shell-job" ] || fail "the dump was given --shell-job"
traffic_wait_progress $(($(grep -c '"event":"progress"' "$T/client.out") + 2))
kill -INT "$(cat "$T/client.pid")"
for _ in $(seq 300); do [ -s "$T/server.rc" ] && break; sleep 0.1; done
expect_eq 0 "$(cat "$T/client.rc")" "client exit status ($(tail -n 5 "$T/client.err"))"
expect_eq 0 "$(cat "$T/server.rc")" "server exit status ($(tail -n 5 "$T/server.err"))"
traffic_expect_ops 100
echo "a job holding a terminal: checkpoint refused by criu, reacquired, traffic verified"
pass
