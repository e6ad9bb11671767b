#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# build.sh [DIR [MESON-OPTIONS...]] -- configure (once) and build pdimon into DIR (default build/).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
