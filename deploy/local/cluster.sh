#!/usr/bin/env bash
# A three-master sexton cluster (and, once holders exist, two holders) on
# loopback ports, from the built binary, each node with its own data dir
# and log under $SEXTON_LOCAL_DIR (default ./sexton-local).
#
#   deploy/local/cluster.sh up | down | status | kill-leader | restart NODE
#
# SEXTON_MASTER_FLAGS adds flags to every master (say --enable-debug for
# profiles and POST /debug/snapshot); SEXTON_HOLDERS=0 starts no holders
# (the scale benches bring simulated ones).
#
# Ports: SEXTON_PORT_BASE (default 7500) plus, for node N, N (master
# Raft), 100+N (master RPC), 200+N (master HTTP), 300+N (holder data RPC)
# and 400+N (holder HTTP): 7501-7503, 7601-7603, 7701-7703, 7801-7802,
# 7901-7902 by default, clear of `make run` (sexton dev on 7001, 7101,
# 7201, 7301), so both run side by side. SEXTON_PORT_BASE=7000 gives the
# ports of sexton dev's defaults for a cluster run alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${SEXTON_BIN:-$root/bin/sexton}"
dir="${SEXTON_LOCAL_DIR:-$root/sexton-local}"
base="${SEXTON_PORT_BASE:-7500}"
case "$base" in
'' | *[!0-9]*) echo "SEXTON_PORT_BASE=$base: want a number from 1024 to 65000" >&2; exit 2 ;;
esac
if [ "$base" -lt 1024 ] || [ "$base" -gt 65000 ]; then
	echo "SEXTON_PORT_BASE=$base: want a number from 1024 to 65000" >&2
	exit 2
fi
port() { echo $((base + $1)); } # port OFFSET
peers="m1=127.0.0.1:$(port 1),m2=127.0.0.1:$(port 2),m3=127.0.0.1:$(port 3)"
masters="127.0.0.1:$(port 101),127.0.0.1:$(port 102),127.0.0.1:$(port 103)"
export SEXTON_MASTERS="$masters"

node_num() { echo "${1#m}"; }

start_master() {
	local id="$1" i; i=$(node_num "$id")
	mkdir -p "$dir/$id"
	nohup "$bin" master --id "$id" --data-dir "$dir/$id" \
		--raft-addr "127.0.0.1:$(port "$i")" --rpc-addr "127.0.0.1:$(port $((100 + i)))" --http-addr "127.0.0.1:$(port $((200 + i)))" \
		--peers "$peers" --bootstrap ${SEXTON_MASTER_FLAGS:-} >>"$dir/$id.log" 2>&1 &
	echo $! >"$dir/$id.pid"
	echo "started $id (pid $!, rpc 127.0.0.1:$(port $((100 + i))), http 127.0.0.1:$(port $((200 + i))), log $dir/$id.log)"
}

start_holder() {
	local id="$1" i; i="${1#h}"
	mkdir -p "$dir/$id"
	nohup "$bin" holder --masters "$masters" --dir "$dir/$id" --rpc-addr "127.0.0.1:$(port $((300 + i)))" \
		--http-addr "127.0.0.1:$(port $((400 + i)))" --client-id "$id" >>"$dir/$id.log" 2>&1 &
	echo $! >"$dir/$id.pid"
	echo "started $id (pid $!, data rpc 127.0.0.1:$(port $((300 + i))), http 127.0.0.1:$(port $((400 + i))), log $dir/$id.log)"
}

stop_one() {
	local id="$1" sig="${2:-TERM}"
	[ -f "$dir/$id.pid" ] || return 0
	local pid; pid=$(cat "$dir/$id.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill -s "$sig" "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$dir/$id.pid"
	echo "stopped $id"
}

case "${1:-}" in
up)
	[ -x "$bin" ] || (cd "$root" && make build)
	mkdir -p "$dir"
	for m in m1 m2 m3; do start_master "$m"; done
	sleep 2
	[ "${SEXTON_HOLDERS:-2}" = 0 ] || for h in h1 h2; do start_holder "$h"; done
	"$bin" status || true
	echo "in your shell: export SEXTON_MASTERS=$masters"
	;;
down)
	for n in h1 h2 m1 m2 m3; do stop_one "$n"; done
	;;
status)
	"$bin" status
	;;
kill-leader)
	leader=$("$bin" status --json | sed -n 's/.*"leader": "\(m[0-9]\)".*/\1/p' | head -1)
	[ -n "$leader" ] || { echo "no leader known" >&2; exit 1; }
	stop_one "$leader" KILL
	echo "killed leader $leader"
	;;
restart)
	[ -n "${2:-}" ] || { echo "restart NODE (m1..m3, h1, h2)" >&2; exit 2; }
	stop_one "$2"
	case "$2" in m*) start_master "$2" ;; h*) start_holder "$2" ;; esac
	;;
*)
	echo "usage: $0 up | down | status | kill-leader | restart NODE" >&2
	exit 2
	;;
esac
