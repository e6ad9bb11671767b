# SPDX-License-Identifier: GPL-2.0-only
# record_lammps.sh -- records a real LAMMPS crack run with pdimond (record=FILE), then replays it with bench-ingest.
#
# Usage: sh bench/record_lammps.sh [FILE]   (default: a temporary file, removed at the end)
# Prints the recording's size, then bench-ingest's "recorded events replayed" rate: the
# calls of the 4 ranks fed into 4 models through pdi_model_add_call() alone, the file
# repeated until at least 20 million calls went through.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${PDIMON_BUILD:-$here/../build}
if [ $# -ge 1 ]; then
	file=$1
	keep=1
else
	file=$(mktemp /tmp/pdimon-lammps-XXXXXX.rec)
	keep=0
fi
cleanup() { [ "$keep" = 1 ] || rm -f "$file"; }
trap cleanup EXIT
: > "$file"
python3 "$here/lammps.py" --record "$file"
"$build/bench/bench-ingest" --replay "$file" --no-synthetic --rounds "${ROUNDS:-3}"
