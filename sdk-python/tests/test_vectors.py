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
from polystreams.app import HOST_FEATURES
from polystreams.v1alpha1 import engine_pb2 as pb

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "conformance" / "vectors"

# The conformance executor binds the catalogue's names to Python functions;
# the vectors name the same catalogue.
sys.path.insert(0, str(REPO / "conformance" / "executors" / "python"))
from executor import function, processor  # noqa: E402

KINDS = {
    "processing": pb.RecordFailure.KIND_PROCESSING,
    "deserialization": pb.RecordFailure.KIND_DESERIALIZATION,
}


def load(processors: bool) -> list[tuple[str, dict[str, Any]]]:
    """The vectors of one bundle each, or (processors) those of exchanges,
    of the files whose declared host features ("requires") this host declares."""
    out = []
    for path in sorted(VECTORS.glob("*.json")):
        file = json.loads(path.read_text())
        if not set(file.get("requires", [])) <= set(HOST_FEATURES):
            continue
        for v in file["vectors"]:
            if ("exchanges" in v) == processors:
                out.append((f"{path.stem}/{v['name']}", v))
    return out


VECTOR_CASES = load(False)
PROCESSOR_CASES = load(True)


def test_there_are_vectors() -> None:
    families = {name.split("/")[0] for name, _ in VECTOR_CASES + PROCESSOR_CASES}
    assert {"chains", "failures", "processors"} <= families, families


class ScriptedReads:
    """Answers a vector's Read calls in order, checking each request byte
    for byte (session_id cleared)."""

    def __init__(self, name: str, reads: list[dict[str, Any]]) -> None:
        self.name = name
        self.reads = list(reads)

    def __call__(self, req: pb.ReadRequest) -> pb.ReadResponse:
        assert self.reads, f"{self.name}: a Read beyond the vector's: {req}"
        want = self.reads.pop(0)
        got = pb.ReadRequest()
        got.CopyFrom(req)
        got.session_id = ""
        assert got.SerializeToString(deterministic=True) == base64.b64decode(want["request"]), (
            self.name, got, pb.ReadRequest.FromString(base64.b64decode(want["request"])),
        )
        return pb.ReadResponse.FromString(base64.b64decode(want["response"]))


@pytest.mark.parametrize(("name", "vector"), PROCESSOR_CASES, ids=[n for n, _ in PROCESSOR_CASES])
def test_processor_vector(name: str, vector: dict[str, Any]) -> None:
    """One fresh host runs the exchanges in order: processor instances live across them."""
    reads = ScriptedReads(name, [])
    first = pb.Bundle.FromString(base64.b64decode(vector["exchanges"][0]["bundle"]))
    stores = {s.token: list(s.stores) for s in first.steps}
    functions = {f["token"]: processor(f["fn"], stores.get(f["token"])) for f in vector["functions"]}
    ex = Executor(functions, read=reads)
    try:
        for i, x in enumerate(vector["exchanges"]):
            reads.reads = list(x.get("reads", []))
            result = ex.process(pb.Bundle.FromString(base64.b64decode(x["bundle"])))
            assert not reads.reads, f"{name} exchange {i}: Reads the vector has and the host did not make: {reads.reads}"
            want_failures = x.get("failures", [])
            got = [(f.index, f.step, f.kind) for f in result.failures]
            assert got == [(f["index"], f["step"], KINDS[f["kind"]]) for f in want_failures], (name, i, result.failures)
            for f, w in zip(result.failures, want_failures):
                assert w["message_contains"] in f.message, (name, i, f.message)
                f.message = ""
            want = pb.BundleResult.FromString(base64.b64decode(x["result"]))
            assert result == want, (name, i, result, want)
            assert result.SerializeToString(deterministic=True) == base64.b64decode(x["result"]), (name, i)
    finally:
        ex.close()


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
