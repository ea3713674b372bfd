#!/usr/bin/env bash
# sexton's removes side by side with etcd 3.6's deletes on this machine:
# three members each, on loopback, a fresh cluster per run, alternating.
#
#   scripts/etcdcmp/run.sh [ROUNDS]      (default 3; ~3 minutes a round)
#
# Each round: etcd 16 clients x 1 key (K1 keys, default 100000), sexton
# the same, etcd 16 x 64 (K64, default 600000), sexton the same. etcd is
# built from the module proxy (this directory is its own Go module, so
# sexton's go.mod does not carry etcd), with its defaults (fsync on).
# sexton's masters get --registry-capacity 2000000 so that 600,000 keys'
# delete tasks fit (the default holds 50,000). Scratch data goes to
# $ETCDCMP_DIR (default /tmp/sexton-etcdcmp), wiped at the start.
# ETCDCMP_STORES="boltdb wal" runs sexton once per raft log store in each
# round (default boltdb, the store issue 13's targets name).
# ETCDCMP_FLOORS="0 512MiB" runs sexton once per --gc-heap-floor in each
# round too (default: the masters' own default).
# ETCDCMP_PROCS="default 1" runs both etcd and sexton once per GOMAXPROCS
# value in each round (default: the runtime's own, one per core); the
# bench clients keep the runtime's default.
# ETCDCMP_BINS="/tmp/a /tmp/b" runs sexton's masters from each of these
# builds in each round, an A/B against the same etcd run (default: this
# tree's bin/sexton; the bench client is always this tree's).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds="${1:-3}"
K1="${K1:-100000}"
K64="${K64:-600000}"
dir="${ETCDCMP_DIR:-/tmp/sexton-etcdcmp}"
stores="${ETCDCMP_STORES:-boltdb}"
floors="${ETCDCMP_FLOORS:-default}"
procs="${ETCDCMP_PROCS:-default}"
bins="${ETCDCMP_BINS:-$root/bin/sexton}"
rm -rf "$dir" && mkdir -p "$dir/bin"
(cd "$here" && go build -o "$dir/bin/etcd" ./etcd && go build -o "$dir/bin/del" ./del)
(cd "$root" && make build >/dev/null)

wait_gone() { while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; }

# procs_env P: env(1)'s arguments for GOMAXPROCS=P, or the runtime's
# default (env execs the command, so $! stays the process to kill).
procs_env() { if [ "$1" = default ]; then echo "-u GOMAXPROCS"; else echo "GOMAXPROCS=$1"; fi; }

etcd_run() { # keys batch procs
	local cluster="e1=http://127.0.0.1:23801,e2=http://127.0.0.1:23802,e3=http://127.0.0.1:23803" pids=()
	rm -rf "$dir/etcd"
	mkdir -p "$dir/etcd"
	echo "etcd GOMAXPROCS=$3"
	for i in 1 2 3; do
		env $(procs_env "$3") "$dir/bin/etcd" --name "e$i" --data-dir "$dir/etcd/e$i" \
			--listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
			--listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
			--initial-cluster "$cluster" --initial-cluster-state new --log-level error >"$dir/etcd/e$i.log" 2>&1 &
		pids+=($!)
	done
	sleep 3
	"$dir/bin/del" --keys "$1" --clients 16 --batch "$2" || true
	kill "${pids[@]}"
	for p in "${pids[@]}"; do wait_gone "$p"; done
}

sexton_run() { # keys batch store floor procs bin
	local flags="--registry-capacity 2000000"
	[ "$4" = default ] || flags+=" --gc-heap-floor $4"
	echo "sexton $6 --raft-log-store $3 --gc-heap-floor $4 GOMAXPROCS=$5"
	export SEXTON_BIN="$6" SEXTON_LOCAL_DIR="$dir/sexton" SEXTON_HOLDERS=0 SEXTON_MASTER_FLAGS="$flags" SEXTON_RAFT_LOG_STORE="$3" SEXTON_PORT_BASE=7000
	rm -rf "$SEXTON_LOCAL_DIR"
	env $(procs_env "$5") "$root/deploy/local/cluster.sh" up >/dev/null
	sleep 3
	"$root/bin/sexton" bench remove --masters 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 \
		--keys "$1" --clients 16 --batch "$2" | grep -v '^setup' || true
	"$root/deploy/local/cluster.sh" down >/dev/null
}

for r in $(seq "$rounds"); do
	echo "## round $r $(date -u +%T)"
	for p in $procs; do etcd_run "$K1" 1 "$p"; done
	for p in $procs; do for s in $stores; do for f in $floors; do for b in $bins; do sexton_run "$K1" 1 "$s" "$f" "$p" "$b"; done; done; done; done
	for p in $procs; do etcd_run "$K64" 64 "$p"; done
	for p in $procs; do for s in $stores; do for f in $floors; do for b in $bins; do sexton_run "$K64" 64 "$s" "$f" "$p" "$b"; done; done; done; done
done
