#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# test.sh -- install what pdimon needs, build it, and run every test suite, as root.
# The last line says "N passed, N failed" with the real counts over all suites.
set -u
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "test.sh: the tests load BPF programs and start MPI jobs: run as root" >&2
	exit 1
fi
./scripts/install-deps.sh || { echo "test.sh: installing the dependencies failed"; exit 1; }

status=0
results=""
# build/: the release configuration with -Werror; build-asan/: ASan+UBSan (and LSan at exit)
./scripts/build.sh build || { echo "test.sh: build failed"; echo "0 passed, 1 failed"; exit 1; }
./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
	|| { echo "test.sh: sanitizer build failed"; echo "0 passed, 1 failed"; exit 1; }

# the release build: every test but those a sanitizer pass below runs whole (suite
# sanitized-once: the same test, the same assertions, and the sanitizers' checks on top)
meson test -C build --print-errorlogs --num-processes 1 --timeout-multiplier 2 --no-suite sanitized-once || status=1
results="$results build/meson-logs/testlog.json"
# under the sanitizers: the unit tests and the daemon's integration tests (leaks fail them)
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C build-asan --print-errorlogs --num-processes 1 --timeout-multiplier 3 \
	--suite unit --suite sanitize || status=1
results="$results build-asan/meson-logs/testlog.json"
# the 4-node Slurm test (once: suite sanitized-once), its pdimonds built with the sanitizers
# (they gather from each other)
PDIMON_PDIMOND="$PWD/build-asan/daemon/pdimond" ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C build --print-errorlogs --num-processes 1 --timeout-multiplier 3 --no-rebuild \
	--logbase multinode-asan MultiNode || status=1
results="$results build/meson-logs/multinode-asan.json"

python3 - $results <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        failed += 1
        continue
    for line in lines:
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
