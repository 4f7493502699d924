"""The Processor API against the real engine: build (describe, errors) and
processing in test driver sessions (stores read and written across
bundles, Read calls, punctuation by stream time and by the driver's wall
clock, failures, the Topology API, record metadata)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from polystreams import (
    PUT_RETURN_CODE_NOT_PUT,
    App,
    Config,
    FixedKeyProcessor,
    FixedKeyRecord,
    InvalidArgumentError,
    Processor,
    ProcessorContext,
    ProcessingError,
    PunctuationType,
    Record,
    RecordMetadata,
    Stores,
    VersionedRecord,
    with_metadata,
)
from polystreams.testing import TopologyTestDriver

REPO = Path(__file__).resolve().parents[3]

class Passthrough(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record)


def test_describe_names_processors_and_their_stores(app_id: str) -> None:
    with App(app_id) as app:
        app.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
        s = app.stream("input", key="string", value="string")
        s.process(Passthrough, stores=["counts"]).process_values(Passthrough).to("output")
        text = app.describe()
    assert "Processor: KSTREAM-PROCESSOR-0000000001 (stores: [counts])" in text, text
    assert "Processor: KSTREAM-PROCESSVALUES-0000000002 (stores: [])" in text, text


def test_a_processor_naming_a_store_no_one_added_is_refused(app_id: str) -> None:
    with App(app_id) as app:
        with pytest.raises(InvalidArgumentError, match="nope"):
            app.stream("input").process(Passthrough, stores=["nope"], name="p")
        app.stream("input2").process(Passthrough).to("out")  # the session stays usable


class CountPerKey(Processor):
    """Counts per key; a stream-time punctuator forwards each count and clears it."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")
        context.schedule(60_000, PunctuationType.STREAM_TIME, self.emit)

    def process(self, record: Record[Any, Any]) -> None:
        self.counts.put(record.key, (self.counts.get(record.key) or 0) + 1)

    def emit(self, timestamp: int) -> None:
        with self.counts.all() as entries:
            for key, count in list(entries):
                self.context.forward(Record(key, count, timestamp))
                self.counts.delete(key)


def test_stream_time_punctuator_sweeps_and_clears_the_store() -> None:
    with TopologyTestDriver("proc-sweep") as driver:
        driver.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
        driver.stream("clicks", key="string", value="string").process(CountPerKey, stores=["counts"], value="long").to("out")
        for t, user in [(1_000, "ann"), (2_000, "bob"), (3_000, "ann"), (61_000, "bob")]:
            driver.pipe_input("clicks", user, "click", timestamp=t)
        # Stream-time schedules are aligned to 0 and fire as soon as there is
        # data (StreamTask.schedule): at 1,000, then at 61,000.
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [
            ("ann", 1, 1_000), ("ann", 1, 61_000), ("bob", 2, 61_000),
        ]
        assert list(driver.get_store("counts").all()) == []


class WallClockFlush(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.last = context.get_state_store("last")
        context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, self.flush)

    def process(self, record: Record[Any, Any]) -> None:
        self.last.put(record.key, record.value)

    def flush(self, timestamp: int) -> None:
        with self.last.all() as entries:
            for key, value in list(entries):
                self.context.forward(Record(key, value, timestamp))
                self.last.delete(key)


def test_wall_clock_punctuators_run_when_the_driver_advances_its_clock() -> None:
    with TopologyTestDriver("proc-wall") as driver:
        driver.add_state_store(Stores.key_value_store("last", key="string", value="string"))
        driver.stream("in", key="string", value="string").process(WallClockFlush, stores=["last"]).to("out")
        driver.pipe_input("in", "a", "1", timestamp=5)
        driver.pipe_input("in", "a", "2", timestamp=6)
        assert driver.read_output("out") == []
        now = driver.advance_wall_clock(1_000)
        assert [(r.key, r.value, r.timestamp) for r in driver.read_output("out")] == [("a", "2", now)]
        driver.advance_wall_clock(1_000)
        assert driver.read_output("out") == []  # cleared by the first


class ReadsOtherKeys(Processor):
    """Reads a key no record of the bundle has (a Read call), and a range."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("s")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, record.value)
        total = self.store.get("total") or ""
        self.store.put("total", total + record.value)
        with self.store.range("a", "m") as it:
            keys = ",".join(k for k, _ in it)
        self.context.forward(record.with_value(f"{self.store.get('total')}|{keys}"))


def test_reads_beyond_the_bundle_see_earlier_records_writes() -> None:
    with TopologyTestDriver("proc-read") as driver:
        driver.add_state_store(Stores.key_value_store("s", key="string", value="string"))
        driver.stream("in", key="string", value="string").process(ReadsOtherKeys, stores=["s"]).to("out")
        driver.pipe_input("in", "c", "x")
        driver.pipe_input("in", "b", "y")
        driver.pipe_input("in", "z", "w")
        assert [r.value for r in driver.read_output("out")] == ["x|c", "xy|b,c", "xyw|b,c"]
        assert driver.get_store("s").get("total") == "xyw"


class ForwardThenRaise(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_value(record.value + "!"))
        if record.value == "bad":
            raise ValueError("bad record")
        self.context.forward(record)


def test_a_record_that_raises_keeps_what_it_forwarded_under_log_and_continue() -> None:
    cfg = Config(extra={"processing.exception.handler": "log_and_continue"})
    with TopologyTestDriver("proc-continue", cfg) as driver:
        driver.stream("in", key="string", value="string").process(ForwardThenRaise).to("out")
        driver.pipe_input("in", "k", "ok")
        driver.pipe_input("in", "k", "bad")
        driver.pipe_input("in", "k", "fine")
        assert [r.value for r in driver.read_output("out")] == ["ok!", "ok", "bad!", "fine!", "fine"]


def test_forward_to_an_unknown_child_fails_naming_node_and_children() -> None:
    class Router(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.context = context

        def process(self, record: Record[Any, Any]) -> None:
            self.context.forward(record, child="nowhere")

    with TopologyTestDriver("proc-child") as driver:
        driver.stream("in", key="string", value="string").process(Router, name="router").to("out", name="sink")
        with pytest.raises(ProcessingError, match=re.escape("forward: node router has no child 'nowhere' (children: [sink])")):
            driver.pipe_input("in", "k", "v")


class Upper(FixedKeyProcessor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: FixedKeyRecord[Any, Any]) -> None:
        meta = self.context.record_metadata()
        assert meta is not None
        self.context.forward(record.with_value(f"{record.value.upper()}@{meta.offset}").with_headers([("seen", b"1")]).with_timestamp(record.timestamp + 1))


def test_topology_api_with_a_fixed_key_processor_and_headers() -> None:
    with TopologyTestDriver("proc-topology") as driver:
        (driver.topology()
            .add_source("Source", "in", key="string", value="string")
            .add_processor("Upper", Upper, "Source")
            .add_sink("Sink", "out", "Upper"))
        driver.pipe_input("in", "k", "abc", timestamp=10)
        (r,) = driver.read_output("out")
        assert (r.key, r.value, r.timestamp, r.headers) == ("k", "ABC@0", 11, (("seen", b"1"),))


def test_with_metadata_functions_see_topic_offset_and_set_timestamps() -> None:
    def tag(value: str, meta: RecordMetadata) -> str:
        meta.timestamp += 100
        return f"{meta.topic}:{meta.offset}:{value}"

    with TopologyTestDriver("proc-metadata") as driver:
        driver.stream("in", value="string").map_values(with_metadata(tag, write=True)).to("out")
        driver.pipe_input("in", None, "a", timestamp=1)
        driver.pipe_input("in", None, "b", timestamp=2)
        assert [(r.value, r.timestamp) for r in driver.read_output("out")] == [("in:0:a", 101), ("in:1:b", 102)]


def readme_block(heading: str) -> dict[str, Any]:
    """Runs the first python block under heading of sdk-python/README.md; answers its globals."""
    readme = (REPO / "sdk-python" / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(heading) :]
    m = re.search(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert m, f"sdk-python/README.md: no python block under {heading}"
    scope: dict[str, Any] = {"__name__": "readme"}
    exec(compile(m.group(1), f"README.md {heading}", "exec"), scope)  # noqa: S102 - the README's own code
    return scope


def test_the_readme_processor_example_runs() -> None:
    scope = readme_block("### Processors")
    assert scope["output"] == [("ann", 1, 1_000), ("ann", 1, 61_000), ("bob", 2, 61_000), ("ann", 1, 121_000)]


def test_the_readme_metadata_example_runs() -> None:
    r = readme_block("### Record metadata")["record"]
    assert (r.value, r.timestamp, r.headers) == ("HELLO", 6_000, (("trace", b"t1"), ("source", b"in@0")))


def test_the_readme_suppress_time_limit_example_runs() -> None:
    assert readme_block("#### Suppress until a time limit")["throttled"] == [("ann", "v2", 10_000)]


class AsyncCount(Processor):
    """An async processor: awaited one record at a time, so each sees the writes before it."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")

    async def process(self, record: Record[Any, Any]) -> None:
        import asyncio

        n = self.counts.get(record.key) or 0
        await asyncio.sleep(0)
        self.counts.put(record.key, n + 1)
        self.context.forward(record.with_value(n + 1))


def test_an_async_processor_is_awaited_in_order() -> None:
    with TopologyTestDriver("proc-async") as driver:
        driver.add_state_store(Stores.key_value_store("counts", key="string", value="long"))
        driver.stream("in", key="string", value="string").process(AsyncCount, stores=["counts"], value="long").to("out")
        driver.pipe_records([("in", "a", "x", 1, None), ("in", "a", "y", 2, None), ("in", "b", "z", 3, None)])
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("a", 1), ("a", 2), ("b", 1)]


def test_a_punctuator_that_raises_fails_naming_node_and_time() -> None:
    class Boom(Processor):
        def init(self, context: ProcessorContext) -> None:
            context.schedule(10, PunctuationType.STREAM_TIME, self.boom)

        def process(self, record: Record[Any, Any]) -> None:
            pass

        def boom(self, timestamp: int) -> None:
            raise RuntimeError(f"boom at {timestamp}")

    with TopologyTestDriver("proc-punct-fail") as driver:
        driver.stream("in", key="string", value="string").process(Boom, name="boomer")
        with pytest.raises(ProcessingError, match=re.escape("punctuator of node boomer at stream time 5 failed: RuntimeError: boom at 5")):
            driver.pipe_input("in", "k", "v", timestamp=5)


def test_a_processor_whose_init_raises_fails_its_task_naming_node_and_task() -> None:
    class BadInit(Processor):
        def init(self, context: ProcessorContext) -> None:
            context.get_state_store("missing")

        def process(self, record: Record[Any, Any]) -> None:
            pass

    with TopologyTestDriver("proc-init-fail") as driver:
        driver.stream("in", key="string", value="string").process(BadInit, name="bad")
        with pytest.raises(Exception, match=re.escape("get_state_store: node bad has no access to store 'missing' (its stores: [])")) as info:
            driver.pipe_input("in", "k", "v")
        assert "init of node bad in task 0_0 failed" in str(info.value)


class Dedup(Processor):
    """Drops a record whose key was seen in the last second (a window
    store, one row per key and record time); a value "dump" forwards what
    fetch_all still holds."""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.seen = context.get_state_store("seen")

    def process(self, record: Record[Any, Any]) -> None:
        if record.value == "dump":
            with self.seen.fetch_all(0, 1 << 62) as rows:
                held = [f"{w.key}@{w.start}" for w, _ in rows]
            self.ctx.forward(Record(record.key, ",".join(held), record.timestamp))
            return
        with self.seen.backward_fetch_range(record.key, record.timestamp - 999, record.timestamp) as rows:
            if next(iter(rows), None) is not None:
                return
        self.seen.put(record.key, record.value, record.timestamp)
        self.ctx.forward(record)


def test_a_window_store_dedups_and_retention_expires_windows() -> None:
    with TopologyTestDriver("proc-window-dedup") as driver:
        driver.add_state_store(Stores.window_store("seen", retention=2_000, window_size=1_000, key="string", value="string"))
        driver.stream("in", key="string", value="string").process(Dedup, stores=["seen"]).to("out")
        for key, value, t in [("a", "1", 0), ("a", "2", 500), ("b", "3", 600), ("a", "4", 1_500), ("x", "dump", 1_600),
                              ("b", "5", 5_000), ("c", "6", 100), ("x", "dump", 5_000)]:
            driver.pipe_input("in", key, value, timestamp=t)
        # Observed time 5,000 with retention 2,000: windows starting at or
        # before 3,000 are gone, and a put into one (c at 100) is dropped.
        assert [(r.key, r.value) for r in driver.read_output("out")] == [
            ("a", "1"), ("b", "3"), ("a", "4"), ("x", "a@0,a@1500,b@600"), ("b", "5"), ("c", "6"), ("x", "b@5000"),
        ]


class PriceHistory(Processor):
    """Keeps every price of a key in a versioned store: a value "del"
    deletes the key as of the record's time; any other value is a price put
    at the record's time. Forwards what the store answered, and for a pear
    the apple price of its time (a key the bundle did not bring: a Read)."""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.prices = context.get_state_store("prices")

    @staticmethod
    def show(v: Any) -> str:
        return "none" if v is None else f"{v.value}@{v.timestamp}" + ("" if v.valid_to is None else f"<{v.valid_to}")

    def process(self, record: Record[Any, Any]) -> None:
        k, ts = record.key, record.timestamp
        if record.value == "del":
            out = f"deleted {self.show(self.prices.delete(k, ts))} latest {self.show(self.prices.get(k))}"
        else:
            code = self.prices.put(k, int(record.value), ts)
            out = f"put {code} latest {self.show(self.prices.get(k))} before {self.show(self.prices.get(k, as_of=ts - 1))}"
            if k == "pear":
                out += f" apple {self.show(self.prices.get('apple', as_of=ts))}"
        self.ctx.forward(record.with_value(out))


def test_a_versioned_store_keeps_versions_answers_puts_and_reads_as_of() -> None:
    with TopologyTestDriver("proc-versioned") as driver:
        driver.add_state_store(Stores.versioned_key_value_store("prices", history_retention=1_000, key="string", value="long"))
        driver.stream("in", key="string", value="string").process(PriceHistory, stores=["prices"]).to("out")
        for key, value, t in [("apple", "10", 1_000), ("apple", "12", 3_000), ("apple", "11", 2_000), ("pear", "5", 2_500),
                              ("apple", "9", 100), ("apple", "del", 3_500)]:
            driver.pipe_input("in", key, value, timestamp=t)
        assert [r.value for r in driver.read_output("out")] == [
            "put -1 latest 10@1000 before none",
            "put -1 latest 12@3000 before 10@1000",
            # In the past: valid until 3,000. As of 1,999 (before stream time
            # 3,000 - 1,000) only a latest version would still be found.
            "put 3000 latest 12@3000 before none",
            "put -1 latest 5@2500 before none apple 11@2000",
            # Older than the history retention: not put (PUT_RETURN_CODE_NOT_PUT).
            f"put {PUT_RETURN_CODE_NOT_PUT} latest 12@3000 before none",
            "deleted 12@3000 latest none",
        ]
        # The engine's store holds what the processor was answered; an
        # interactive query answers validTo too.
        prices = driver.get_versioned_store("prices")
        assert prices.get("apple", as_of=2_500) == VersionedRecord(11, 2_000, 3_000)
        assert prices.get("apple") is None
        assert prices.get("apple", as_of=3_200) == VersionedRecord(12, 3_000, 3_500)


def test_a_versioned_store_refuses_plain_store_calls_naming_store_and_node() -> None:
    class Plain(Processor):
        def init(self, context: ProcessorContext) -> None:
            self.prices = context.get_state_store("prices")

        def process(self, record: Record[Any, Any]) -> None:
            self.prices.put(record.key, 1)  # no timestamp: a key-value store's call

    with TopologyTestDriver("proc-versioned-misuse") as driver:
        driver.add_state_store(Stores.versioned_key_value_store("prices", history_retention=1_000, key="string", value="long"))
        driver.stream("in", key="string", value="string").process(Plain, stores=["prices"], name="plain").to("out")
        with pytest.raises(ProcessingError, match=r"(?s)plain.*missing 1 required positional argument: .timestamp."):
            driver.pipe_input("in", "a", "x", timestamp=1)
    with pytest.raises(ValueError, match="history_retention cannot be negative"):
        Stores.versioned_key_value_store("prices", history_retention=-1)


def test_the_readme_versioned_store_example_runs() -> None:
    scope = readme_block("#### A processor's versioned store")
    assert scope["notes"] == ["was None, valid to -1", "was 10, valid to -1", "was 10, valid to 200000", "too late"]
