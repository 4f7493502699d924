#!/usr/bin/python3
"""Builds the Python SDK's release artifacts with the standard library only
(PyPI is out of reach, so neither `build` nor `wheel` is at hand, and none is
needed: a wheel is a zip with METADATA, WHEEL and RECORD).

    wheel.py --out dist [--engine BIN --platform manylinux_2_17_x86_64]  # a wheel
    wheel.py --out dist --sdist                                          # the sdist

A platform wheel carries the engine as polystreams/_bin/polystreams, which
find_engine() prefers to PATH; without --engine the wheel is pure
(py3-none-any) and finds the engine as a checkout does. Metadata comes from
sdk-python/pyproject.toml, whose version the repository's VERSION file sets
(tools/dist/version.py). Output is reproducible: entries are sorted and dated
SOURCE_DATE_EPOCH (default 2020-01-01).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-python"
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1577836800"))


def project() -> dict:
    return tomllib.loads((SDK / "pyproject.toml").read_text())["project"]


def metadata(p: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p['description']}",
        f"License: {p['license']['text']}",
        f"Requires-Python: {p['requires-python']}",
    ]
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (SDK / p["readme"]).read_text()


def sources() -> list[tuple[str, Path]]:
    """The package's files as (path in the archive, file): the sources, the
    generated protocol code and its stubs, py.typed; no caches, no _bin."""
    pkg = SDK / "src" / "polystreams"
    out = []
    for f in sorted(pkg.rglob("*")):
        rel = f.relative_to(pkg.parent).as_posix()
        if f.is_file() and "__pycache__" not in f.parts and "/_bin/" not in "/" + rel and f.suffix in (".py", ".pyi", ".typed"):
            out.append((rel, f))
    return out


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(out: Path, engine: Path | None, platform: str | None) -> Path:
    p = project()
    name, version = p["name"], p["version"]
    tag = f"py3-none-{platform}" if engine else "py3-none-any"
    info = f"{name}-{version}.dist-info"
    entries: list[tuple[str, bytes, int]] = [(rel, f.read_bytes(), 0o644) for rel, f in sources()]
    if engine:
        entries.append((f"{name}/_bin/polystreams", engine.read_bytes(), 0o755))
    entries.append((f"{info}/METADATA", metadata(p).encode(), 0o644))
    wheel_file = f"Wheel-Version: 1.0\nGenerator: polystreams tools/dist/wheel.py\nRoot-Is-Purelib: {'false' if engine else 'true'}\nTag: {tag}\n"
    entries.append((f"{info}/WHEEL", wheel_file.encode(), 0o644))
    record = "".join(f"{rel},{digest(data)},{len(data)}\n" for rel, data, _ in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode(), 0o644))

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{version}-{tag}.whl"
    date = time.gmtime(max(EPOCH, 315532800))[:6]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for rel, data, mode in entries:  # RECORD last, as the spec recommends
            zi = zipfile.ZipInfo(rel, date_time=date)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data, compresslevel=9)
    return path


def sdist(out: Path) -> Path:
    p = project()
    base = f"{p['name']}-{p['version']}"
    files = [(f"src/{rel}", f) for rel, f in sources()] + [(n, SDK / n) for n in ("pyproject.toml", "README.md")]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{base}.tar.gz"

    def add(t: tarfile.TarFile, rel: str, data: bytes) -> None:
        ti = tarfile.TarInfo(f"{base}/{rel}")
        ti.size, ti.mtime, ti.mode = len(data), EPOCH, 0o644
        t.addfile(ti, io.BytesIO(data))

    with open(path, "wb") as raw:
        import gzip

        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=EPOCH) as gz, tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as t:
            add(t, "PKG-INFO", metadata(p).encode())
            for rel, f in sorted(files):
                add(t, rel, f.read_bytes())
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--engine", type=Path, help="the engine binary to bundle")
    ap.add_argument("--platform", help="the wheel's platform tag, e.g. manylinux_2_17_x86_64")
    ap.add_argument("--sdist", action="store_true")
    a = ap.parse_args()
    if a.sdist:
        path = sdist(a.out)
    else:
        if bool(a.engine) != bool(a.platform):
            sys.exit("wheel.py: --engine and --platform go together")
        path = wheel(a.out, a.engine, a.platform)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
