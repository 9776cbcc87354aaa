#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every relative link in the repository's markdown files resolves: the file or
folder exists and, for a link to a heading (file.md#anchor or #anchor), the
heading exists as GitHub names it.  Usage: doclinks.py ROOT [FILE.md ...];
prints one line per broken link and exits 1 if there is any."""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)  # GitHub keeps letters, digits, _, - and spaces
    return s.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def strip_code(text):
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def main():
    root = sys.argv[1]
    files = sys.argv[2:]
    if not files:
        ls = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "*.md"],
                            capture_output=True, text=True, check=True)
        files = [os.path.join(root, f) for f in ls.stdout.split()]
    bad = 0
    for f in files:
        if not os.path.exists(f):
            continue
        for target in LINK.findall(strip_code(open(f, encoding="utf-8").read())):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            rel = os.path.relpath(f, root)
            if not os.path.exists(dest):
                print(f"{rel}: link to {target}: no such file")
                bad += 1
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                print(f"{rel}: link to {target}: no such heading in {os.path.relpath(dest, root)}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
