"""Interactive queries and state listeners against the real engine."""

from __future__ import annotations

import collections
import struct
import threading
import time
from pathlib import Path

import pytest
from test_engine_e2e import Runner, config, create_topic, produce, read_until

from polystreams import App, FailedPreconditionError, NotFoundError


def test_word_count_queried_from_another_thread(tmp_path: Path, app_id: str) -> None:
    lines = [" ".join(f"w{(i * 7 + j * 13) % 41}" for j in range(i % 6 + 1)) for i in range(1000)] + ["w w w wx x"]
    expected = collections.Counter(w for line in lines for w in line.split())
    transitions: list[tuple[str, str]] = []
    with App(app_id, config(tmp_path, commit_interval_ms=100)) as app:
        assert app.brokers
        create_topic(app.brokers, "lines", 4)
        create_topic(app.brokers, "word-counts", 4)
        produce(app.brokers, "lines", lines)
        table = app.stream("lines", value="string").flat_map_values(str.split).group_by(lambda k, w: w, key="string").count()
        table.to_stream().to("word-counts")
        assert table.store == "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
        store = table.query()
        with pytest.raises(FailedPreconditionError, match=table.store):
            store.get("w")  # before the topology runs
        app.on_state_change(lambda new, old: transitions.append((new, old)))
        runner = Runner(app)

        def complete(last: dict[str, bytes]) -> bool:
            return len(last) == len(expected) and all(struct.unpack(">q", last[w])[0] == n for w, n in expected.items())

        last = read_until(app.brokers, "word-counts", complete, 90, runner)
        assert complete(last)
        # Queries from this thread while run() serves bundles in another. The
        # store holds what is processed (at_least_once); wait until it caught up.
        found: dict[str, int] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = dict(app.store(table.store).all())
            if found == dict(expected):
                break
            time.sleep(0.2)
        assert found == dict(expected)
        assert store.get("w") == struct.unpack(">q", last["w"])[0] == 3
        assert store.get("nope") is None
        keys = sorted(k.encode() for k in expected)
        assert [k.encode() for k, _ in store.all()] == keys  # ordered by serialized key
        assert list(store.range("w1", "w2")) == [(k.decode(), expected[k.decode()]) for k in keys if b"w1" <= k <= b"w2"]
        assert list(store.range(to="w0")) == [("w", 3), ("w0", expected["w0"])]
        assert [k for k, _ in store.prefix("w1")] == [k.decode() for k in keys if k.startswith(b"w1")]
        assert list(store.prefix("x")) == [("x", 1)]
        assert store.approximate_num_entries() == len(expected)
        with pytest.raises(NotFoundError) as info:
            app.store("no-such-store").get("w")
        assert "no-such-store" in info.value.message and table.store in info.value.message

        # Many queries from several threads at once, while run() goes on.
        errors: list[BaseException] = []

        def hammer() -> None:
            try:
                for _ in range(20):
                    assert store.get("x") == 1
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, errors
        assert runner.error is None
        app.stop()
        runner.join(60)
    assert runner.error is None and runner.returned
    states = [new for new, _ in transitions]
    assert "running" in states and states[-1] == "stopped", transitions
    assert states.index("running") < len(states) - 1
    for (new, old), (_, next_old) in zip(transitions, transitions[1:]):
        assert new == next_old and new != old
