#!/bin/bash
# vm-timeout: 3600
# The Debian packages, as an administrator uses them (issue #15). tests/deb/run
# (the `deb` part of `make check`) builds them on the host: VERSION in
# build/test-deb/cur, VERSION+1 from the same tree in build/test-deb/next.
# Without them the case skips.
#
# With the test bed's own ibckpt.ko unloaded and removed (in the guest's
# overlay), so that only DKMS's build can be found: `dpkg -i` of version N,
# whose ibckpt-dkms has DKMS build the module against the guest kernel's
# headers and install it under updates/dkms/; modinfo resolves ibckpt there
# with the version, `modprobe ibckpt` loads that build, and the installed
# `ibckpt --version` shows the CLI and the module at N. Debian's unmodified
# ibv_rc_pingpong, both ends through the installed provider
# (RDMAV_DRIVERS=ibckpt; its file mapped in both processes, "provider N
# registered", "context stacked on provider rxe"), is frozen by the
# installed CLI (--session, neither end gets CPU time while frozen), thawed,
# and completes. `dpkg -i` of N+1 rebuilds the
# module (N's DKMS build and sources gone); the kernel keeps the old module
# until rmmod and modprobe load N+1; the CLI,
# modinfo, the provider and the packages all say N+1. `dpkg --purge` leaves
# nothing: no package, module file, DKMS tree, provider or .driver file.
# The bed lacks what DKMS needs from a real system: the case links /dev/fd
# (dkms uses <(...)), sets DEBIAN_FRONTEND and turns man-db's index off
# (minutes under emulation).
# vm-guest: own
# (it replaces the bed's module and installs packages)
. "$(dirname "$0")/lib.sh"
t0=$SECONDS
step() { echo "[$((SECONDS - t0))s] $*"; }

cur=build/test-deb/cur
next=build/test-deb/next
# deb DIR PACKAGE: the package's file in DIR ("ibckpt_" matches neither -dkms nor -dbgsym)
deb() { local f; for f in "$1/$2"_*.deb; do [ -f "$f" ] && echo "$f"; done; }
for f in "$(deb $cur ibckpt)" "$(deb $cur ibckpt-dkms)" "$(deb $next ibckpt)" "$(deb $next ibckpt-dkms)"; do
	[ -n "$f" ] || skip "packages not built: run tests/deb/run (make check-deb) first"
done
v1=$(dpkg-deb -f "$(deb $cur ibckpt)" Version)
v2=$(dpkg-deb -f "$(deb $next ibckpt)" Version)
dpkg --compare-versions "$v2" gt "$v1" || fail "version $v2 is not above $v1"
kver=$(uname -r)
mods=/lib/modules/$kver
prov=$(pkg-config --variable=libdir libibverbs)/libibverbs/libibckpt-rdmav34.so
drv=/etc/libibverbs.d/ibckpt.driver

# What a real Debian system has and the bare test bed does not: /dev/fd (dkms
# uses <(...)); dpkg without terminal questions; man-db's index is not rebuilt
# (minutes under emulation, nothing to test). The installed programs, not the
# tree's: tools/ leaves PATH.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
export DEBIAN_FRONTEND=noninteractive
rm -f /var/lib/man-db/auto-update
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[ -e "$mods/build/include" ] || fail "no kernel headers at $mods/build (tests/vm/setup)"
command -v dkms > /dev/null || fail "dkms is not installed (scripts/install-deps vm)"
for p in ibckpt ibckpt-dkms; do
	dpkg-query -W -f='${db:Status-Abbrev}' $p 2> /dev/null | grep -q '^i' &&
		fail "$p is installed before the test"
done

# The test bed's module (tests/vm/run's extra/ibckpt.ko): unloaded and gone
# (in the guest's overlay), so that only a DKMS build can be found. DKMS's
# depmod drops it from modules.dep (a depmod here costs 20 s).
if lsmod | grep -q '^ibckpt '; then rmmod ibckpt || fail "rmmod of the test bed's module"; fi
rm -f "$mods/extra/ibckpt.ko"
modinfo ibckpt > /dev/null 2>&1 && fail "an ibckpt module is left: $(modinfo -n ibckpt)"

# The DKMS build's log, when it failed.
dkms_log() {
	local l
	for l in /var/lib/dkms/ibckpt/*/build/make.log /var/lib/dkms/ibckpt/*/"$kver"/*/log/make.log; do
		[ -f "$l" ] && { echo "--- $l"; tail -n 30 "$l"; } >&2
	done
	return 0
}
# installed V: the packages, DKMS's build, the module's file and the CLI are version V
installed() {
	local v=$1 st f
	for p in ibckpt ibckpt-dkms; do
		expect_eq "ii $v" "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' $p | tr -s ' ')" "$p"
	done
	st=$(dkms status ibckpt 2>&1)
	echo "$st"
	expect_eq "ibckpt/$v, $kver, x86_64: installed" "$st" "dkms status"
	[ -f "/usr/src/ibckpt-$v/dkms.conf" ] || fail "no /usr/src/ibckpt-$v"
	f=$(modinfo -n ibckpt) || fail "modinfo: no ibckpt module after the install"
	case $f in "$mods"/updates/dkms/ibckpt.ko*) ;; *) fail "ibckpt resolves to $f, not DKMS's build" ;; esac
	expect_eq "$v" "$(modinfo -F version ibckpt)" "modinfo's version"
	[ -f "$prov" ] && [ -f "$drv" ] || fail "the provider or its .driver file is missing"
	# (dpkg -L, not dpkg -S: that reads every package's list, 10 s here)
	dpkg -L ibckpt | grep -qx "$prov" || fail "$prov is not ibckpt's"
	expect_eq /usr/sbin/ibckpt "$(command -v ibckpt)" "the ibckpt found on PATH"
}
# loaded V: the module in the kernel is version V, and the CLI says so
loaded() {
	expect_eq "$1" "$(cat /sys/module/ibckpt/version)" "the loaded module's version"
	ibckpt --version > "$T/version" || fail "ibckpt --version: $(cat "$T/version")"
	cat "$T/version"
	expect_eq "ibckpt $1 (ABI 1)
module ibckpt $1 (ABI 1)" "$(cat "$T/version")" "ibckpt --version"
}

# ibv_rc_pingpong server (rxe0) and client (rxe1) of N iterations, both
# through the installed provider, in one session of their own; files in $T/pp.
pp_start() {
	local n=$1
	PP_PORT=$(bed_port)
	rm -rf "$T/pp"
	mkdir -p "$T/pp"
	# shellcheck disable=SC2016
	setsid bash -c '
		e=(env RDMAV_DRIVERS=ibckpt IBCKPT_DEBUG=1 IBCKPT_STATS=1 stdbuf -oL)
		"${e[@]}" ibv_rc_pingpong -d rxe0 -g 0 -p "$1" -n "$2" > "$3/srv.out" 2> "$3/srv.err" &
		s=$!
		echo $s > "$3/srv.pid"
		for i in $(seq 600); do ss -Hltn "sport = :$1" | grep -q . && break; sleep 0.05; done
		"${e[@]}" ibv_rc_pingpong -d rxe1 -g 0 -p "$1" -n "$2" 127.0.0.1 > "$3/cli.out" 2> "$3/cli.err" &
		c=$!
		echo $c > "$3/cli.pid"
		wait $c; echo $? > "$3/cli.rc"
		wait $s; echo $? > "$3/srv.rc"' _ "$PP_PORT" "$n" "$T/pp" < /dev/null > /dev/null 2>&1 &
	for _ in $(seq 300); do [ -s "$T/pp/cli.pid" ] && break; sleep 0.1; done
	[ -s "$T/pp/cli.pid" ] || fail "the pingpong client did not start: $(cat "$T/pp/srv.err")"
	PP_SRV=$(cat "$T/pp/srv.pid")
	PP_CLI=$(cat "$T/pp/cli.pid")
}
# pp_wait SECS: both ends done within SECS, with their N iterations
pp_wait() {
	for _ in $(seq $(($1 * 10))); do [ -s "$T/pp/srv.rc" ] && break; sleep 0.1; done
	[ -s "$T/pp/srv.rc" ] ||
		fail "the pingpong did not end within $1 s: $(tail -n 3 "$T/pp/cli.err" "$T/pp/cli.out")"
	expect_eq 0 "$(cat "$T/pp/cli.rc")" "pingpong client status ($(tail -n 5 "$T/pp/cli.err"))"
	expect_eq 0 "$(cat "$T/pp/srv.rc")" "pingpong server status ($(tail -n 5 "$T/pp/srv.err"))"
	grep -q "^$2 iters" "$T/pp/cli.out" || fail "the client did not report $2 iterations: $(cat "$T/pp/cli.out")"
	grep -q "^$2 iters" "$T/pp/srv.out" || fail "the server did not report $2 iterations"
}
# provider_checks V: each end loaded the installed provider V, stacked on rxe,
# and posted through it
provider_checks() {
	local side
	for side in srv cli; do
		grep -q "^ibckpt: provider $1 registered (rdma-core 44)" "$T/pp/$side.err" ||
			fail "$side: no 'provider $1 registered': $(head -n 5 "$T/pp/$side.err")"
		grep -q 'ibckpt: rxe[01]: context stacked on provider rxe' "$T/pp/$side.err" ||
			fail "$side: no context stacked on rxe"
		grep -Eq 'ibckpt: stats rxe[01]: post_send [1-9]' "$T/pp/$side.err" ||
			fail "$side: posted nothing through ibckpt"
	done
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Version N: DKMS builds the module.
step "dpkg -i ibckpt-dkms ibckpt $v1"
dpkg -i "$(deb $cur ibckpt-dkms)" "$(deb $cur ibckpt)" > "$T/dpkg1.log" 2>&1 ||
	{ cat "$T/dpkg1.log" >&2; dkms_log; fail "dpkg -i of $v1"; }
grep -E 'Building|Done|Installing|Signing' "$T/dpkg1.log"
step "installed"
installed "$v1"
modprobe ibckpt || fail "modprobe ibckpt after the install"
loaded "$v1"

# An unmodified program through the installed provider: a short run first,
# whose rate ("N iters in S seconds = U usec/iter") makes the long one last
# about 20 s.
step "ibv_rc_pingpong, 300 iterations"
pp_start 300
pp_wait 120 300
provider_checks "$v1"
rate=$(awk '/ iters in / { printf "%d", 1e6 / $(NF - 1) }' "$T/pp/cli.out")
n=$((${rate:-0} * 20))
[ $n -ge 2000 ] || n=2000
[ $n -le 500000 ] || n=500000
step "ibv_rc_pingpong, $n iterations (about $rate per second), frozen and thawed"
pp_start $n
for _ in $(seq 300); do grep -q 'remote address' "$T/pp/cli.out" && break; sleep 0.1; done
grep -q 'remote address' "$T/pp/cli.out" || fail "the pingpong did not connect: $(cat "$T/pp/cli.err")"
for p in $PP_SRV $PP_CLI; do
	grep -q " $prov\$" "/proc/$p/maps" || fail "process $p has not mapped $prov"
	grep -q "$PWD/provider/" "/proc/$p/maps" && fail "process $p maps the tree's provider"
done
sid=$(ps -o sid= -p "$PP_CLI" | tr -d ' ')
expect_eq "$sid" "$(ps -o sid= -p "$PP_SRV" | tr -d ' ')" "the pingpong's session"
sleep 1
ibckpt freeze --persist 60 --session "$sid" > "$T/freeze" 2>&1 || fail "ibckpt freeze: $(cat "$T/freeze")"
cat "$T/freeze"
grep -q '2 providers quiesced' "$T/freeze" || fail "not both providers quiesced"
ibckpt status --session "$sid" > "$T/status" || fail "ibckpt status: $(cat "$T/status")"
grep -q ': frozen, ' "$T/status" || fail "status: $(cat "$T/status")"
c1=$(cpu "$PP_CLI") s1=$(cpu "$PP_SRV")
sleep 2
expect_eq "$c1 $s1" "$(cpu "$PP_CLI") $(cpu "$PP_SRV")" "CPU time of the frozen pingpong"
ibckpt thaw --session "$sid" || fail "ibckpt thaw"
sleep 1
[ "$(cpu "$PP_CLI")" != "$c1" ] || [ -s "$T/pp/cli.rc" ] || fail "the client does not run after the thaw"
pp_wait 300 $n
provider_checks "$v1"
step "pingpong done"

# Version N+1, from the same tree: DKMS drops N's build and builds N+1.
step "dpkg -i ibckpt-dkms ibckpt $v2 (upgrade)"
dpkg -i "$(deb $next ibckpt-dkms)" "$(deb $next ibckpt)" > "$T/dpkg2.log" 2>&1 ||
	{ cat "$T/dpkg2.log" >&2; dkms_log; fail "dpkg -i of $v2"; }
grep -E 'Building|Done|Installing|Signing|Deleting|removed' "$T/dpkg2.log"
step "upgraded"
installed "$v2"
[ -e "/usr/src/ibckpt-$v1" ] && fail "/usr/src/ibckpt-$v1 is left after the upgrade"
[ -e "/var/lib/dkms/ibckpt/$v1" ] && fail "DKMS kept $v1's tree"
# still N in the kernel until reloaded
expect_eq "$v1" "$(cat /sys/module/ibckpt/version)" "the module in the kernel before the reload"
rmmod ibckpt || fail "rmmod of $v1"
modprobe ibckpt || fail "modprobe of $v2"
loaded "$v2"
step "ibv_rc_pingpong through $v2"
pp_start 200
pp_wait 120 200
provider_checks "$v2"

# Purge, with the module still loaded: its files go; it unloads afterwards.
step "dpkg --purge"
dpkg --purge ibckpt ibckpt-dkms > "$T/purge.log" 2>&1 || { cat "$T/purge.log" >&2; fail "dpkg --purge"; }
step "purged"
for p in ibckpt ibckpt-dkms; do
	dpkg-query -W -f='${db:Status-Abbrev}' $p 2> /dev/null | grep -q '^[ip]' &&
		fail "$p: $(dpkg-query -W -f='${db:Status-Abbrev}' $p) after the purge"
done
left=$(find "$mods"/ -name 'ibckpt.ko*' 2> /dev/null)
[ -z "$left" ] || fail "module files left: $left"
grep -q ibckpt "$mods/modules.dep" && fail "modules.dep still names ibckpt"
[ -e /var/lib/dkms/ibckpt ] && fail "DKMS tree left: $(find /var/lib/dkms/ibckpt | head)"
left=$(ls -d /usr/src/ibckpt-* "$prov" "$drv" /usr/sbin/ibckpt /usr/sbin/ibckpt-xcheck \
	/usr/share/man/man8/ibckpt* /usr/share/doc/ibckpt /usr/share/doc/ibckpt-dkms 2> /dev/null)
[ -z "$left" ] || fail "files left: $left"
rmmod ibckpt || fail "rmmod after the purge"
modprobe ibckpt 2> /dev/null && fail "modprobe ibckpt works after the purge"
lsmod | grep -q '^ibckpt ' && fail "ibckpt is loaded"
step "nothing left"
pass
