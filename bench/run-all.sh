# SPDX-License-Identifier: GPL-2.0-only
# run-all.sh -- builds, runs every benchmark once and prints a compact summary of every figure.
# The fault-injection campaign (faults.sh, several minutes) is run on its own.
#
# Usage (as root, from anywhere): sh bench/run-all.sh
# The full outputs are kept in a temporary directory named at the end.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${PDIMON_BUILD:-$src/build}
export PDIMON_BUILD="$build"

if [ "$(id -u)" != 0 ]; then
	echo "run-all: the benchmarks load BPF programs: run as root" >&2
	exit 1
fi
ninja -C "$build"
out=$(mktemp -d /tmp/pdimon-bench-XXXXXX)

failed=""
# step NAME COMMAND...: runs COMMAND, its output shown and kept in $out/NAME.txt
step() {
	name=$1
	shift
	echo "(load average before: $(cut -d' ' -f1-3 /proc/loadavg))" | tee "$out/$name.txt"
	{
		rc=0
		"$@" 2>&1 || rc=$?
		echo "$rc" > "$out/$name.rc"
	} | tee -a "$out/$name.txt"
	echo "(load average after: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out/$name.txt"
	[ "$(cat "$out/$name.rc" 2>/dev/null)" = 0 ] || failed="$failed $name"
}

echo "== call_cost (pingpong: unmonitored / probe floor / pdimond)"
step call_cost python3 "$here/call_cost.py"
echo "== lammps (crack, 4 ranks)"
step lammps python3 "$here/lammps.py"
echo "== record_lammps (record a crack run, replay it into the models)"
step record_lammps sh "$here/record_lammps.sh" "$out/crack.rec"
rm -f "$out/crack.rec"
echo "== bench-ingest (synthetic streams, memory)"
step ingest "$build/bench/bench-ingest"
echo "== bench-diagnosis (the whole diagnosis at 100,000 and 32,768 tasks)"
step diagnosis "$build/bench/bench-diagnosis"
echo "== bench-gather (tree against flat gather, 8 to 128 daemons on loopback)"
step gather "$build/bench/bench-gather" --rounds 7

echo
echo "== summary"
grep -E '^(probes per rank|pdimond events|(pingpong|barrier|iprobe): added)' "$out/call_cost.txt" |
	sed 's/^/call_cost   /'
grep -E '^(slowdown|pdimond status)' "$out/lammps.txt" | sed 's/^/lammps      /'
grep -E '^(recorded|ingest)' "$out/record_lammps.txt" |
	sed -E 's/^ingest (stream=replay bound=[^ ]+) .*(events_per_s=[0-9]+ \([^)]*\)).*(dropped_states=[0-9]+).*/recorded events replayed: \1 \2 \3/' |
	sed 's/^/record      /'
grep -E '^ingest' "$out/ingest.txt" |
	sed -E 's/^ingest (stream=[^ ]+ bound=[^ ]+) .*(events_per_s=[0-9]+ \([^)]*\)).*(dropped_states=[0-9]+).*/\1 \2 \3/' |
	sed 's/^/ingest      /'
grep -E '^memory' "$out/ingest.txt" | sed 's/^/ingest      /'
grep -E '^summary' "$out/diagnosis.txt" | sed 's/^/diagnosis   /'
grep -E '^(ratio|summary)' "$out/gather.txt" | sed 's/^/gather      /'
echo "(full outputs in $out; the machine is shared: see the load averages there)"
if [ -n "$failed" ]; then
	echo "run-all: failed:$failed" >&2
	exit 1
fi
