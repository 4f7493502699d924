"""with_metadata beyond stateless chains: reducers, aggregators,
initializers and joiners read the metadata of the record they are called
for (docs/design/processor.md, "Metadata, opt-in")."""

from __future__ import annotations

import re

import pytest

from datetime import timedelta

from polystreams import JoinWindows, Materialized, RecordMetadata, SessionWindows, TimeWindows, with_metadata
from polystreams.testing import TopologyTestDriver


def test_a_reducer_with_metadata_sums_values_and_offsets() -> None:
    def add(total: int, value: int, meta: RecordMetadata) -> int:
        return total + value + 1000 * meta.offset

    with TopologyTestDriver("meta-reduce", {"statestore.cache.max.bytes": "0"}) as driver:
        driver.stream("in", key="string", value="long").group_by_key().reduce(with_metadata(add)).to_stream().to("out", value="long")
        for v in (1, 2, 3):
            driver.pipe_input("in", "k", v)
        # The first value becomes the aggregate without a call; then 2 + 1000*1, 3 + 1000*2.
        assert [r.value for r in driver.read_output("out")] == [1, 1003, 3006]


def test_an_aggregator_and_its_initializer_read_headers() -> None:
    def zero(meta: RecordMetadata) -> str:
        return f"from@{meta.offset}"

    def tag(key: str, value: str, agg: str, meta: RecordMetadata) -> str:
        trace = dict(meta.headers).get("trace")
        return f"{agg}+{value}[{meta.topic}:{meta.offset}:{meta.timestamp}:{(trace or b'-').decode()}]"

    with TopologyTestDriver("meta-aggregate", {"statestore.cache.max.bytes": "0"}) as driver:
        (
            driver.stream("in", key="string", value="string")
            .group_by_key()
            .aggregate(with_metadata(zero), with_metadata(tag), materialized=Materialized(value="string"))
            .to_stream()
            .to("out")
        )
        driver.pipe_input("in", "k", "a", timestamp=5)
        driver.pipe_input("in", "k", "b", timestamp=6, headers={"trace": b"t1"})
        assert [r.value for r in driver.read_output("out")] == [
            "from@0+a[in:0:5:-]",
            "from@0+a[in:0:5:-]+b[in:1:6:t1]",
        ]


def test_a_stream_table_joiner_reads_the_stream_records_metadata() -> None:
    def join(value: str, price: str | None, meta: RecordMetadata) -> str:
        return f"{value}@{price}#{meta.offset}"

    with TopologyTestDriver("meta-join") as driver:
        prices = driver.table("prices", key="string", value="string")
        driver.stream("orders", key="string", value="string").join(prices, with_metadata(join)).to("out")
        driver.pipe_input("prices", "p", "10")
        driver.pipe_input("orders", "p", "o1")
        driver.pipe_input("orders", "p", "o2")
        assert [r.value for r in driver.read_output("out")] == ["o1@10#0", "o2@10#1"]


def test_a_stream_stream_joiner_reads_the_processed_records_context_not_the_outputs_timestamp() -> None:
    # Kafka Streams' KStreamKStreamJoin calls the joiner while processing the
    # record that found the match: its topic, offset and timestamp, though
    # the output is stamped with the larger of both timestamps.
    def join(left: str, right: str, meta: RecordMetadata) -> str:
        return f"{left}+{right} by {meta.topic}:{meta.offset}@{meta.timestamp}"

    with TopologyTestDriver("meta-ss-join") as driver:
        right = driver.stream("right", key="string", value="string")
        window = JoinWindows.of_time_difference_with_no_grace(timedelta(milliseconds=100))
        driver.stream("left", key="string", value="string").join(right, with_metadata(join), window).to("out")
        driver.pipe_input("right", "k", "r", timestamp=10)
        driver.pipe_input("left", "k", "l", timestamp=5)
        assert [(r.value, r.timestamp) for r in driver.read_output("out")] == [("l+r by left:0@5", 10)]


def test_a_reducer_that_would_write_metadata_is_refused_naming_token_and_function() -> None:
    with TopologyTestDriver("meta-reduce-write") as driver:
        grouped = driver.stream("in", key="string", value="long").group_by_key()
        with pytest.raises(Exception, match=re.compile(r"reducer, token \d+ \(.*add_write.*\), was registered with METADATA_WRITE")):
            grouped.reduce(with_metadata(add_write, write=True))


def add_write(total: int, value: int, meta: RecordMetadata) -> int:
    return total + value


def test_a_group_by_selector_and_a_table_filter_read_metadata() -> None:
    with TopologyTestDriver("meta-group-by", {"statestore.cache.max.bytes": "0"}) as driver:
        by_parity = with_metadata(lambda k, v, m: f"{v}{m.offset % 2}")
        driver.stream("in", key="string", value="string").group_by(by_parity, key="string").count().to_stream().to("out", value="long")
        for v in "aaa":
            driver.pipe_input("in", "k", v)
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("a0", 1), ("a1", 1), ("a0", 2)]
    with TopologyTestDriver("meta-table-filter", {"statestore.cache.max.bytes": "0"}) as driver:
        driver.table("t", key="string", value="string").filter(with_metadata(lambda k, v, m: m.offset != 1)).to_stream().to("out")
        for v in "abc":
            driver.pipe_input("t", "k" + v, v)
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("ka", "a"), ("kb", None), ("kc", "c")]


def test_a_global_join_key_mapper_and_joiner_read_the_stream_records_metadata() -> None:
    with TopologyTestDriver("meta-global") as driver:
        products = driver.global_table("products", key="string", value="string")
        by_header = with_metadata(lambda k, v, m: dict(m.headers).get("product", b"none").decode())
        join = with_metadata(lambda v, p, m: f"{v}:{p}@{m.offset}")
        driver.stream("orders", key="string", value="string").join(products, by_header, join).to("out")
        driver.pipe_input("products", "p1", "pen")
        driver.pipe_input("orders", "o", "x", headers={"product": b"p1"})
        assert [r.value for r in driver.read_output("out")] == ["x:pen@0"]


def test_a_foreign_key_extractor_and_joiner_read_metadata() -> None:
    with TopologyTestDriver("meta-fk", {"statestore.cache.max.bytes": "0"}) as driver:
        customers = driver.table("customers", key="string", value="string")
        orders = driver.table("orders", key="string", value="string")
        customer_of = with_metadata(lambda v, m: dict(m.headers)["customer"].decode())
        enrich = with_metadata(lambda order, customer, m: f"{order} for {customer} ({m.topic})")
        orders.foreign_key_join(customers, customer_of, enrich).to_stream().to("out")
        driver.pipe_input("customers", "c1", "ann")
        driver.pipe_input("orders", "o1", "pen", headers={"customer": b"c1"})
        # As in Kafka Streams, the joiner runs for the subscription response
        # (ResponseJoinProcessorSupplier): its record context is that topic's.
        ((key, value),) = [(r.key, r.value) for r in driver.read_output("out")]
        assert key == "o1"
        assert re.fullmatch(r"pen for ann \(meta-fk-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-\d+-topic\)", value), value


def test_a_table_group_by_mapper_reads_the_updates_metadata() -> None:
    with TopologyTestDriver("meta-table-group-by", {"statestore.cache.max.bytes": "0"}) as driver:
        by_parity = with_metadata(lambda k, v, m: (f"g{m.offset % 2}", v))
        table = driver.table("t", key="string", value="long")
        grouped = table.group_by(by_parity, key="string", value="long")
        grouped.reduce(lambda a, v: a + v, lambda a, v: a - v).to_stream().to("out", value="long")
        driver.pipe_input("t", "a", 1)
        driver.pipe_input("t", "b", 2)
        driver.pipe_input("t", "a", 5)  # offset 2: old and new value both map to g0
        assert [(r.key, r.value) for r in driver.read_output("out")] == [("g0", 1), ("g1", 2), ("g0", 5)]


def test_windowed_reducers_read_metadata_in_hopping_and_session_windows() -> None:
    # Hopping windows send a record once for all its windows (value refs);
    # session windows come as fold programs: both give each call its record's metadata.
    def add(total: str, value: str, meta: RecordMetadata) -> str:
        return f"{total}+{value}@{meta.offset}"

    with TopologyTestDriver("meta-hopping", {"statestore.cache.max.bytes": "0"}) as driver:
        grouped = driver.stream("in", key="string", value="string").group_by_key()
        hopping = TimeWindows.of_size_with_no_grace(timedelta(milliseconds=10)).advance_by(timedelta(milliseconds=5))
        grouped.windowed_by(hopping).reduce(with_metadata(add)).to_stream().map(lambda k, v: (f"{k.key}@{k.start}", v), key="string").to("out")
        driver.pipe_input("in", "k", "a", timestamp=7)
        driver.pipe_input("in", "k", "b", timestamp=8)
        assert sorted((r.key, r.value) for r in driver.read_output("out")) == [
            ("k@0", "a"), ("k@0", "a+b@1"), ("k@5", "a"), ("k@5", "a+b@1")
        ]
    with TopologyTestDriver("meta-session", {"statestore.cache.max.bytes": "0"}) as driver:
        grouped = driver.stream("in", key="string", value="string").group_by_key()
        sessions = SessionWindows.of_inactivity_gap_with_no_grace(timedelta(milliseconds=10))
        grouped.windowed_by(sessions).reduce(with_metadata(add)).to_stream().filter(lambda k, v: v is not None).map(lambda k, v: (k.key, v), key="string").to("out")
        driver.pipe_input("in", "k", "a", timestamp=1)
        driver.pipe_input("in", "k", "b", timestamp=5)
        assert [r.value for r in driver.read_output("out")] == ["a", "a+b@1"]


def test_async_joiners_and_aggregators_read_metadata() -> None:
    async def join(value: str, price: str | None, meta: RecordMetadata) -> str:
        return f"{value}@{price}#{meta.offset}"

    async def count(key: str, value: str, agg: str, meta: RecordMetadata) -> str:
        return f"{agg}{value}{meta.offset}"

    with TopologyTestDriver("meta-async", {"statestore.cache.max.bytes": "0"}) as driver:
        prices = driver.table("prices", key="string", value="string")
        orders = driver.stream("orders", key="string", value="string")
        orders.join(prices, with_metadata(join)).to("joined")
        orders.group_by_key().aggregate(lambda: "", with_metadata(count), materialized=Materialized(value="string")).to_stream().to("counted")
        driver.pipe_input("prices", "p", "10")
        driver.pipe_input("orders", "p", "o")
        driver.pipe_input("orders", "p", "q")
        assert [r.value for r in driver.read_output("joined")] == ["o@10#0", "q@10#1"]
        assert [r.value for r in driver.read_output("counted")] == ["o0", "o0q1"]
