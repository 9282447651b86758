#!/bin/bash
# modprobe/rmmod ibckpt: the misc device and the genl family come and go, the
# CLI talks to the module, and 20 load/unload cycles leave no warning or leak.
# vm-guest: own
# (it unloads the module, 20 times)
. "$(dirname "$0")/lib.sh"
lsmod | grep -q '^ibckpt ' || fail "ibckpt not loaded by the test bed"
[ -c /dev/ibckpt ] || fail "/dev/ibckpt missing"
ibckpt --version | tee "$T/v"
grep -q "^module ibckpt $(cat VERSION) (ABI 1)$" "$T/v" || fail "ibckpt --version does not show the module"
ibckpt -j --version | jq -e '.module_abi == 1' > /dev/null || fail "-j --version"
ibckpt status > "$T/s" || fail "ibckpt status failed"
grep -q 'no process registered' "$T/s" || fail "status: $(cat "$T/s")"
before=$(grep -c . /proc/modules)
for i in $(seq 20); do
	rmmod ibckpt || fail "rmmod #$i"
	[ ! -e /dev/ibckpt ] || fail "/dev/ibckpt survives rmmod"
	ibckpt status 2> "$T/e" && fail "status works without the module"
	grep -q 'module is not loaded' "$T/e" || fail "no clear error: $(cat "$T/e")"
	modprobe ibckpt || fail "modprobe #$i"
done
[ "$(grep -c . /proc/modules)" = "$before" ] || fail "module list changed"
[ "$(cat /sys/module/ibckpt/refcnt)" = 0 ] || fail "refcount $(cat /sys/module/ibckpt/refcnt)"
pass
