#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# demo.sh -- install, build, then watch a real 4-rank Open MPI job in which rank 2 hangs:
# pdimond models every task from its first MPI call, and pdimon shows where each one is.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "demo.sh: pdimond loads BPF programs: run as root" >&2
	exit 1
fi
./scripts/install-deps.sh
./scripts/build.sh build

run=$(mktemp -d /tmp/pdimon-demo.XXXXXX)
pdimon() { build/client/pdimon "$@"; }
cleanup() {
	[ -n "${job:-}" ] && kill "$job" 2>/dev/null || true
	[ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
	[ -n "${bus:-}" ] && kill "$bus" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# a private system bus with pdimon's policy, as the tests use
sed -e "s|@SOCKET@|$run/system_bus_socket|" -e "s|@POLICY@|$PWD/packaging/org.pdimon.Monitor1.conf|" \
	tests/dbus/system-bus.conf.in >"$run/system-bus.conf"
dbus-daemon --nofork --nopidfile --config-file="$run/system-bus.conf" &
bus=$!
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$run/system_bus_socket"
i=0
until [ -S "$run/system_bus_socket" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "demo: dbus-daemon did not start"; exit 1; }
	sleep 0.1
done

build/daemon/pdimond --foreground --config /dev/null 2>"$run/pdimond.log" &
daemon=$!
i=0
until pdimon status >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "demo: pdimond did not start:"; cat "$run/pdimond.log"; exit 1; }
	sleep 0.1
done

echo "== A 4-rank ring (Irecv, Isend, Waitall, Barrier), 1 ms of compute per iteration;"
echo "== rank 2 stops computing forever in iteration 200."
build/client/pdimon run --step demo -- mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 \
	build/tests/mpi/ring.openmpi 100000 1000 2 200 >"$run/job.log" 2>&1 &
job=$!

# wait until the three healthy ranks sit in MPI_Barrier: the job is hung
i=0
until pdimon show demo --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
blocked = [t for t in s["tasks"] if t["current"].get("in_mpi") == "MPI_Barrier"]
sys.exit(0 if len(s["tasks"]) == 4 and len(blocked) == 3 else 1)'; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "demo: the job never hung"; exit 1; }
	sleep 0.1
done
sleep 2 # let the hang age a little, as it would before anyone looks

echo
echo "== pdimon status"
pdimon status
echo
echo "== Where is every task? (pdimon show demo, first lines of each rank)"
pdimon show demo | awk '/^rank /{n=0} {if (n++ < 3) print}'
echo
echo "== Diagnosis"
pdimon show demo --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
stuck = {}
for t in s["tasks"]:
    c = t["current"]
    where = ("inside " + c["in_mpi"]) if "in_mpi" in c else ("computing after " + c.get("computing_after", "?"))
    stuck.setdefault(where, []).append(t["rank"])
for where, ranks in sorted(stuck.items(), key=lambda kv: len(kv[1])):
    print(f"  ranks {ranks}: {where}")
odd = min(stuck.items(), key=lambda kv: len(kv[1]))
print(f"  -> the job is hung: rank(s) {odd[1]} never reached the call the others wait in ({odd[0]})")'

kill "$job"
wait "$job" 2>/dev/null || true
job=
