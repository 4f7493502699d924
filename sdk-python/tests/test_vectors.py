"""The host contract's test vectors (docs/design/host-vectors.md): every
vector of conformance/vectors, run through the Executor with the catalogue
functions it names, must give the vector's result byte for byte (failure
messages aside, which must contain what the vector says)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "conformance" / "vectors"

# The conformance executor binds the catalogue's names to Python functions;
# the vectors name the same catalogue.
sys.path.insert(0, str(REPO / "conformance" / "executors" / "python"))
from executor import function  # noqa: E402

KINDS = {
    "processing": pb.RecordFailure.KIND_PROCESSING,
    "deserialization": pb.RecordFailure.KIND_DESERIALIZATION,
}


def load() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(VECTORS.glob("*.json")):
        for v in json.loads(path.read_text())["vectors"]:
            out.append((f"{path.stem}/{v['name']}", v))
    return out


VECTOR_CASES = load()


def test_there_are_vectors() -> None:
    families = {name.split("/")[0] for name, _ in VECTOR_CASES}
    assert {"chains", "failures"} <= families, families


@pytest.mark.parametrize(("name", "vector"), VECTOR_CASES, ids=[n for n, _ in VECTOR_CASES])
def test_vector(name: str, vector: dict[str, Any]) -> None:
    functions = {f["token"]: function(f["fn"], f["role"]) for f in vector["functions"]}
    bundle = pb.Bundle.FromString(base64.b64decode(vector["bundle"]))
    result = Executor(functions).process(bundle)
    want_failures = vector.get("failures", [])
    got = [(f.index, f.step, f.kind) for f in result.failures]
    assert got == [(f["index"], f["step"], KINDS[f["kind"]]) for f in want_failures], name
    for f, w in zip(result.failures, want_failures):
        assert w["message_contains"] in f.message, (name, f.message)
        f.message = ""
    want = pb.BundleResult.FromString(base64.b64decode(vector["result"]))
    assert result == want, name
    assert result.SerializeToString(deterministic=True) == base64.b64decode(vector["result"]), name
