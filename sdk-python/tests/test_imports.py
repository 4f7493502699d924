"""The SDK's modules import one another without circles: read from the
sources (every import counts, also those under TYPE_CHECKING and inside
functions), the graph of polystreams modules has no cycle. The package's
__init__ is the facade that imports the others; no module imports it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "polystreams"
PACKAGE = "polystreams"


def modules() -> dict[str, Path]:
    return {("__init__" if p.stem == "__init__" else p.stem): p for p in SRC.glob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The polystreams modules path imports (generated code aside)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    out.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.ImportFrom):
            # A relative import (from . import x, from .x import y) is polystreams'.
            parts = [PACKAGE, *(node.module or "").split(".")] if node.level > 0 else (node.module or "").split(".")
            parts = [p for p in parts if p]
            if parts[0] != PACKAGE:
                continue
            if len(parts) > 1:
                out.add(parts[1])
                continue
            for alias in node.names:  # from polystreams import serde (a module) or X (the facade)
                out.add(alias.name if alias.name in known else "__init__")
    return {m for m in out if m in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, known) - {name} for name, path in mods.items()}


def cycle(g: dict[str, set[str]]) -> list[str] | None:
    """A cycle of g, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(g[m]):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state and (c := visit(n)) is not None:
                return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state and (c := visit(m)) is not None:
            return c
    return None


def test_the_modules_import_without_circles() -> None:
    g = graph()
    assert {"app", "dsl", "store", "_bundle", "_session"} <= set(g), sorted(g)
    c = cycle(g)
    assert c is None, "import circle: " + " -> ".join(c or [])


def test_no_module_imports_the_facade() -> None:
    g = graph()
    offenders = sorted(m for m, deps in g.items() if "__init__" in deps and m != "__init__")
    assert offenders == [], offenders


def test_the_check_sees_a_circle(tmp_path: Path) -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    src = tmp_path / "m.py"
    src.write_text(
        "import polystreams.dsl\n"
        "from polystreams import serde, App\n"
        "from . import windows\n"
        "from .store import KeyValueStore\n"
        "def f() -> None:\n"
        "    from polystreams.app import App\n"
    )
    known = {"__init__", "app", "dsl", "serde", "store", "windows"}
    assert imports_of(src, known) == {"__init__", "app", "dsl", "serde", "store", "windows"}
