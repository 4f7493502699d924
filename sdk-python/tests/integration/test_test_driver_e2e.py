"""TopologyTestDriver against the real engine (test driver sessions)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from polystreams import Config, InvalidArgumentError, NotFoundError, ProcessingError
from polystreams.testing import TestRecord, TopologyTestDriver

REPO = Path(__file__).resolve().parents[3]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone but for its exit status.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_with_block_leaves_no_process_behind() -> None:
    with TopologyTestDriver("td-process") as driver:
        driver.stream("in", value="string").to("out")
        driver.pipe_input("in", None, "x")
        assert driver._engine is not None
        pid = driver._engine.pid
        assert _alive(pid)
        host = driver._host
    assert not _alive(pid), f"engine {pid} outlives the with block"
    assert host is not None and not host.is_alive(), "the host thread outlives the with block"


def test_each_record_is_processed_completely_through_a_repartition() -> None:
    # TopologyTestDriver processes a piped record through every sub-topology
    # (repartition topics included) before pipeInput returns: the counts of
    # the first line are all out before the second is piped.
    with TopologyTestDriver("td-repartition", Config(statestore_cache_max_bytes=0)) as driver:
        (driver.stream("lines", value="string")
            .flat_map_values(str.split)
            .group_by(lambda _k, w: w, key="string")
            .count()
            .to_stream()
            .to("counts"))
        driver.pipe_input("lines", None, "a b a", timestamp=10)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("counts")] == [("a", 1, 10), ("b", 1, 10), ("a", 2, 10)]
        assert driver.read_output("counts") == []  # what was written since the last read
        driver.pipe_input("lines", None, "b", timestamp=20)
        assert driver.read_output("counts") == [TestRecord("b", 2, 20)]


def test_headers_timestamps_wall_clock_and_tombstones() -> None:
    with TopologyTestDriver("td-records") as driver:
        driver.stream("in", key="string", value="string").map_values(lambda v: None if v == "del" else v.upper()).to("out")
        now = driver.advance_wall_clock(0)
        later = driver.advance_wall_clock(5_000)
        assert later == now + 5_000
        driver.pipe_input("in", "k", "v", headers={"h": "1"})
        driver.pipe_input("in", "k", "del", timestamp=7)
        out = driver.read_output("out")
        assert out == [TestRecord("k", "V", later, (("h", b"1"),)), TestRecord("k", None, 7)]


def test_read_key_values_to_map_keeps_the_latest_value_per_key() -> None:
    with TopologyTestDriver("td-map") as driver:
        driver.stream("in", key="string", value="long").to("out")
        for k, v in [("a", 1), ("b", 2), ("a", 3)]:
            driver.pipe_input("in", k, v)
        assert driver.read_key_values_to_map("out") == {"a": 3, "b": 2}
        driver.pipe_input("in", None, 4)
        with pytest.raises(ValueError, match="null key"):
            driver.read_key_values_to_map("out")


def test_bad_topics_and_stores_are_named() -> None:
    with TopologyTestDriver("td-bad") as driver:
        driver.stream("in", value="string").to("out")
        with pytest.raises(InvalidArgumentError, match=r'topic "nope" is not read by the topology \(it reads "in"\)'):
            driver.pipe_input("nope", None, "x")
        with pytest.raises(InvalidArgumentError, match=r'topic "in" is not written by the topology \(it writes "out"\)'):
            driver.read_output("in")
        with pytest.raises(NotFoundError, match=r'store "missing" does not exist'):
            driver.get_store("missing")
        with pytest.raises(NotFoundError, match=r'store "missing" does not exist'):
            driver.get_window_store("missing")
        driver.pipe_input("in", None, "still works")
        assert [r.value for r in driver.read_output("out")] == ["still works"]


def test_a_raising_function_fails_pipe_input_naming_the_record() -> None:
    def boom(v: str) -> str:
        if v == "bad":
            raise ValueError("bad value")
        return v

    with TopologyTestDriver("td-fail") as driver:
        driver.stream("in", value="string").map_values(boom).to("out")
        driver.pipe_input("in", None, "ok")
        with pytest.raises(ProcessingError, match="bad value") as e:
            driver.pipe_input("in", None, "bad")
        assert (e.value.topic, e.value.offset) == ("in", 1)


def test_window_store() -> None:
    from polystreams import TimeWindows

    with TopologyTestDriver("td-windows", Config(statestore_cache_max_bytes=0)) as driver:
        (driver.stream("clicks", key="string", value="string")
            .group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(1000))
            .count(materialized="clicks-per-second"))
        driver.pipe_input("clicks", "u", "x", timestamp=100)
        driver.pipe_input("clicks", "u", "x", timestamp=900)
        store = driver.get_window_store("clicks-per-second")
        assert [(w.start, n) for w, n in store.fetch("u", 0, 2000)] == [(0, 2)]
        driver.pipe_input("clicks", "u", "x", timestamp=1100)
        # Window [0, 1000) is past its retention (size + grace) at stream
        # time 1100, and a fetch skips it, as RocksDBWindowStore.fetch does.
        assert [(w.start, n) for w, n in store.fetch("u", 0, 2000)] == [(1000, 1)]


def test_start_time_and_latency(capsys: pytest.CaptureFixture[str]) -> None:
    # Measured, not asserted (tests never assert on wall-clock time); the
    # figures go to docs/design/test-driver.md.
    t0 = time.perf_counter()
    with TopologyTestDriver("td-timing") as driver:
        driver.stream("in", value="string").map_values(str.upper).to("out")
        driver.advance_wall_clock(0)
        ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        for i in range(200):
            driver.pipe_input("in", None, str(i))
        per = (time.perf_counter() - t1) / 200
        assert len(driver.read_output("out")) == 200
        t2 = time.perf_counter()
    closed = time.perf_counter() - t2
    with capsys.disabled():
        print(f"\ntest driver: ready in {ready * 1000:.0f} ms, {per * 1000:.2f} ms per piped record, closed in {closed * 1000:.0f} ms")


def test_pipe_key_values_and_records_keep_their_order() -> None:
    # TestInputTopic.pipeKeyValueList: each record processed before the
    # next, so a running total over one key sees them in order.
    with TopologyTestDriver("td-lists", Config(statestore_cache_max_bytes=0)) as driver:
        (driver.stream("in", key="string", value="long")
            .group_by_key()
            .reduce(lambda a, b: a * 10 + b)
            .to_stream()
            .to("out"))
        driver.pipe_key_values("in", [("k", 1), ("k", 2)], timestamp=5)
        driver.pipe_records([("in", "k", 3, 6, None), ("in", "j", 4, 7, {"h": b"x"})])
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [
            ("k", 1, 5), ("k", 12, 5), ("k", 123, 6), ("j", 4, 7),
        ]


def test_a_global_table_is_updated_before_pipe_input_returns() -> None:
    # Kafka's TopologyTestDriver#pipeRecord hands a record of a global
    # table's topic to processGlobalRecord (globalStateTask.update, then
    # flushState) before it returns: the next stream record joins with it.
    with TopologyTestDriver("td-global", Config(statestore_cache_max_bytes=0)) as driver:
        prices = driver.global_table("prices", key="string", value="long", materialized="prices")
        orders = driver.stream("orders", key="string", value="string")
        orders.join(prices, lambda _k, order: order.split()[0], lambda order, price: f"{order}@{price}").to("priced")
        with pytest.raises(InvalidArgumentError, match=r'topic "nope" is not read by the topology \(it reads "orders", "prices"\)'):
            driver.pipe_input("nope", None, "x")
        with pytest.raises(InvalidArgumentError, match=r'topic "prices" is not written by the topology \(it writes "priced"\)'):
            driver.read_output("prices")
        store = driver.get_store("prices")
        for i, (price, want) in enumerate([(1, ["apple x0@1"]), (5, ["apple x1@5"]), (None, []), (7, ["apple x3@7"])]):
            driver.pipe_input("prices", "apple", price, timestamp=i)
            assert store.get("apple") == price
            driver.pipe_input("orders", f"o{i}", f"apple x{i}", timestamp=i)
            assert [r.value for r in driver.read_output("priced")] == want, f"step {i}"


def test_emit_on_window_close_and_to_table() -> None:
    # KIP-825: a session count that emits on window close forwards each
    # session once, when stream time passes its end + gap, stamped with its
    # end; as KStreamSessionWindowAggregateProcessorTest's emitFinal cases.
    from polystreams import EmitStrategy, SessionWindows, Windowed

    with TopologyTestDriver("td-emit", Config(statestore_cache_max_bytes=0)) as driver:
        (driver.stream("in", key="string", value="string")
            .group_by_key()
            .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
            .emit_strategy(EmitStrategy.on_window_close())
            .count()
            .to_stream()
            .to("out"))
        outs = []
        for key, ts in [("a", 1), ("a", 4), ("b", 5), ("a", 20)]:
            driver.pipe_input("in", key, "x", timestamp=ts)
            outs.append([(r.key, r.value, r.timestamp) for r in driver.read_output("out")])
        assert outs == [[], [], [], [(Windowed("a", 1, 4), 2, 4), (Windowed("b", 5, 5), 1, 5)]]

    with TopologyTestDriver("td-to-table", Config(statestore_cache_max_bytes=0)) as driver:
        table = driver.stream("in", key="string", value="string").to_table(materialized="latest")
        table.to_stream().to("out")
        assert "Processor: KSTREAM-TOTABLE-0000000001 (stores: [latest])" in driver.describe()
        driver.pipe_input("in", "a", "1", timestamp=1)
        driver.pipe_input("in", None, "2", timestamp=2)
        driver.pipe_input("in", "a", None, timestamp=3)
        assert driver.read_output("out") == [TestRecord("a", "1", 1), TestRecord("a", None, 3)]
        assert driver.get_store("latest").get("a") is None
