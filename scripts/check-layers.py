#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# check-layers.py [ROOT] -- pdimond's rooms stand on floors (doc/design/layout.md): a file of
# daemon/ may include the headers of its own floor and of the floors below, never one above.
# Prints every include that runs up, one line each, and exits 1 if there is any; 0 otherwise.
# check-layers.py --self-test: the check itself fails on an include that runs up.
import os
import re
import shutil
import sys
import tempfile

# Lowest first. A room is a .c file with its header (x.c, x.h, and x_*.h that has no .c of its
# own); it is named here by its path under daemon/ without the extension, or by its folder
# ("probe/"). The first match wins, so a room named alone comes before its folder.
FLOORS = [
    ("base", ["clock", "log", "ident", "worker", "service", "trapped"]),
    ("probe", ["probe/calibrate", "probe/cfi", "probe/close_together", "probe/datatypes",
               "probe/detach", "probe/elfobj", "probe/entry_place", "probe/needed",
               "probe/objcache", "probe/objopen", "probe/probe_change", "probe/probe_targets",
               "probe/procmaps", "probe/stackwalk", "probe/startup", "probe/tracer",
               "probe/uprobe_multi"]),
    ("state", ["config", "hang/hang", "registry", "daemon"]),
    ("ingest", ["probe/"]),
    ("store", ["store/"]),
    ("access", ["access"]),
    ("view", ["report/", "cluster/"]),
    ("hang", ["hang/"]),
    ("end", ["step_end"]),
    ("bus", ["bus/"]),
    ("main", ["pdimond", "upcalls"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rooms_of(daemon):
    """Each source of DAEMON -> its room; a header's name -> its path (relative to DAEMON)."""
    paths = []
    for top, _, names in os.walk(daemon):
        for n in names:
            if n.endswith((".c", ".h")):
                paths.append(os.path.relpath(os.path.join(top, n), daemon))
    stems = {p[:-2] for p in paths if p.endswith(".c")}
    room, header = {}, {}
    for p in paths:
        stem = p[:-2]
        if p.endswith(".h"):
            if os.path.basename(p) in header:
                sys.exit(f"check-layers: two headers named {os.path.basename(p)}: includes are ambiguous")
            header[os.path.basename(p)] = p
            if stem not in stems:  # tracer_impl.h is tracer's
                owners = [s for s in stems if stem.startswith(s + "_")]
                stem = max(owners, key=len) if owners else stem
        room[p] = stem
    return room, header


def floor_of(room):
    for i, (_, names) in enumerate(FLOORS):
        for n in names:
            if room == n or (n.endswith("/") and room.startswith(n)):
                return i
    return None


def check(root):
    daemon = os.path.join(root, "daemon")
    room, header = rooms_of(daemon)
    bad = []
    for p in sorted(room):
        fa = floor_of(room[p])
        if fa is None:
            bad.append(f"daemon/{p}: on no floor: add its room to FLOORS in scripts/check-layers.py")
            continue
        with open(os.path.join(daemon, p), encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            q = header.get(os.path.basename(inc))
            if q is None:
                continue  # lib/, bpf/ or generated: below every room of the daemon
            fb = floor_of(room[q])
            if fb is not None and fb > fa:
                bad.append(f"daemon/{p} ({FLOORS[fa][0]}) includes {inc} ({FLOORS[fb][0]}): "
                           "it runs up a floor")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        here = os.path.dirname(os.path.abspath(__file__))
        shutil.copytree(os.path.join(here, "..", "daemon"), os.path.join(tmp, "daemon"))
        if check(tmp):
            print("self-test: the tree fails already: run check-layers.py first")
            return 1
        with open(os.path.join(tmp, "daemon", "log.c"), "a", encoding="utf-8") as f:
            f.write('#include "registry.h"\n')
        bad = check(tmp)
        if len(bad) != 1 or "daemon/log.c (base) includes registry.h (state)" not in bad[0]:
            print("self-test: an include from base up to the registry was not caught:", bad)
            return 1
    print("self-test: an include that runs up is caught")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = check(root)
    for line in bad:
        print(line)
    print(f"check-layers: {len(bad)} include(s) running up a floor")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
