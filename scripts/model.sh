#!/usr/bin/env bash
# Model-checks the deletion protocol (model/deletion.pml, see model/README.md)
# with spin:
#
#   scripts/model.sh short   the small bound `make test` runs (seconds)
#   scripts/model.sh long    the bigger bound of `make model` (minutes)
#
# First the real model, in each configuration (the deletion protocol, then
# rebuild, jobs and restore): spin must explore every state of the bound and
# find no assertion violated. Then each weakened variant (a -D macro that
# undoes one rule of the design) must make spin find a counterexample to the
# property the README's table says it breaks; its trail is printed as model
# steps.
# Exits non-zero if the real model fails (or the search was cut short) or a
# weakened variant is not caught. Without spin or gcc it says so and skips.
# Build artefacts (pan, pan.*, *.trail) go to a temp dir, removed at exit.
set -uo pipefail

mode=${1:-short}
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/model/deletion.pml

for tool in spin gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "model: $tool not found; skipping the spin model check of model/deletion.pml (apt-get install spin gcc)"
		exit 0
	fi
done

# Bounds (model/README.md, "Bounds"): incarnations, holder crashes, leader
# changes, GC rounds per holder, and the optional behaviours. The deletion
# protocol runs first; then the operator procedures, each its own
# configuration with GC (and, in short, crashes and leader changes) off to
# keep it small: rebuild after every master lost its state (REBUILD),
# prefix-delete jobs (JOBS), snapshot restore and the ghost check (RESTORE),
# one-commit puts (COMMIT).
rebuild_small="-DREBUILD -DNINC=2 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0"
jobs_small="-DJOBS -DNINC=2 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0"
restore_small="-DRESTORE -DNINC=2 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0"
# the rebuild with DFS replicas and the DFS root's range records (DFS)
dfs_small="-DREBUILD -DDFS -DNINC=2 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0"
# one-commit puts: reserved blocks, PutCommit, block expiry, reconcile at any time (COMMIT)
commit_small="-DCOMMIT -DNINC=2 -DNCRASH=1 -DNLEAD=0 -DNGC=0 -DNGC1=0"
case "$mode" in
short)
	# (at -O0 the short bound's verifier compiles in a tenth of the -O2
	# time and searches in about twice the time: less CPU in all)
	bound="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0"; memlim=1024; opt=-O0
	# name|bound|gcc optimisation
	configs=(
		"rebuild|$rebuild_small|-O0"
		"jobs|$jobs_small|-O0"
		"restore|$restore_small|-O0"
		"rebuild-dfs|$dfs_small|-O0"
		"commit|$commit_small|-O0"
	)
	;;
long)
	bound="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DLATEACK"; memlim=8000; opt=-O2
	# (GC stays off in rebuild and restore: with one round and a crash the
	# rebuild's search passes 1.3 GB unfinished)
	configs=(
		"rebuild|-DREBUILD -DNINC=3 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0|-O2"
		"rebuild|-DREBUILD -DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=0 -DNGC1=0|-O2"
		"jobs|-DJOBS -DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0|-O2"
		"restore|-DRESTORE -DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=0 -DNGC1=0|-O2"
		"restore|-DRESTORE -DBOTH -DNINC=2 -DNCRASH=0 -DNLEAD=0 -DNGC=0 -DNGC1=0|-O2"
		"rebuild-dfs|-DREBUILD -DDFS -DNINC=2 -DNCRASH=0 -DNLEAD=1 -DNGC=0 -DNGC1=0|-O2"
		"commit|-DCOMMIT -DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0|-O2"
	)
	;;
*) echo "usage: $0 short|long" >&2; exit 2 ;;
esac

# The weakened variants run at the small bounds, built without optimisation
# (compiling takes longer than finding their counterexample).
small="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0"
# variant|the assertion spin must report (alternatives separated by ,)|bound|pan flags.
# The operator procedures' variants are searched with pan -i (iteratively
# shorter), so the counterexample printed is a shortest one.
variants=(
	"WEAK_WITHHOLD|inv7_latest_copy_last|$small"
	"WEAK_NOTLIVE|inv7_latest_copy_last|$small"
	"WEAK_ACK_EARLY|inv3_no_lost_intent|$small"
	"NO_GRANT_CHECK|inv7_latest_copy_last|$small"
	"NO_FLOOR|inv3_no_lost_intent,inv1_no_resurrection|$small"
	"WEAK_GC_NO_CARRY|inv8_gc_keeps_visible|$small"
	"WEAK_KEY_ONLY|inv2_no_wrong_victim|$small"
	"WEAK_LATE_MOUNT|inv_never_lost|$rebuild_small|-i"
	"WEAK_NO_REMOVAL_MEMORY|inv1_no_resurrection|$rebuild_small|-i"
	"WEAK_TASK_RULE|inv_never_lost,inv1_no_resurrection|$rebuild_small|-i"
	"WEAK_ADOPT_ABSENT_ONLY|inv_never_lost|$rebuild_small|-i"
	"WEAK_NO_INC_MARGIN|inv_inc_above_every_copy|$rebuild_small|-i"
	"WEAK_MOVING_BASE|inv_adopts_only_lost_copies|$rebuild_small|-i"
	"WEAK_JOB_BY_PUTSTART|inv_job_spares_later_puts|$jobs_small|-i"
	"WEAK_GHOST_UNCONDITIONAL|inv_never_lost|$restore_small|-i"
	"WEAK_DFS_IGNORE_REMOVAL|inv1_no_resurrection|$dfs_small|-i"
	"WEAK_DFS_FREE_EARLY|inv7_latest_copy_last,inv_never_lost|$dfs_small|-i"
	"WEAK_DFS_NO_REGISTER|inv2_no_wrong_victim,inv_never_lost|$dfs_small|-i"
	"WEAK_DFS_NO_WITHHOLD|inv7_latest_copy_last|$dfs_small|-i"
	"WEAK_COMMIT_EXPIRED|inv_never_lost,inv2_no_wrong_victim|$commit_small|-i"
	"WEAK_COMMIT_UNDECIDED|inv_never_lost,inv2_no_wrong_victim|$commit_small|-i"
	"WEAK_COMMIT_BELOW|inv7_latest_copy_last|$commit_small|-i"
)

work=$(mktemp -d "${TMPDIR:-/tmp}/sexton-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/deletion.pml"
cd "$work" || exit 1

# verify DEFS MEMLIM OPT [PANFLAGS]: builds and runs pan, output in pan.out.
# PANFLAGS -i (iterative shortening) needs the verifier built with -DREACH.
verify() {
	rm -f pan pan.* deletion.pml.trail
	local reach=
	[ "${4:-}" = -i ] && reach=-DREACH
	# shellcheck disable=SC2086
	spin -a $1 deletion.pml >spin.out 2>&1 || { cat spin.out; return 2; }
	# -w: gcc warns about spin's bounds-checked constant indexes.
	# shellcheck disable=SC2086
	gcc "$3" -w -DSAFETY -DCOLLAPSE $reach -DMEMLIM="$2" -o pan pan.c || return 2
	# shellcheck disable=SC2086
	./pan -m20000 -w24 ${4:-} >pan.out 2>&1
	return 0
}

stats() {
	grep -E "State-vector|states, stored|transitions \(|total actual memory|elapsed time" pan.out | sed 's/^ */    /'
}

# check NAME DEFS MEMLIM OPT: the real model at one bound must find no
# assertion violated in a complete search.
fail=0
check() {
	echo "model: $1: deletion.pml, $mode bound: $2"
	local start
	start=$(date +%s)
	if ! verify "$2" "$3" "$4"; then
		echo "model: FAIL: could not build the verifier"
		fail=1
		return
	fi
	if grep -q "errors: 0" pan.out && ! grep -qE "max search depth too small|reached -DMEMLIM|out of memory" pan.out; then
		echo "model: ok, no assertion violated in any reachable state ($(($(date +%s) - start))s wall)"
		stats
	else
		echo "model: FAIL: the real model violates an assertion or the search was incomplete"
		cat pan.out
		if [ -f deletion.pml.trail ]; then
			# shellcheck disable=SC2086
			spin -t $2 deletion.pml 2>&1 | grep -E "STEP|violated" | sed 's/^ */    /'
		fi
		fail=1
	fi
}

check deletion "$bound" "$memlim" "$opt"
for c in "${configs[@]}"; do
	IFS='|' read -r cname cbound copt <<<"$c"
	check "$cname" "$cbound" "$memlim" "$copt"
done

for v in "${variants[@]}"; do
	IFS='|' read -r name want vbound vpan <<<"$v"
	want=${want//,/|}
	if ! verify "$vbound -D$name" 1024 -O0 "$vpan"; then
		echo "model: FAIL: could not build variant $name"
		fail=1
		continue
	fi
	# (with -i the last counterexample found is the shortest, the trail's)
	got=$(grep -oE "assertion violated [a-z0-9_]+" pan.out | tail -n1 | awk '{print $3}')
	if [ -z "$got" ] || [ ! -f deletion.pml.trail ]; then
		echo "model: FAIL: variant $name was not caught (no counterexample)"
		stats
		fail=1
		continue
	fi
	if ! echo "$got" | grep -qxE "$want"; then
		echo "model: FAIL: variant $name broke $got, not $want as model/README.md says"
		fail=1
	else
		echo "model: variant $name caught: $got; counterexample:"
	fi
	# shellcheck disable=SC2086
	spin -t $vbound -D$name deletion.pml 2>&1 | grep -E "STEP|violated" | sed -e 's/^ *//' -e 's/^/    /'
done
exit $fail
