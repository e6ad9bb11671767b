# SPDX-License-Identifier: GPL-2.0-only
"""browser.py -- open a page in Debian's headless Chromium, the way a reader would.

open_page() loads a file offline (no network: DNS resolves nothing, the page's own policy
forbids fetching), lets its scripts run, and returns the DOM as the scripts left it, every
console message (the pages log nothing: any message is an error, a blocked script, a failed
chart) and a screenshot. dom() parses that DOM into a small tree for the tests to query.
"""
import html.parser
import os
import shutil
import subprocess
import tempfile

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def open_page(path, screenshot, height=2600):
    """(DOM text, console lines) of PATH; a PNG of the first HEIGHT pixels into SCREENSHOT."""
    with tempfile.TemporaryDirectory(prefix="pdimon-chromium-") as profile:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
               "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000",
               f"--window-size=1280,{height}", f"--screenshot={screenshot}", "--dump-dom",
               "file://" + os.path.abspath(path)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                           env=dict(os.environ, HOME=profile, DBUS_SESSION_BUS_ADDRESS="disabled:"))
    if r.returncode != 0 or "<html" not in r.stdout:
        raise AssertionError(f"chromium could not open {path} ({r.returncode}):\n{r.stderr[-3000:]}")
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return r.stdout, console


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.texts = tag, dict(attrs), parent, [], []

    def text(self):
        return "".join(t if isinstance(t, str) else t.text() for t in self.texts)

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def find_all(self, tag=None, id=None, cls=None):
        out = []
        for c in self.children:
            if (tag is None or c.tag == tag) and (id is None or c.attrs.get("id") == id) and \
                    (cls is None or cls in c.classes()):
                out.append(c)
            out += c.find_all(tag, id, cls)
        return out

    def find(self, tag=None, id=None, cls=None):
        found = self.find_all(tag, id, cls)
        return found[0] if found else None


class _Builder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#document", {}, None)
        self.unbalanced = []

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        self.cur.texts.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        self.cur.texts.append(n)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is None:
            self.unbalanced.append(tag)
            return
        if n is not self.cur:
            self.unbalanced.append(self.cur.tag)
        self.cur = n.parent

    def handle_data(self, data):
        self.cur.texts.append(data)


def dom(text):
    """TEXT parsed: (root Node, tags that were not closed where they should have been)."""
    b = _Builder()
    b.feed(text)
    b.close()
    return b.root, b.unbalanced
