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
N="${1:-10000000}"
rounds="${2:-5}"
. "$(dirname "$0")/scale-lib.sh"

# rate_runs FILE: ROUNDS runs of 16 x 1 removes, their keys/s to FILE and
# their commit cycles' two log writes and rest (ms) to FILE.writes and
# FILE.rest: a rate that falls with the state while the writes hold and
# the rest grows is sexton's; one whose writes grew is the disk's.
rate_runs() {
	local out line
	for _ in $(seq "$rounds"); do
		out=$(removes 40000)
		line=$(grep '^remove' <<<"$out")
		echo "$line"
		grep '^commit cycle' <<<"$out" || true
		sed -n 's/.*s: \([0-9]*\) \/s.*/\1/p' <<<"$line" >>"$1"
		sed -n 's/.*in a row \([0-9.]*\) ms.*/\1/p' <<<"$out" >>"$1.writes"
		sed -n 's/.*the rest \([0-9.]*\) ms.*/\1/p' <<<"$out" >>"$1.rest"
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
def read(path, kind=float):
    try:
        return [kind(x) for x in open(path)]
    except FileNotFoundError:
        return []
small, big, n = read(sys.argv[1], int), read(sys.argv[2], int), sys.argv[3]
print("keys/s at 10 k: %s  median %d" % (" ".join(map(str, small)), statistics.median(small)))
print("keys/s at %s: %s  median %d" % (n, " ".join(map(str, big)), statistics.median(big)))
print("median at %s / median at 10 k: %.0f %% (target >= 90 %%)" % (n, 100 * statistics.median(big) / statistics.median(small)))
# Where the difference went (bench remove's commit cycle, when every run
# printed one): the two log writes in a row are the disk's, the rest is
# transport, apply and answers.
for part in ("writes", "rest"):
    a, b = read(sys.argv[1] + "." + part), read(sys.argv[2] + "." + part)
    if len(a) == len(small) and len(b) == len(big):
        print("commit cycle, %s: median %.3f ms at 10 k, %.3f ms at %s" % (
            "the two log writes in a row" if part == "writes" else "the rest", statistics.median(a), statistics.median(b), n))
PY
step "down"
