# SPDX-License-Identifier: GPL-2.0-only
# faults.sh -- the full fault-injection campaign: every MPI program (halo, master_worker,
# solver) x every fault (hang, stall, cpu, mem, drop, extra) x every place (compute, mpi)
# x SEEDS seeds, 8 ranks each under a fresh pdimond, scored and printed as a table per fault.
#
# Usage (as root, from anywhere): sh bench/faults.sh [SEEDS (3)] [openmpi|mpich|both (openmpi)]
# More campaign.py options in FAULTS_ARGS, e.g. FAULTS_ARGS="--faults hang,drop --first-seed 10".
# One run takes 5-20 s: SEEDS=3 on one implementation is about 25 minutes on 2 cores.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${PDIMON_BUILD:-$src/build}
export PDIMON_BUILD="$build" PDIMON_SRC="$src" PYTHONDONTWRITEBYTECODE=1
seeds=${1:-3}
impls=${2:-openmpi}
[ "$impls" = both ] && impls="openmpi mpich"

if [ "$(id -u)" != 0 ]; then
	echo "faults: pdimond loads BPF programs: run as root" >&2
	exit 1
fi
ninja -C "$build"
out=$(mktemp -d /tmp/pdimon-faults-XXXXXX)
rc=0
for impl in $impls; do
	echo "== $impl: $seeds seeds (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
	# shellcheck disable=SC2086
	python3 "$src/tests/faults/campaign.py" --seeds "$seeds" --impl "$impl" --out "$out/$impl" \
		${FAULTS_ARGS:-} || rc=$?
	echo "(load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "(per-run lines: $out/*/campaign.log; every run's analysis and truth: $out/*/*.json)"
exit $rc
