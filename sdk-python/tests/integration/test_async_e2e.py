"""Async host functions against the real engine and its embedded broker,
checked with an independent Kafka client (confluent-kafka): results in
record order when later records finish first, a bundle's awaitables run
together, and a raising awaitable fails its record under each error
policy as a raising function does."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from test_engine_e2e import Runner, config, create_topic, produce

from polystreams import App, Config, ProcessingError

# The functions' own bound on waiting for each other: when their records are
# not awaited together, they fail (and run() raises) instead of hanging.
BOUND_S = 20.0


def read_values(brokers: str, topic: str, n: int, runner: Runner | None, timeout: float = 60) -> list[str]:
    """The first n values of partition 0 of topic, in offset order (failing
    at once when runner's app.run() failed)."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "verify-" + topic, "enable.auto.commit": False})
    got: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while len(got) < n and time.monotonic() < deadline:
            assert runner is None or runner.error is None, f"app.run() failed: {runner.error!r}"
            for m in c.consume(1000, timeout=0.5):
                if not m.error():
                    got.append(m.value().decode())
    finally:
        c.close()
    return got


def test_results_keep_record_order_while_a_bundles_awaitables_run_together(tmp_path: object, app_id: str) -> None:
    n = 40
    started = 0
    everyone: asyncio.Event | None = None
    done: dict[int, asyncio.Event] = {}
    finished: list[int] = []

    async def slow(v: str) -> str:
        nonlocal started, everyone
        i = int(v)
        if everyone is None:
            everyone = asyncio.Event()
        started += 1
        if started == n:
            everyone.set()
        # Set only once all n records have started: sequential awaiting
        # would time out here and fail the record (and run()).
        await asyncio.wait_for(everyone.wait(), BOUND_S)
        # Later records finish first: each waits for the next one's end (an
        # order of events, not of timers, so a loaded machine cannot swap it).
        if i + 1 < n:
            await asyncio.wait_for(done.setdefault(i + 1, asyncio.Event()).wait(), BOUND_S)
        finished.append(i)
        done.setdefault(i, asyncio.Event()).set()
        return f"{v}!"

    with App(app_id, config(tmp_path)) as app:  # type: ignore[arg-type]
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        produce(app.brokers, "in", [str(i) for i in range(n)], partition=0)  # before start: one bundle
        app.stream("in", value="string").map_values(slow).to("out")
        runner = Runner(app)
        got = read_values(app.brokers, "out", n, runner)
        app.stop()
        runner.join(60)
    assert runner.error is None, repr(runner.error)
    assert got == [f"{i}!" for i in range(n)]
    assert finished == list(reversed(range(n)))


@pytest.mark.parametrize("policy", ["log_and_continue", "dead_letter", "fail"])
def test_a_raising_awaitable_fails_its_record_under_the_policy(tmp_path: object, app_id: str, policy: str) -> None:
    poison = {"7", "13"}

    async def score(v: str) -> str:
        await asyncio.sleep(0)
        if v in poison:
            raise ValueError(f"cannot score {v}")
        return f"s{v}"

    extra = {"processing.exception.handler": policy}
    if policy == "dead_letter":
        extra["errors.deadletterqueue.topic.name"] = "scores-dlq"
    cfg = Config(state_dir=config(tmp_path).state_dir, extra=extra)  # type: ignore[arg-type]
    values = [str(i) for i in range(20)]
    with App(app_id, cfg) as app:
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        if policy == "dead_letter":
            create_topic(app.brokers, "scores-dlq", 1)
        produce(app.brokers, "in", values, partition=0)
        app.stream("in", value="string").map_values(score).to("out")
        runner = Runner(app)
        if policy == "fail":
            runner.join(90)
            e = runner.error
            assert isinstance(e, ProcessingError), repr(e)
            assert (e.topic, e.partition, e.offset, e.node) == ("in", 0, 7, "KSTREAM-MAPVALUES-0000000001")
            assert "ValueError: cannot score 7" in e.message
            return
        want = [f"s{v}" for v in values if v not in poison]
        got = read_values(app.brokers, "out", len(want), runner)
        dead = read_values(app.brokers, "scores-dlq", len(poison), runner) if policy == "dead_letter" else []
        app.stop()
        runner.join(60)
    assert runner.error is None, repr(runner.error)
    assert got == want
    if policy == "dead_letter":
        assert dead == ["7", "13"]  # the original records


def test_async_functions_of_every_kind_through_the_test_driver() -> None:
    """Async mappers, predicates, key selectors, initializer, aggregator and
    joiner, through the real engine (TopologyTestDriver), equal to what the
    same synchronous functions give."""
    from polystreams import Materialized
    from polystreams.testing import TopologyTestDriver

    async def split(line: str) -> list[str]:
        await asyncio.sleep(0)
        return line.split()

    async def long_enough(key: object, word: str) -> bool:
        await asyncio.sleep(0)
        return len(word) > 1

    async def by_word(key: object, word: str) -> str:
        return word

    async def zero() -> int:
        return 0

    async def add(word: str, value: str, total: int) -> int:
        await asyncio.sleep(0)
        return total + 1

    async def label(count: int, note: str | None) -> str:
        await asyncio.sleep(0)
        return f"{count}:{note or '-'}"

    with TopologyTestDriver("async-kinds", Config(statestore_cache_max_bytes=0)) as driver:
        notes = driver.table("notes", key="string", value="string")
        (driver.stream("lines", value="string")
            .flat_map_values(split)
            .filter(long_enough)
            .group_by(by_word, key="string")
            .aggregate(zero, add, materialized=Materialized("counts", value="long"))
            .to_stream()
            .left_join(notes, label, value="string")
            .to("labelled"))
        driver.pipe_input("notes", "be", "verb")
        driver.pipe_input("lines", None, "to be or not to be a")
        got = [(r.key, r.value) for r in driver.read_output("labelled")]
        assert got == [("to", "1:-"), ("be", "1:verb"), ("or", "1:-"), ("not", "1:-"), ("to", "2:-"), ("be", "2:verb")]
        assert driver.get_store("counts").get("to") == 2


def test_app_run_from_inside_a_coroutine(tmp_path: object, app_id: str) -> None:
    """app.run() called by a coroutine (its thread runs an event loop): the
    SDK's loop runs in a thread of its own and the functions are awaited."""
    import threading

    loops: set[int] = set()

    async def tag(v: str) -> str:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0)
        return f"<{v}>"

    with App(app_id, config(tmp_path)) as app:  # type: ignore[arg-type]
        assert app.brokers
        create_topic(app.brokers, "in", 1)
        create_topic(app.brokers, "out", 1)
        produce(app.brokers, "in", ["a", "b", "c"], partition=0)
        app.stream("in", value="string").map_values(tag).to("out")
        errors: list[BaseException] = []
        outer: list[int] = []

        async def main() -> None:
            outer.append(id(asyncio.get_running_loop()))
            app.run()

        def serve() -> None:
            try:
                asyncio.run(main())
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        got = read_values(app.brokers, "out", 3, None)
        app.stop()
        t.join(60)
    assert not t.is_alive() and not errors, errors
    assert got == ["<a>", "<b>", "<c>"]
    assert loops and not loops & set(outer)  # the SDK's own loop, not the caller's
