#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# check-layers.py [ROOT] -- pdimond's rooms stand on floors (doc/design/layout.md): a file of
# daemon/ may include the headers of its own floor and of the floors below, never one above;
# and a header declares only functions that its own room defines, so that no call can run up
# a floor unseen. Prints what breaks either rule, one line each, and exits 1 if anything does.
# check-layers.py --self-test: the check itself fails on an include that runs up, and on a
# function declared in another room's header.
import os
import re
import shutil
import sys
import tempfile

# Lowest first. A room is a .c file with its header (x.c, x.h, and an x_*.c or x_*.h that has
# no partner of its own name: tracer_impl.h, site_pg_read.c); it is named here by its path under daemon/ without the extension, or by its folder
# ("probe/"). The first match wins, so a room named alone comes before its folder.
FLOORS = [
    ("base", ["clock", "log", "ident", "worker", "service", "trapped"]),
    ("probe", ["probe/calibrate", "probe/cfi", "probe/close_together", "probe/datatypes",
               "probe/detach", "probe/elfobj", "probe/entry_place", "probe/line_units", "probe/needed",
               "probe/objcache", "probe/objopen", "probe/probe_change", "probe/probe_targets",
               "probe/procmaps", "probe/stackwalk", "probe/startup", "probe/threads", "probe/tracer",
               "probe/uprobe_multi"]),
    ("state", ["config", "hang/hang", "registry", "daemon"]),
    ("ingest", ["probe/"]),
    ("store", ["store/"]),
    ("access", ["access"]),
    ("view", ["report/", "cluster/"]),
    # inside hang/: the judge's state under its ways out, the judge on top (a new file too)
    ("hang state", ["hang/progress", "hang/health_state"]),
    ("hang ways", ["hang/history", "hang/metrics", "hang/notify", "hang/stack_look"]),
    ("hang actions", ["hang/actions"]),
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
    sources = {p[:-2] for p in paths if p.endswith(".c")}
    headers = {p[:-2] for p in paths if p.endswith(".h")}
    room, header = {}, {}
    for p in paths:
        stem = p[:-2]
        if p.endswith(".h"):
            if os.path.basename(p) in header:
                sys.exit(f"check-layers: two headers named {os.path.basename(p)}: includes are ambiguous")
            header[os.path.basename(p)] = p
        partners = headers if p.endswith(".c") else sources
        if stem not in partners:  # tracer_impl.h is tracer's, site_pg_read.c site_pg's
            owners = [s for s in sources & headers if stem.startswith(s + "_")]
            stem = max(owners, key=len) if owners else stem
        room[p] = stem
    return room, header


def floor_of(room):
    for i, (_, names) in enumerate(FLOORS):
        for n in names:
            if room == n or (n.endswith("/") and room.startswith(n)):
                return i
    return None


# Headers that declare functions of another room, left so on purpose: the tracer's headers
# declare what its start-up (startup.c) and its probe changes (probe_change.c) define, which
# the tracer and they call both ways (doc/design/layout.md, what is not yet so).
DECLARED_ELSEWHERE = {"probe/tracer": {"probe/startup", "probe/probe_change"}}

# A function declared (a header) or defined (a source) at the start of a line, by its name.
DECLARED = re.compile(r"^(?!typedef|static|extern|#|\s|/|\*)[^;{}()=]*?\b(pdi_\w+)\s*\(", re.M)
DEFINED = re.compile(r"^(?!typedef|static|extern|#|\s|/|\*)[^;{}()=]*?\b(pdi_\w+)\s*\([^;{]*\)\s*\{", re.M)


def misplaced(daemon, room, texts):
    """A header that declares a function another room defines: the call it serves is unseen."""
    defined = {}
    for p, text in texts.items():
        if p.endswith(".c"):
            for name in DEFINED.findall(text):
                defined.setdefault(name, set()).add(room[p])
    bad = []
    for p, text in sorted(texts.items()):
        if not p.endswith(".h"):
            continue
        for name in DECLARED.findall(text):
            owners = defined.get(name, {room[p]})  # defined outside daemon/ (lib/): not ours
            if room[p] not in owners and not owners & DECLARED_ELSEWHERE.get(room[p], set()):
                where = ", ".join(f"daemon/{o}.c" for o in sorted(owners))
                bad.append(f"daemon/{p} declares {name}, which {where} defines: declare it in that room's header")
    return bad


def check(root):
    daemon = os.path.join(root, "daemon")
    room, header = rooms_of(daemon)
    texts = {}
    for p in room:
        with open(os.path.join(daemon, p), encoding="utf-8") as f:
            texts[p] = f.read()
    bad = []
    for p in sorted(room):
        fa = floor_of(room[p])
        if fa is None:
            bad.append(f"daemon/{p}: on no floor: add its room to FLOORS in scripts/check-layers.py")
            continue
        for inc in INCLUDE.findall(texts[p]):
            q = header.get(os.path.basename(inc))
            if q is None:
                continue  # lib/, bpf/ or generated: below every room of the daemon
            fb = floor_of(room[q])
            if fb is not None and fb > fa:
                bad.append(f"daemon/{p} ({FLOORS[fa][0]}) includes {inc} ({FLOORS[fb][0]}): "
                           "it runs up a floor (doc/design/layout.md: declare what it needs lower down, "
                           "or call up through pdi_upcalls)")
    return bad + misplaced(daemon, room, texts)


# Faults the check must catch, each added to a copy of the tree in turn: (file, text, what it says).
FAULTS = [
    ("log.c", '#include "registry.h"\n', "daemon/log.c (base) includes registry.h (state)"),
    ("log.h", "struct pdi_registry;\nvoid pdi_registry_done(struct pdi_registry *r);\n",
     "daemon/log.h declares pdi_registry_done, which daemon/registry.c defines"),
    ("hang/history.c", '#include "step_health.h"\n',
     "daemon/hang/history.c (hang ways) includes step_health.h (hang)"),
]


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        here = os.path.dirname(os.path.abspath(__file__))
        shutil.copytree(os.path.join(here, "..", "daemon"), os.path.join(tmp, "daemon"))
        if check(tmp):
            print("self-test: the tree fails already: run check-layers.py first")
            return 1
        for n, (path, text, said) in enumerate(FAULTS, 1):
            with open(os.path.join(tmp, "daemon", path), "a", encoding="utf-8") as f:
                f.write(text)
            bad = check(tmp)
            if len(bad) != n or not any(said in line for line in bad):
                print(f"self-test: not caught: {said}; the check said: {bad}")
                return 1
    print(f"self-test: all {len(FAULTS)} faults caught")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = check(root)
    for line in bad:
        print(line)
    print(f"check-layers: {len(bad)} include(s) running up a floor or declaration(s) out of their room")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
