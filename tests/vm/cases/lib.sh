# Shared helpers for VM test cases (sourced). A case runs inside the guest from the
# repo root; exit 0 = pass, 77 = skip, anything else = fail.
set -u
T=$(mktemp -d /tmp/case.XXXXXX)
CASE=$(basename "$0" .sh)

fail() { echo "FAIL-REASON($CASE): $*" >&2; exit 1; }
skip() { echo "SKIP-REASON($CASE): $*" >&2; exit 77; }
pass() { exit 0; }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"; }

# A TCP port for a side channel, distinct per case so leftovers never collide.
bed_port() { echo $((18000 + RANDOM % 10000)); }

# Wait until something listens on TCP port $1 (the server side of a pingpong).
bed_wait_listen() {
	local i
	for i in $(seq 200); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing listens on port $1"
}
