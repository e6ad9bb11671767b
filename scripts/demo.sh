#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# demo.sh -- install, build, then monitor a real 4-rank Open MPI job under a real Slurm with
# srun --pdi-monitor; one rank hangs, the user cancels the job, and pdimon says where and who.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "demo.sh: it starts Slurm and loads BPF programs: run as root" >&2
	exit 1
fi
./scripts/install-deps.sh
./scripts/build.sh build
exec python3 scripts/demo.py
