#!/usr/bin/env bash
# Checks that a profile keeps its --budget: runs `collbench launch -n RANKS
# profile --budget SECONDS` on the host backend and compares the wall time
# of the whole command (launch, set-up, curves, overlap probe, writing)
# with the budget. Exits 1 when it ends later than the budget + 5 %. The
# budget may leave curves out (--partial accepts that): what is timed is
# that it is kept.
#
#   scripts/profile-budget.sh [SECONDS [RANKS]]      (default 60 4)
#
# A benchmark, not a test: it takes the budget's time and its figure
# depends on the machine.
set -euo pipefail
budget=${1:-60}
ranks=${2:-4}
cd "$(dirname "$0")/.."
bin=${COLLBENCH:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/collbench
	go build -o "$bin" ./cmd/collbench
fi
out=$(mktemp -d)
start=$(date +%s.%N)
"$bin" launch -n "$ranks" profile --budget "${budget}s" --partial -q -o "$out/profile.json" >"$out/stdout" 2>"$out/stderr" || {
	echo "profile failed:" >&2
	cat "$out/stderr" >&2
	exit 1
}
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v b="$budget" -v f="$out/profile.json" 'BEGIN {
	wall = e - s
	printf "budget %gs, wall %.2fs, ratio %.3f (limit 1.050); profile %s\n", b, wall, wall / b, f
	exit (wall > 1.05 * b)
}'
