#!/usr/bin/python3
"""One version for engine, protocol and SDKs: the repository's VERSION file.

    version.py check     # fails, naming each file, when one disagrees with VERSION
    version.py stamp     # writes VERSION into every file below

The Go engine takes it at build time (make: -ldflags "-X main.version=...");
the SDKs carry it in their package metadata and source, listed here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# file, pattern whose group 2 is the version (groups 1 and 3 are kept as they are)
PLACES = [
    ("sdk-python/pyproject.toml", r'(?m)(^\[project\][^\[]*?^version = ")([^"]+)(")'),
    ("sdk-python/src/polystreams/_version.py", r'(?m)(^__version__ = ")([^"]+)(")'),
    ("sdk-node/package.json", r'(?m)(^  "version": ")([^"]+)(")'),
    ("sdk-node/src/version.ts", r'(export const VERSION = ")([^"]+)(")'),
    ("sdk-node/npm/linux-x64/package.json", r'(?m)(^  "version": ")([^"]+)(")'),
    ("sdk-node/npm/linux-arm64/package.json", r'(?m)(^  "version": ")([^"]+)(")'),
    ("sdk-rust/Cargo.toml", r'(?m)(^\[package\][^\[]*?^version = ")([^"]+)(")'),
]


def version() -> str:
    return (ROOT / "VERSION").read_text().strip()


def main() -> None:
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    want = version()
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", want):
        sys.exit(f"version: VERSION holds {want!r}, not a semantic version")
    bad = []
    for rel, pattern in PLACES:
        path = ROOT / rel
        text = path.read_text()
        m = re.search(pattern, text)
        if m is None:
            bad.append(f"{rel}: no version found")
            continue
        if m.group(2) == want:
            continue
        if cmd == "stamp":
            path.write_text(text[: m.start(2)] + want + text[m.end(2) :])
            print(f"version: {rel} {m.group(2)} -> {want}")
        else:
            bad.append(f"{rel}: {m.group(2)}")
    if bad:
        sys.exit(f"version: VERSION is {want}, but " + "; ".join(bad) + " (run tools/dist/version.py stamp)")
    if cmd == "check":
        print(f"version: {want} everywhere ({len(PLACES)} files and VERSION)")


if __name__ == "__main__":
    main()
