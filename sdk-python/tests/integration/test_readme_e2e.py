"""The README programs run verbatim: the first ``python`` block of the
repository's README.md and of sdk-python/README.md, each written to a file
and run as a user would run it (its own engine, the embedded broker),
fed a few lines, its word counts read back from Kafka."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

REPO = Path(__file__).resolve().parents[3]

LINES = ["to be or not to be", "to do is to be"]
WANT = {"to": 4, "be": 3, "or": 1, "not": 1, "do": 1, "is": 1}
HINT = re.compile(r"polystreams: embedded Kafka broker at (\S+) .*kcat -P -b \S+ -t (\S+)")


def first_block(readme: Path, lang: str) -> str:
    """The first fenced code block of readme in language lang."""
    m = re.search(rf"^```{lang}\n(.*?)^```", readme.read_text(encoding="utf-8"), re.S | re.M)
    assert m, f"{readme} has no ```{lang} block"
    return m.group(1)


def read_counts(broker: str, topic: str, want: dict[str, int], timeout: float) -> dict[str, int]:
    """The last count of each word on topic, read until it equals want or
    timeout passes."""
    c = Consumer({"bootstrap.servers": broker, "group.id": "readme-check", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: dict[str, int] = {}
    try:
        deadline = time.monotonic() + timeout
        while got != want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            key, value = m.key(), m.value()
            assert key is not None and value is not None and len(value) == 8, (key, value)
            got[key.decode()] = struct.unpack(">q", value)[0]
    finally:
        c.close()
    return got


@pytest.mark.parametrize("readme", ["README.md", "sdk-python/README.md"])
def test_readme_program_runs_verbatim(tmp_path: Path, readme: str) -> None:
    program = tmp_path / "wordcount.py"
    program.write_text(first_block(REPO / readme, "python"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO / "sdk-python" / "src"), TMPDIR=str(tmp_path))
    # Its own session: the Ctrl-C below goes to its process group, as a
    # terminal's would.
    p = subprocess.Popen(
        [sys.executable, str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True,
    )
    try:
        assert p.stderr is not None
        err = ""
        hint = None
        while hint is None:
            ready, _, _ = select.select([p.stderr], [], [], 60)
            line = p.stderr.readline() if ready else ""
            assert line, f"{readme}: the program never printed the embedded broker's address; its stderr:\n{err}"
            err += line
            hint = HINT.search(line)
        broker, topic = hint.group(1), hint.group(2)
        assert topic == "lines", hint.group(0)
        prod = Producer({"bootstrap.servers": broker})
        for line in LINES:
            prod.produce(topic, value=line.encode())
        assert prod.flush(30) == 0
        got = read_counts(broker, "word-counts", WANT, timeout=60)
        assert got == WANT, f"{readme}: word counts {got}, want {WANT}"
        os.killpg(p.pid, signal.SIGINT)
        out, rest = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err + rest
    assert "Traceback" not in rest, rest
    assert "Sub-topology: 0" in out, out


def test_sdk_readme_opens_with_the_readme_program() -> None:
    """sdk-python/README.md starts with its title, then the program of the
    repository's README.md."""
    sdk = REPO / "sdk-python" / "README.md"
    assert sdk.read_text(encoding="utf-8").startswith("# polystreams for Python\n\n```python\n")
    assert first_block(sdk, "python") == first_block(REPO / "README.md", "python")


def section_block(readme: Path, heading: str, lang: str) -> str:
    """The first fenced code block in language lang after the line heading."""
    text = readme.read_text(encoding="utf-8")
    at = text.find(f"\n{heading}\n")
    assert at >= 0, f"{readme} has no {heading!r} section"
    m = re.compile(rf"^```{lang}\n(.*?)^```", re.S | re.M).search(text, at)
    assert m, f"{readme}: no ```{lang} block after {heading!r}"
    return m.group(1)


def test_readme_async_example_runs_verbatim(tmp_path: Path) -> None:
    """sdk-python/README.md's async example, run as a user would: orders in,
    checked orders out, read back from Kafka."""
    program = tmp_path / "check_orders.py"
    program.write_text(section_block(REPO / "sdk-python" / "README.md", "### Async functions", "python"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO / "sdk-python" / "src"), TMPDIR=str(tmp_path))
    p = subprocess.Popen(
        [sys.executable, str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True,
    )
    orders = [{"id": i, "amount": 10 * i} for i in range(5)]
    try:
        assert p.stderr is not None
        err = ""
        hint = None
        while hint is None:
            ready, _, _ = select.select([p.stderr], [], [], 60)
            line = p.stderr.readline() if ready else ""
            assert line, f"the async example never printed the embedded broker's address; its stderr:\n{err}"
            err += line
            hint = HINT.search(line)
        broker, topic = hint.group(1), hint.group(2)
        assert topic == "orders", hint.group(0)
        prod = Producer({"bootstrap.servers": broker})
        for o in orders:
            prod.produce(topic, key=f"o{o['id']}".encode(), value=json.dumps(o).encode())
        assert prod.flush(30) == 0
        c = Consumer({"bootstrap.servers": broker, "group.id": "readme-async", "auto.offset.reset": "earliest"})
        c.subscribe(["checked-orders"])
        got: list[tuple[str, object]] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < len(orders) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append((m.key().decode(), json.loads(m.value())))
        finally:
            c.close()
        # Keys spread over the topic's partitions: each key's one result.
        assert dict(got) == {f"o{o['id']}": {**o, "checked": True} for o in orders}, got
        os.killpg(p.pid, signal.SIGINT)
        _, rest = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err + rest
    assert "Traceback" not in rest, rest
