# Sourced by scripts/scale-table.sh, snapshot-p99.sh and commit-rate.sh, which set
# N (the objects to load) first: it sets root (the repository) and works
# from there, and gives the cluster's environment and the helpers they
# measure with.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

export SEXTON_LOCAL_DIR="${SEXTON_LOCAL_DIR:-$root/sexton-scale}"
export SEXTON_HOLDERS=0
export SEXTON_MASTER_FLAGS="${SEXTON_MASTER_FLAGS:---enable-debug}"
# Three 10 M-object masters do not fit in 24 GiB with Go's default GC
# target: docs/SCALING.md, "How to reproduce".
if [ "$N" -ge 5000000 ]; then export GOMEMLIMIT="${GOMEMLIMIT:-6GiB}"; fi
# The ports below are cluster.sh's with SEXTON_PORT_BASE=7000.
export SEXTON_PORT_BASE=7000
export SEXTON_MASTERS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
export SEXTON_MASTER_HTTP=127.0.0.1:7201,127.0.0.1:7202,127.0.0.1:7203
bin="$root/bin/sexton"
cluster="$root/deploy/local/cluster.sh"

step() { echo; echo "## $(date -u +%T) $*"; }
status() { curl -fsS "127.0.0.1:720$1/v1/status" 2>/dev/null || true; }
field() { python3 -c 'import json,sys
try: print(json.load(sys.stdin).get(sys.argv[1], ""))
except Exception: print("")' "$1"; }
leader() {
	for i in 1 2 3; do
		[ "$(status "$i" | field state)" = Leader ] && { echo "$i"; return; }
	done
	echo ""
}
wait_leader() {
	local l=""
	for _ in $(seq 600); do
		l=$(leader)
		[ -n "$l" ] && curl -fsS "127.0.0.1:720$l/readyz" >/dev/null 2>&1 && { echo "$l"; return; }
		sleep 0.5
	done
	echo "no ready leader" >&2
	exit 1
}
rss() {
	for i in 1 2 3; do
		local pid; pid=$(cat "$SEXTON_LOCAL_DIR/m$i.pid" 2>/dev/null || echo 0)
		if [ -r "/proc/$pid/status" ]; then
			awk -v m="m$i" '/^VmRSS|^RssAnon|^RssFile/ {printf "%s %s %s kB  ", m, $1, $2} END {print ""}' "/proc/$pid/status"
		fi
	done
}
# caught_up I TARGET: seconds until master I has applied TARGET.
caught_up() {
	local i="$1" target="$2" t0 a
	t0=$(date +%s.%N)
	for _ in $(seq 3000); do
		a=$(status "$i" | field applied_index)
		if [ -n "$a" ] && [ "$a" -ge "$target" ]; then
			python3 -c "import sys; print('%.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)"
			return
		fi
		sleep 0.2
	done
	echo "not caught up in 600 s"
}
# stop_master I SIGNAL: signal master I and wait until it has exited.
stop_master() {
	local pid; pid=$(cat "$SEXTON_LOCAL_DIR/m$1.pid")
	kill -s "$2" "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$SEXTON_LOCAL_DIR/m$1.pid"
}
# pauses: per master, the applies that took over 50 ms and the snapshots'
# pauses of the fsm goroutine (count, how many over 50 ms, their sum), all
# since the master started (/metrics).
pauses() {
	for i in 1 2 3; do
		curl -fsS "127.0.0.1:720$i/metrics" 2>/dev/null | python3 -c '
import sys
v = {}
for line in sys.stdin:
    if line.startswith(("sexton_fsm_apply_seconds", "sexton_fsm_snapshot_pause_seconds")):
        name, _, val = line.rpartition(" ")
        v[name] = float(val)
a, p = "sexton_fsm_apply_seconds", "sexton_fsm_snapshot_pause_seconds"
over = lambda m: v.get(m + "_count", 0) - v.get(m + "_bucket{le=\"0.05\"}", 0)
print("m%s applies %d, over 50 ms %d; snapshot pauses %d, over 50 ms %d, total %.1f ms" % (sys.argv[1],
    v.get(a + "_count", 0), over(a), v.get(p + "_count", 0), over(p), 1000 * v.get(p + "_sum", 0)))' "$i"
	done
}
removes() {
	"$bin" bench remove --clients 16 --keys "${1:-40000}" ${2:+--batch $2} 2>&1 | grep -v "^setup put"
}

# snapshot_during_removes I: 16 clients remove 40,000 keys (the registry
# holds 50,000 tasks by default); once their setup puts are done and the
# removes run, master I takes a snapshot.
snapshot_during_removes() {
	local out="$SEXTON_LOCAL_DIR/removes-$1.txt" rp
	"$bin" bench remove --clients 16 --keys 40000 >"$out" 2>&1 &
	rp=$!
	until grep -q '^setup put' "$out" 2>/dev/null; do sleep 0.1; done
	if [ -n "${SEXTON_SCALE_PROFILES:-}" ]; then
		# CPU profiles of the snapshotting node and of the leader, 15 s each.
		mkdir -p "$SEXTON_SCALE_PROFILES"
		for p in $(printf "%s\n" "$1" "$L" | sort -u); do
			curl -fsS -o "$SEXTON_SCALE_PROFILES/cpu-snap-on-m$1-of-m$p.pprof" \
				"127.0.0.1:720$p/debug/pprof/profile?seconds=15" &
		done
	fi
	# The pauses around the snapshot and the removes beside it, apart
	# from the setup puts before them: on a slow machine a batched put
	# entry passes 50 ms now and then, snapshot or none.
	echo "pauses, setup puts done, before the snapshot:"
	pauses
	curl -fsS -X POST "127.0.0.1:720$1/debug/snapshot"
	wait "$rp"; wait
	grep -v "^setup put" "$out"
	echo "pauses after the snapshot and the removes:"
	pauses
}
# fresh_cluster: a new cluster in a wiped $SEXTON_LOCAL_DIR, brought down
# when the script exits, failed or not; L is its leader once it is ready.
fresh_cluster() {
	"$cluster" down >/dev/null 2>&1 || true
	rm -rf "$SEXTON_LOCAL_DIR"
	trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
	[ -x "$bin" ] || make build
	step "up (GOMEMLIMIT=${GOMEMLIMIT:-unset})"
	"$cluster" up >/dev/null
	L=$(wait_leader)
}
