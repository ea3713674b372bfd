#!/usr/bin/env bash
# Remove p99 while a snapshot is taken, against the idle p99 beside it:
# one fresh cluster loaded to N objects, then ROUNDS rounds of four runs
# of 16 clients x 40,000 single-key removes: idle, during a forced
# snapshot on a follower, idle, during a forced snapshot on the leader.
# Ends with the medians of the idle and the snapshot p99s and their
# ratio, the figure issue 13's target names (<= 2x). The idle p99 at 10 M
# swings 3.7-8.7 ms between runs of scripts/scale-table.sh, whose one
# pair is too few to read a ratio from; here each snapshot run has an
# idle run beside it on the same cluster.
#
#   scripts/snapshot-p99.sh [N] [ROUNDS]   (default 10000000 3, ~7 min)
#
# SEXTON_BIN=path runs the masters from another build (deploy/local/
# cluster.sh), to compare two builds on the same script.
set -euo pipefail
N="${1:-10000000}"
rounds="${2:-3}"
. "$(dirname "$0")/scale-lib.sh"

# p99_of FILE: the p99 of the remove line in FILE, in ms.
p99_of() { sed -n 's/^remove (batch 1):.* p99 \([0-9.]*\)\(m\?s\|µs\).*/\1 \2/p' "$1" | awk '{v=$1; if ($2=="s") v*=1000; if ($2=="µs") v/=1000; print v}'; }
idle_run() {
	local out="$SEXTON_LOCAL_DIR/idle.txt"
	removes 40000 >"$out"
	grep '^remove' "$out" | sed 's/^/idle: /'
	p99_of "$out" >>"$SEXTON_LOCAL_DIR/idle-p99"
}
snap_run() { # I ROLE
	snapshot_during_removes "$1" | grep -E '^snapshot|^remove' | sed "s/^/$2 m$1: /"
	p99_of "$SEXTON_LOCAL_DIR/removes-$1.txt" >>"$SEXTON_LOCAL_DIR/snap-p99"
}

fresh_cluster
step "load $N"
"$bin" bench load --objects "$N" 2>&1 | grep '^committed'
sleep 20
for r in $(seq "$rounds"); do
	L=$(wait_leader)
	F=$(( L % 3 + 1 ))
	step "round $r"
	idle_run
	snap_run "$F" follower
	idle_run
	snap_run "$L" leader
done
step "summary"
python3 - "$SEXTON_LOCAL_DIR/idle-p99" "$SEXTON_LOCAL_DIR/snap-p99" <<'PY'
import statistics, sys
idle = [float(x) for x in open(sys.argv[1])]
snap = [float(x) for x in open(sys.argv[2])]
mi, ms = statistics.median(idle), statistics.median(snap)
print("idle p99 ms:     " + " ".join("%.2f" % x for x in idle) + "  median %.2f" % mi)
print("snapshot p99 ms: " + " ".join("%.2f" % x for x in snap) + "  median %.2f" % ms)
print("each snapshot run / the idle run before it: " + " ".join("%.2fx" % (s / i) for i, s in zip(idle, snap)))
print("median snapshot p99 / median idle p99: %.2fx (target <= 2x)" % (ms / mi))
PY
step "down"
