#!/usr/bin/env bash
# Model-checks the deletion protocol (model/deletion.pml, see model/README.md)
# with spin:
#
#   scripts/model.sh short   the small bound `make test` runs (seconds)
#   scripts/model.sh long    the bigger bound of `make model` (minutes)
#
# First the real model: spin must explore every state of the bound and find
# no assertion violated. Then each weakened variant (a -D macro that undoes
# one rule of the code) must make spin find a counterexample to the property
# the README's table says it breaks; its trail is printed as model steps.
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
# changes, GC rounds per holder, and the optional behaviours.
case "$mode" in
short) bound="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0"; memlim=1024 ;;
long) bound="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DLATEACK"; memlim=8000 ;;
*) echo "usage: $0 short|long" >&2; exit 2 ;;
esac

# variant:the assertion spin must report (alternatives separated by |).
variants=(
	"WEAK_WITHHOLD:inv7_latest_copy_last"
	"WEAK_NOTLIVE:inv7_latest_copy_last"
	"WEAK_ACK_EARLY:inv3_no_lost_intent"
	"NO_GRANT_CHECK:inv7_latest_copy_last"
	"NO_FLOOR:inv3_no_lost_intent|inv1_no_resurrection"
	"WEAK_GC_NO_CARRY:inv8_gc_keeps_visible"
	"WEAK_KEY_ONLY:inv2_no_wrong_victim"
)
# The weakened variants run at the small bound, built without optimisation
# (compiling takes longer than finding their counterexample).
small="-DNINC=2 -DNCRASH=1 -DNLEAD=1 -DNGC=1 -DNGC1=0"

work=$(mktemp -d "${TMPDIR:-/tmp}/sexton-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/deletion.pml"
cd "$work" || exit 1

# verify DEFS MEMLIM OPT: builds and runs pan, output in pan.out.
verify() {
	rm -f pan pan.* deletion.pml.trail
	# shellcheck disable=SC2086
	spin -a $1 deletion.pml >spin.out 2>&1 || { cat spin.out; return 2; }
	# -w: gcc warns about spin's bounds-checked constant indexes.
	gcc "$3" -w -DSAFETY -DCOLLAPSE -DMEMLIM="$2" -o pan pan.c || return 2
	./pan -m20000 -w24 >pan.out 2>&1
	return 0
}

stats() {
	grep -E "State-vector|states, stored|transitions \(|total actual memory|elapsed time" pan.out | sed 's/^ */    /'
}

fail=0
echo "model: deletion.pml, $mode bound: $bound"
start=$(date +%s)
if ! verify "$bound" "$memlim" -O2; then
	echo "model: FAIL: could not build the verifier"
	exit 1
fi
if grep -q "errors: 0" pan.out && ! grep -qE "max search depth too small|reached -DMEMLIM|out of memory" pan.out; then
	echo "model: ok, no assertion violated in any reachable state ($(($(date +%s) - start))s wall)"
	stats
else
	echo "model: FAIL: the real model violates an assertion or the search was incomplete"
	cat pan.out
	if [ -f deletion.pml.trail ]; then
		# shellcheck disable=SC2086
		spin -t $bound deletion.pml 2>&1 | grep -E "STEP|violated" | sed 's/^ */    /'
	fi
	fail=1
fi

for v in "${variants[@]}"; do
	name=${v%%:*}
	want=${v#*:}
	if ! verify "$small -D$name" 1024 -O0; then
		echo "model: FAIL: could not build variant $name"
		fail=1
		continue
	fi
	got=$(grep -oE "assertion violated [a-z0-9_]+" pan.out | head -n1 | awk '{print $3}')
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
	spin -t $small -D$name deletion.pml 2>&1 | grep -E "STEP|violated" | sed -e 's/^ *//' -e 's/^/    /'
done
exit $fail
