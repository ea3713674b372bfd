#!/usr/bin/env bash
# The docs/SCALING.md table, measured in one go: a fresh three-master
# cluster on loopback (deploy/local/cluster.sh, no holders), removes at
# 10 k objects, a load to N objects, removes again, a forced snapshot on a
# follower and then on the leader, each during 16 clients' removes, RSS per
# master, a follower killed and restarted, a follower wiped and caught up.
#
#   scripts/scale-table.sh [N]        (default 1000000, ~2 min; 10000000, ~5 min)
#
# SEXTON_SCALE_PROFILES=DIR also saves a 15 s CPU profile of the
# snapshotting node and of the leader at each forced snapshot.
#
# Every step's output goes to stdout with a "## step" heading; pipe it to
# a file. It brings the cluster down when it ends, failed or not (and
# wipes $SEXTON_LOCAL_DIR, default ./sexton-scale, at the start). Copy it
# elsewhere before editing it during a run: bash reads it as it goes.
set -euo pipefail
N="${1:-1000000}"
. "$(dirname "$0")/scale-lib.sh"

fresh_cluster
echo "leader m$L"

step "load 10 k"
"$bin" bench load --objects 10000 2>&1 | tail -3
step "remove 16x1 at 10 k"
removes 40000
step "remove 16x64 at 10 k"
removes 40000 64

step "load $N"
"$bin" bench load --objects "$N" 2>&1 | tail -20
rss
sleep 30
step "remove 16x1 at $N"
removes 40000
step "remove 16x64 at $N"
removes 40000 64
step "RSS after the load and removes"
rss
for i in 1 2 3; do echo "m$i objects $(status "$i" | field objects)"; done

step "Apply and snapshot pauses since start, before the forced snapshots"
pauses
L=$(wait_leader)
F=$(( L % 3 + 1 ))
step "snapshot on follower m$F during 16x1 removes"
snapshot_during_removes "$F"
step "snapshot on leader m$L during 16x1 removes"
snapshot_during_removes "$L"
step "Apply and snapshot pauses since start, after them"
pauses
step "RSS after the snapshots"
rss

L=$(wait_leader)
F=$(( L % 3 + 1 ))
target=$(status "$L" | field commit_index)
step "kill -9 follower m$F and restart it (target index $target)"
stop_master "$F" KILL
"$cluster" restart "m$F" >/dev/null
echo "restart: $(caught_up "$F" "$target")"

step "wipe follower m$F and start it (target index $target)"
stop_master "$F" TERM
rm -rf "${SEXTON_LOCAL_DIR:?}/m$F"
target=$(status "$L" | field commit_index)
"$cluster" restart "m$F" >/dev/null
echo "wiped follower: $(caught_up "$F" "$target")"
rss

step "down"
