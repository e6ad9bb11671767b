#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# install-deps.sh -- the Debian 12 packages pdimon builds, tests and demonstrates with.
set -eu
PKGS="meson ninja-build pkg-config gcc clang llvm bpftool libbpf-dev libelf-dev libdw-dev
      libcriterion-dev python3 python3-dbus procps iproute2 openmpi-bin libopenmpi-dev mpich libmpich-dev
      valgrind libclang-rt-14-dev libunwind-dev libcapstone-dev gfortran nwchem-openmpi scalapack-mpi-test
      slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev
      munge libmunge-dev nettle-dev dbus libsystemd-dev libsqlite3-dev sqlite3 zlib1g-dev passwd login util-linux
      libgraphviz-dev libjansson-dev libjs-vega chromium fonts-dejavu-core
      libgsl-dev libpq-dev postgresql hpcc python3-prometheus-client fuse3 libfuse3-dev
      gromacs meep-openmpi mpb-mpi"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
