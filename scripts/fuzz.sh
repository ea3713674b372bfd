#!/usr/bin/env bash
# Runs each fuzz target for a while: scripts/fuzz.sh BUDGET pkg:FuzzName...
# BUDGET is -fuzztime: a duration (2m) or a number of executions (40000x).
#
# A target fails when it finds something (it writes the failing input under
# testdata/fuzz/ and says so). Go 1.26's fuzz coordinator can also fail a
# target with a bare "context deadline exceeded" as a duration budget runs
# out while a worker is mid-call (go.dev/issue/75804, fixed in Go 1.27);
# that finds nothing, so such a run is repeated (up to three tries) and
# fails only if it keeps happening or a failing input appears. An
# execution-count budget has no deadline to race: `make test` uses one.
set -uo pipefail
dur="$1"; shift
for t in "$@"; do
	pkg="${t%%:*}"; fn="${t##*:}"
	for try in 1 2 3; do
		echo "fuzz $pkg $fn ($dur)"
		out=$(go test -run='^$' -fuzz="^$fn\$" -fuzztime="$dur" "./$pkg" 2>&1); rc=$?
		echo "$out" | tail -n 20
		[ $rc -eq 0 ] && break
		if [ $try -lt 3 ] && echo "$out" | grep -q "context deadline exceeded" &&
			! echo "$out" | grep -qE "Failing input written|panic:"; then
			echo "fuzz $pkg $fn: the coordinator's deadline race (no failing input); running it once more"
			continue
		fi
		exit 1
	done
done
