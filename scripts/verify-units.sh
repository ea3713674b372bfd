#!/bin/sh
# verify-units.sh BINARY: check every unit in deploy/systemd with
# systemd-analyze verify. Each template is instantiated (sexton-master@m1)
# in a temporary directory with ExecStart pointing at BINARY, so verify
# checks the unit, not whether /usr/local/bin/sexton is installed here.
# Each unit must also keep Type=notify, the watchdog and its hardening.
# verify exits 0 on unknown keys and bad values (it logs and ignores
# them), so any output at all fails the check. Skipped where
# systemd-analyze does not exist.
set -eu
bin=${1:?usage: verify-units.sh BINARY}
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "verify-units: systemd-analyze not found; skipped"
	exit 0
fi
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
[ -x "$bin" ] || { echo "verify-units: $bin is not an executable" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for unit in deploy/systemd/*.service; do
	name=$(basename "$unit")
	case $name in *@.service) name=${name%@.service}@check.service ;; esac
	sed "s#^ExecStart=/usr/local/bin/sexton #ExecStart=$bin #" "$unit" >"$tmp/$name"
	if ! grep -q "^ExecStart=$bin " "$tmp/$name"; then
		echo "verify-units: $unit: no ExecStart=/usr/local/bin/sexton line to check" >&2
		status=1
		continue
	fi
	# The hardening every unit keeps (deploy/README.md).
	for key in Type=notify WatchdogSec= ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
		NoNewPrivileges=yes StateDirectory= ReadWritePaths= 'CapabilityBoundingSet=$' \
		'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$' SystemCallFilter=@system-service; do
		grep -q "^$key" "$unit" || { echo "verify-units: $unit: no $key" >&2; status=1; }
	done
	out=$(cd "$tmp" && systemd-analyze verify "$tmp/$name" 2>&1) || status=1
	if [ -n "$out" ]; then
		echo "verify-units: $unit:" >&2
		echo "$out" >&2
		status=1
	fi
done
[ $status -eq 0 ] && echo "verify-units: $(ls deploy/systemd/*.service | wc -l) units ok"
exit $status
