#!/bin/bash
# Runs inside the VM (tests/bench/run starts it): what a checkpoint costs, for
# the traffic generator's two processes (server on rxe0, client on rxe1) with
# 1, 8 and 32 RC QPs each (+ 1 UD QP), under traffic. In place: freeze (with
# quiesce), release, thaw, reacquire, each as the CLI sees it. To disk: the
# whole `ibckpt checkpoint` (freeze, release, thaw, criu dump) and `ibckpt
# restart` (criu restore, reacquire), and the size of the images. Medians of
# REPS rounds. The traffic generator verifies every message at the end.
#   tests/bench/restart-latency.sh [REPS]
set -u
reps=${1:-3}
. tests/vm/cases/lib.sh
export RDMAV_DRIVERS=$PWD/provider/libibckpt
modprobe -a unix_diag inet_diag tcp_diag udp_diag raw_diag netlink_diag af_packet_diag
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# ms CMD...: runs CMD, prints how long it took
ms() {
	local t0=$EPOCHREALTIME
	"$@" > /dev/null 2> "$T/err" || { echo "FAILED: $* $(cat "$T/err")" >&2; return 1; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}
printf '%-4s %10s %10s %10s %12s %14s %12s %10s\n' qps freeze_ms release_ms thaw_ms reacquire_ms checkpoint_ms restart_ms images_MB
for q in 1 8 32; do
	port=$(bed_port)
	rm -f "$T"/*.rc "$T"/*.pid
	setsid bash -c "
		$IBTRAFFIC -s -d rxe0 -g 0 -p $port -q $q > $T/server.out 2> $T/server.err &
		s=\$!; echo \$s > $T/server.pid
		for _ in \$(seq 200); do ss -Hltn 'sport = :$port' | grep -q . && break; sleep 0.05; done
		$IBTRAFFIC -c 127.0.0.1 -d rxe1 -g 0 -p $port -q $q -P 0.2 > $T/client.out 2> $T/client.err &
		c=\$!; echo \$c > $T/client.pid
		wait \$c; echo \$? > $T/client.rc
		wait \$s; echo \$? > $T/server.rc" < /dev/null &
	sid=$!
	for _ in $(seq 100); do [ -s "$T/client.pid" ] && break; sleep 0.1; done
	traffic_wait_progress 2
	: > "$T/f"; : > "$T/r"; : > "$T/t"; : > "$T/a"; : > "$T/c"; : > "$T/s"; : > "$T/m"
	for i in $(seq "$reps"); do
		ms ibckpt freeze --persist 60 --session "$sid" >> "$T/f" || exit 1
		ms ibckpt release -D "$T/ck$q.$i" --session "$sid" >> "$T/r" || exit 1
		ms ibckpt thaw --session "$sid" >> "$T/t" || exit 1
		ms ibckpt reacquire -D "$T/ck$q.$i" >> "$T/a" || exit 1
		sleep 0.5
		dir=/run/ibckpt-bench.$q.$i
		ms ibckpt checkpoint -D "$dir" --session "$sid" >> "$T/c" || exit 1
		[ "$i" = 1 ] && { wait "$sid"; } 2> /dev/null
		du -sm "$dir/criu" | cut -f1 >> "$T/m"
		ms ibckpt restart -D "$dir" >> "$T/s" || exit 1
		rm -rf "$dir"
		sleep 0.5
	done
	printf '%-4s %10s %10s %10s %12s %14s %12s %10s\n' "$q" "$(median < "$T/f")" \
		"$(median < "$T/r")" "$(median < "$T/t")" "$(median < "$T/a")" \
		"$(median < "$T/c")" "$(median < "$T/s")" "$(median < "$T/m")"
	kill -INT "$(cat "$T/client.pid")"
	for _ in $(seq 300); do [ -s "$T/server.rc" ] && break; sleep 0.1; done
	[ "$(cat "$T/client.rc" 2> /dev/null)" = 0 ] && [ "$(cat "$T/server.rc" 2> /dev/null)" = 0 ] ||
		{ echo "FAILED: the traffic generator's verdict ($q QPs): $(tail -n 3 "$T/client.err" "$T/server.err")"; exit 1; }
done
echo "(ms as the CLI sees each command; images: criu's, MB; each round verified by the generator)"
