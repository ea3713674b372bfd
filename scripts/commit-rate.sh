#!/usr/bin/env bash
# Commit rate at N objects against at 10 k, the figure issue 13's first
# target names (>= 90 %), from several runs on each side: one fresh
# cluster, ROUNDS runs of 16 clients x 40,000 single-key removes at 10 k
# objects, a load to N, ROUNDS runs again, and the ratio of the medians.
# scripts/scale-table.sh takes one run each side; on this shared box one
# run moves by a third between runs of the same code.
#
#   scripts/commit-rate.sh [N] [ROUNDS]   (default 10000000 5, ~6 min)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
N="${1:-10000000}"
rounds="${2:-5}"
. "$root/scripts/scale-lib.sh"

# rate_runs FILE: ROUNDS runs of 16 x 1 removes, their keys/s to FILE.
rate_runs() {
	local line
	for _ in $(seq "$rounds"); do
		line=$(removes 40000 | grep '^remove')
		echo "$line"
		sed -n 's/.*s: \([0-9]*\) \/s.*/\1/p' <<<"$line" >>"$1"
	done
}

fresh_cluster
step "load 10 k"
"$bin" bench load --objects 10000 2>&1 | grep '^committed'
step "16x1 removes at 10 k, $rounds runs"
rate_runs "$SEXTON_LOCAL_DIR/rate-10k"
step "load $N"
"$bin" bench load --objects "$N" 2>&1 | grep '^committed'
sleep 30
step "16x1 removes at $N, $rounds runs"
rate_runs "$SEXTON_LOCAL_DIR/rate-n"
step "summary"
python3 - "$SEXTON_LOCAL_DIR/rate-10k" "$SEXTON_LOCAL_DIR/rate-n" "$N" <<'PY'
import statistics, sys
small = [int(x) for x in open(sys.argv[1])]
big = [int(x) for x in open(sys.argv[2])]
print("keys/s at 10 k: %s  median %d" % (" ".join(map(str, small)), statistics.median(small)))
print("keys/s at %s: %s  median %d" % (sys.argv[3], " ".join(map(str, big)), statistics.median(big)))
print("median at %s / median at 10 k: %.0f %% (target >= 90 %%)" % (sys.argv[3], 100 * statistics.median(big) / statistics.median(small)))
PY
step "down"
