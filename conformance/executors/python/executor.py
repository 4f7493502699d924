"""The conformance executor for Python: builds one case with the polystreams
SDK's public API, runs it, and reports to the runner as JSON lines on stdout.

Usage: executor.py SPEC.json  (the runner writes the spec: the case, the
engine's URL, the application.id, the topic prefix and the configuration).
Events: built (with describe), build_error (step, code, message), started,
failed (code, message, topic, partition, offset, node), dropped_records
(count, when told to stop a started app), stopped. It stops its
application when stdin says "stop" or closes. It asserts nothing: the
runner owns every assertion.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from polystreams import (
    App,
    BufferConfig,
    CogroupedKStream,
    Config,
    EmitStrategy,
    JoinWindows,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    Materialized,
    PolystreamsError,
    ProcessingError,
    Processor,
    ProcessorContext,
    ValueTransformerWithKey,
    PunctuationType,
    Record,
    SessionWindowedCogroupedKStream,
    SessionWindowedKStream,
    SessionWindows,
    SlidingWindows,
    StoreBuilder,
    Stores,
    Suppressed,
    TimeWindowedCogroupedKStream,
    TimeWindowedKStream,
    TimeWindows,
)
from polystreams.serde import SerdeName

Fn = Callable[..., Any]


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


# The catalogue (conformance/README.md defines each function; the runner's
# catalogue.go is the reference). Functions conformance/catalogue.json
# defines by an expr are built from it; the others are written here.

CATALOGUE: dict[str, Any] = json.loads((Path(__file__).resolve().parents[2] / "catalogue.json").read_text())["functions"]


def _eval(expr: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
    """A catalogue expr's value: var, const, list, not_null."""
    ((op, x),) = expr.items()
    if op == "var":
        return env[x]
    if op == "const":
        return copy.deepcopy(x)
    if op == "list":
        return [_eval(e, env) for e in x]
    if op == "not_null":
        return _eval(x, env) is not None
    raise ValueError(f"catalogue expr: unknown operation {op!r}")


def _from_expr(expr: Mapping[str, Any], role: str) -> Fn:
    """The function an expr defines, called as the role calls it."""
    if role in ("mapper", "flat"):
        return lambda v: _eval(expr, {"value": v})
    if role in ("predicate", "key", "mapper_with_key", "flat_with_key"):
        return lambda k, v: _eval(expr, {"key": k, "value": v})
    if role == "flat_map":
        return lambda k, v: [tuple(p) for p in _eval(expr, {"key": k, "value": v})]
    if role == "map":
        return lambda k, v: tuple(_eval(expr, {"key": k, "value": v}))
    if role == "action":
        return lambda k, v: None
    if role == "init":
        return lambda: _eval(expr, {})
    raise ValueError(f"catalogue expr: no role {role!r}")


def _s(fn: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{fn}: want a string, got {type(v).__name__}")
    return v


def _map_str(fn: str, v: Any, f: Callable[[str], Any]) -> Any:
    return None if v is None else f(_s(fn, v))


def _field(fn: str, v: Any, name: str) -> Any:
    if not isinstance(v, dict):
        raise TypeError(f"{fn}: want a JSON object, got {type(v).__name__}")
    return v.get(name)


def _field_timestamp(fn: str, v: Any, name: str, fallback: int) -> int:
    """The JSON object value's integer field, or fallback for a null value
    or a missing or null field."""
    f = None if v is None else _field(fn, v, name)
    if f is None:
        return fallback
    if isinstance(f, bool) or not isinstance(f, int):
        raise TypeError(f"{fn}: want an integer field {name}, got {type(f).__name__}")
    return f


def _words(v: Any) -> list[str]:
    return _s("split_words", v).split()


def _first_word(v: Any) -> Any:
    words = _s("first_word_key", v).split()
    return words[0] if words else None


def _is_even(v: Any) -> bool:
    if v is None:
        return False
    if not isinstance(v, int):
        raise TypeError(f"is_even: want an integer, got {type(v).__name__}")
    return v % 2 == 0


def _to_text(v: Any) -> Any:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    raise TypeError(f"to_text: want a string or an integer, got {type(v).__name__}")


def _reverse_bytes(v: Any) -> bytes:
    if not isinstance(v, bytes):
        raise TypeError(f"reverse_bytes: want bytes, got {type(v).__name__}")
    return v[::-1]


def _concat(sep: str, agg: Any, v: Any, aggregator: bool) -> str:
    a, b = _s("concat", agg), _s("concat", v)
    if aggregator and a == "":
        return b
    return a + sep + b


def _longer(agg: Any, v: Any) -> str:
    a, b = _s("longer", agg), _s("longer", v)
    return b if len(b) > len(a) else a


def _append(v: Any, agg: Any) -> list[Any]:
    if not isinstance(agg, list):
        raise TypeError(f"append: want a list aggregate, got {type(agg).__name__}")
    return [*agg, v]


class ConformanceError(Exception):
    """What raise_error and raise_on raise."""


def _raise_error(v: Any) -> None:
    raise ConformanceError(f"conformance: raise_error on value {json.dumps(v, sort_keys=True, separators=(',', ':'), default=str)}")


def _raise_on(arg: str, v: Any) -> None:
    if isinstance(v, str) and v == arg:
        raise ConformanceError(f"conformance: raise_on {v}")


def joiner_of(step: Mapping[str, Any]) -> Any:
    """The step's joiner: its built-in (builtin_joiner), else fn."""
    if "builtin_joiner" in step:
        return step["builtin_joiner"]
    return function(step["fn"], "joiner")


def function(ref: Any, role: str) -> Fn:
    """The native function a catalogue reference names, for a role: mapper,
    flat, predicate, key, map, action, reducer, init, aggregator, merger,
    joiner."""
    name, arg = (ref, None) if isinstance(ref, str) else (ref["name"], ref.get("arg"))
    a = "" if arg is None else str(arg)
    expr = CATALOGUE.get(name, {}).get("expr")
    if expr is not None:
        return _from_expr(expr, role)
    if name in ("raise_error", "raise_on"):
        def check(v: Any) -> None:
            if name == "raise_error":
                _raise_error(v)
            _raise_on(a, v)

        def through(*args: Any) -> Any:
            # Called as the role calls: the value is the last argument but for
            # the aggregator, whose value comes second.
            v = args[1] if role == "aggregator" else args[-1]
            check(v)
            if role in ("flat", "flat_with_key"):
                return [v]
            if role == "flat_map":
                return [(args[0], v)]
            if role == "predicate":
                return True
            if role == "key":
                return args[0]
            if role == "map":
                return (args[0], v)
            if role == "action":
                return None
            return v  # mapper, reducer, aggregator

        return through
    table: dict[str, Fn] = {
        "upper": lambda v: _map_str("upper", v, str.upper),
        "lower": lambda v: _map_str("lower", v, str.lower),
        "length": lambda v: len(_s("length", v)),
        "prefix": lambda v: _map_str("prefix", v, lambda s: a + s),
        "get_field": lambda v: _field("get_field", v, a),
        "wrap_field": lambda v: {a: v},
        "twice": lambda v: v + v,
        "to_text": _to_text,
        "reverse_bytes": _reverse_bytes,
        "split_words": _words,
        "is_even": lambda k, v: _is_even(v),
        "is_long_word": lambda k, v: v is not None and len(_s("is_long_word", v)) >= 5,
        "value_contains": lambda k, v: v is not None and a in _s("value_contains", v),
        "key_starts_with": lambda k, v: k is not None and _s("key_starts_with", k).startswith(a),
        "first_word_key": lambda k, v: _first_word(v),
        "key_upper": lambda k, v: _map_str("key_upper", k, str.upper),
        "field_key": lambda k, v: _field("field_key", v, a),
        "first_letter": lambda k, v: _s("first_letter", v)[0] if v else None,
        "upper_both": lambda k, v: (_map_str("upper_both", k, str.upper), _map_str("upper_both", v, str.upper)),
        "region_of": lambda k, v: (_field("region_of", v, "region"), v),
        "region_or_none": lambda k, v: None if _field("region_or_none", v, "region") is None else (v["region"], v),
        "region_amount": lambda k, v: (_field("region_amount", v, "region"), _field("region_amount", v, "amount")),
        "longer": _longer,
        "count_agg": lambda k, v, agg: agg + 1,
        "sum_field": lambda k, v, agg: agg + _field("sum_field", v, a),
        "subtract_field": lambda k, v, agg: agg - _field("subtract_field", v, a),
        "append": lambda k, v, agg: _append(v, agg),
        "field_timestamp": lambda k, v, meta, pt: _field_timestamp("field_timestamp", v, a, meta.timestamp),
        "field_or_partition_time": lambda k, v, meta, pt: _field_timestamp("field_or_partition_time", v, a, pt),
    }
    folds: dict[str, tuple[Fn, Fn]] = {  # name -> (reducer, aggregator)
        "add": (lambda agg, v: agg + v, lambda k, v, agg: agg + v),
        "subtract": (lambda agg, v: agg - v, lambda k, v, agg: agg - v),
        "concat": (lambda agg, v: _concat(a, agg, v, False), lambda k, v, agg: _concat(a, agg, v, True)),
    }
    if name == "concat" and role == "joiner":  # a left or outer join's missing value is the text null
        return lambda v, other: _concat(a, "null" if v is None else v, "null" if other is None else other, False)
    if name == "add" and role == "merger":
        return lambda k, a1, a2: a1 + a2
    if name in folds:
        return folds[name][0 if role == "reducer" else 1]
    return table[name]


# The processor catalogue (docs/design/host-vectors.md, "Processors"): each
# name, with its argument (a string) and the one store it uses (if any),
# makes a processor class.


class _CountPerKey(Processor):
    store_name = ""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.ctx.forward(record.with_value(n))


class _ForwardTo(Processor):
    child = ""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record, child=self.child)


class _Restamp(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record.with_timestamp(record.timestamp + 1000).with_headers([*record.headers, ("seen", b"1")]))


class _SweepEvery(Processor):
    store_name = ""
    interval = 0
    punctuation = PunctuationType.STREAM_TIME

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.store = context.get_state_store(self.store_name)
        context.schedule(self.interval, self.punctuation, self.sweep)

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)

    def sweep(self, timestamp: int) -> None:
        with self.store.all() as entries:
            for key, value in list(entries):
                self.ctx.forward(Record(key, value, timestamp))
                self.store.delete(key)


class _TickEvery(Processor):
    interval = 0

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        context.schedule(self.interval, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def process(self, record: Record[Any, Any]) -> None:
        pass

    def tick(self, timestamp: int) -> None:
        self.ctx.forward(Record("tick", timestamp, timestamp))


class _ForwardThenFail(Processor):
    value = ""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context

    def process(self, record: Record[Any, Any]) -> None:
        self.ctx.forward(record)
        if record.value == self.value:
            raise ConformanceError(f"forward_then_fail {self.value}")


class _VersionedHistory(Processor):
    """versioned_history: a record whose value is "delete" deletes its key as
    of its timestamp and forwards "delete <deleted> latest <get(key)>"; any
    other puts its value and forwards "put <put's answer> latest <get(key)>
    asof <get(key, ts - 1)>" (a version: value@timestamp, then <validTo
    when it has one; none: null)."""

    store_name = ""

    def init(self, context: ProcessorContext) -> None:
        self.ctx = context
        self.store = context.get_state_store(self.store_name)

    @staticmethod
    def show(v: Any) -> str:
        if v is None:
            return "null"
        s = f"{v.value}@{v.timestamp}"
        return s if v.valid_to is None else f"{s}<{v.valid_to}"

    def process(self, record: Record[Any, Any]) -> None:
        k, ts = record.key, record.timestamp
        if record.value == "delete":
            d = self.show(self.store.delete(k, ts))
            out = f"delete {d} latest {self.show(self.store.get(k))}"
        else:
            code = self.store.put(k, record.value, ts)
            out = f"put {code} latest {self.show(self.store.get(k))} asof {self.show(self.store.get(k, as_of=ts - 1))}"
        self.ctx.forward(record.with_value(out))


# The transformer catalogue (conformance/README.md, "Transformers"):
# KTable.transform_values' transformers, after KTableTransformValuesTest's.


class _Transformer(ValueTransformerWithKey):
    kind = ""
    arg = ""
    store_name = ""

    def init(self, context: ProcessorContext) -> None:
        self.calls = 0
        self.store = context.get_state_store(self.store_name) if self.store_name else None

    def transform(self, key: Any, value: Any) -> Any:
        if self.kind == "key_arrow_value":
            return f"{key}->{'null' if value is None else value}!"
        if self.kind == "count_calls":
            self.calls += 1
            return self.calls
        if self.kind == "value_length":
            return None if value is None else len(str(value))
        if self.kind == "count_per_key":
            if self.store is None:
                raise ConformanceError("count_per_key needs a store")
            n = (self.store.get(key) or 0) + 1
            self.store.put(key, n)
            return n
        if self.kind == "fail_on":
            if str(value) == self.arg:
                raise ConformanceError(f"fail_on {self.arg}")
            return value
        raise ConformanceError(f"transformer {self.kind!r} is not in the transformer catalogue")


def transformer(ref: Any, stores: list[str] | None = None) -> type[ValueTransformerWithKey]:
    """The transformer class a catalogue reference names."""
    name, arg = (ref, None) if isinstance(ref, str) else (ref["name"], ref.get("arg"))
    if name not in ("key_arrow_value", "count_calls", "value_length", "count_per_key", "fail_on"):
        raise ConformanceError(f"transformer {name!r} is not in the transformer catalogue")
    return type(name, (_Transformer,), {"kind": name, "arg": "" if arg is None else str(arg), "store_name": (stores or [""])[0]})


def processor(ref: Any, stores: list[str] | None = None) -> type[Processor]:
    """The processor class a catalogue reference names; ``stores`` are the
    stores its node declares (the first is the one it uses)."""
    name, arg = (ref, None) if isinstance(ref, str) else (ref["name"], ref.get("arg"))
    a = "" if arg is None else str(arg)
    store = (stores or [""])[0]
    if name == "count_per_key":
        return type("count_per_key", (_CountPerKey,), {"store_name": store})
    if name == "forward_to":
        return type("forward_to", (_ForwardTo,), {"child": a})
    if name == "restamp":
        return _Restamp
    if name == "sweep_every":
        return type("sweep_every", (_SweepEvery,), {"store_name": store, "interval": int(a)})
    if name == "sweep_wall_clock":
        return type(
            "sweep_wall_clock",
            (_SweepEvery,),
            {"store_name": store, "interval": int(a), "punctuation": PunctuationType.WALL_CLOCK_TIME},
        )
    if name == "tick_every":
        return type("tick_every", (_TickEvery,), {"interval": int(a)})
    if name == "forward_then_fail":
        return type("forward_then_fail", (_ForwardThenFail,), {"value": a})
    if name == "versioned_history":
        return type("versioned_history", (_VersionedHistory,), {"store_name": store})
    raise ValueError(f"catalogue: no processor {name!r}")


def store_builder(store: Mapping[str, Any]) -> StoreBuilder:
    """An add_state_store step's store: name and serdes (a key-value store;
    type, window retention and size, logging and caching when given)."""
    t, name = store.get("type", "key_value"), store["name"]
    key, value = serde(store, "key"), serde(store, "value")
    if store.get("versioned") is not None:
        v = store["versioned"]
        b = Stores.versioned_key_value_store(
            name, v.get("history_retention_ms", 0), segment_interval=v.get("segment_interval_ms") or None, key=key, value=value
        )
    elif t == "window":
        b = Stores.window_store(
            name, retention=store["retention_ms"], window_size=store["window_size_ms"],
            retain_duplicates=store.get("retain_duplicates", False), key=key, value=value,
        )
    elif t == "timestamped_key_value":
        b = Stores.timestamped_key_value_store(name, key=key, value=value)
    else:
        b = Stores.key_value_store(name, key=key, value=value)
    if store.get("logging") is False:
        b = b.with_logging_disabled()
    if store.get("caching"):
        b = b.with_caching_enabled()
    return b


def materialized(step: Mapping[str, Any]) -> Materialized | None:
    m = step.get("materialized")
    if m is None:
        return None
    v = m.get("versioned")
    return Materialized(
        m.get("store", ""),
        key=m.get("key"),
        value=m.get("value"),
        retention=m.get("retention_ms"),
        versioned=None if v is None else v["history_retention_ms"],
        segment_interval=None if v is None else v.get("segment_interval_ms"),
    )


def windows(w: Mapping[str, Any]) -> TimeWindows | SlidingWindows | SessionWindows:
    """windowed_by's windows, with the factory Kafka Streams users call:
    ...with_no_grace when the case gives no grace."""
    grace = w.get("grace_ms")
    if w["type"] == "time":
        t = (
            TimeWindows.of_size_with_no_grace(w["size_ms"])
            if grace is None
            else TimeWindows.of_size_and_grace(w["size_ms"], grace)
        )
        return t if "advance_ms" not in w else t.advance_by(w["advance_ms"])
    if w["type"] == "sliding":
        if grace is None:
            return SlidingWindows.of_time_difference_with_no_grace(w["time_difference_ms"])
        return SlidingWindows.of_time_difference_and_grace(w["time_difference_ms"], grace)
    if grace is None:
        return SessionWindows.of_inactivity_gap_with_no_grace(w["inactivity_gap_ms"])
    return SessionWindows.of_inactivity_gap_and_grace(w["inactivity_gap_ms"], grace)


def serde(step: Mapping[str, Any], field: str) -> SerdeName | None:
    v: SerdeName | None = step.get(field)
    return v


def split(node: KStream, step: Mapping[str, Any]) -> dict[str, KStream]:
    """KStream.split: the branches in order, then the default branch or none."""
    b = node.split(name=step.get("name"))
    for br in step["branches"]:
        b = b.branch(function(br["fn"], "predicate"), name=br.get("name"))
    if step.get("default_branch"):
        return b.default_branch(name=step.get("default_name"))
    return b.no_default_branch()


def topic_by_key(prefix: str) -> Callable[[Any, Any, Any], str]:
    """A TopicNameExtractor naming the topic prefix + the record's key;
    describe() prints its name, topic_by_key, as the Java executor's."""

    def topic_by_key(k: Any, v: Any, rc: Any) -> str:
        return prefix + str(k)

    topic_by_key.__qualname__ = "topic_by_key"
    return topic_by_key


def extractor(step: Mapping[str, Any]) -> Any:
    """A source step's Consumed.withTimestampExtractor: a built-in
    extractor's class name, a catalogue extractor, or None."""
    if "timestamp_extractor_fn" in step:
        return function(step["timestamp_extractor_fn"], "extractor")
    return step.get("timestamp_extractor")


def apply(app: App, step: Mapping[str, Any], node: Any, prefix: str, labels: Mapping[str, Any]) -> Any:
    """Performs one builder step on node (the input); returns the result,
    None for a terminal step, or a split's streams by name. labels are the
    labelled results so far (merge's other stream, a join's table)."""
    op, name = step["op"], step.get("name")
    key, value = serde(step, "key"), serde(step, "value")
    if op == "stream":
        return app.stream(
            [prefix + t for t in step["topics"]],
            key=key,
            value=value,
            name=name,
            timestamp_extractor=extractor(step),
        )
    if op == "table":
        return app.table(
            prefix + step["topic"],
            key=key,
            value=value,
            materialized=materialized(step),
            name=name,
            timestamp_extractor=extractor(step),
        )
    if op == "global_table":
        return app.global_table(prefix + step["topic"], key=key, value=value, materialized=materialized(step), name=name)
    # The Processor API (docs/design/processor.md): stores, and Topology calls.
    if op == "add_state_store":
        app.add_state_store(store_builder(step))
        return None
    if op == "add_source":
        app.topology().add_source(step["name"], *[prefix + t for t in step["topics"]], key=key, value=value)
        return None
    if op == "add_processor":
        stores = step.get("stores", [])
        app.topology().add_processor(step["name"], processor(step["processor"], stores), *step["parents"], stores=stores, key=key, value=value)
        return None
    if op == "add_sink":
        app.topology().add_sink(step["name"], prefix + step["topic"], *step["parents"], key=key, value=value)
        return None
    if isinstance(node, KStream):
        if op == "to":
            if step.get("extract") == "key":
                node.to(topic_by_key(prefix + step["topic"]), key=key, value=value, name=name)
                return None
            node.to(prefix + step["topic"], key=key, value=value, name=name)
            return None
        if op == "group_by_key":
            return node.group_by_key(key=key, value=value, name=name)
        if op == "merge":
            return node.merge(labels[step["other"]], name=name)
        if op == "repartition":
            return node.repartition(name=name, partitions=step.get("partitions", 0))
        if op == "split":
            return split(node, step)
        if op == "to_table":
            return node.to_table(materialized=materialized(step), name=name)
        if op in ("join", "left_join", "outer_join") and "other" in step:
            jw = step["join_windows"]
            w = (
                JoinWindows.of_time_difference_and_grace(jw["time_difference_ms"], jw["grace_ms"])
                if "grace_ms" in jw
                else JoinWindows.of_time_difference_with_no_grace(jw["time_difference_ms"])
            )
            if "before_ms" in jw:
                w = w.before(jw["before_ms"])
            if "after_ms" in jw:
                w = w.after(jw["after_ms"])
            other, joiner, store_name = labels[step["other"]], joiner_of(step), step.get("store_name")
            if op == "join":
                return node.join(other, joiner, w, value=value, name=name, store_name=store_name)
            if op == "left_join":
                return node.left_join(other, joiner, w, value=value, name=name, store_name=store_name)
            return node.outer_join(other, joiner, w, value=value, name=name, store_name=store_name)
        if op in ("join", "left_join") and "key_mapper" in step:
            gjoin = node.join if op == "join" else node.left_join
            return gjoin(labels[step["table"]], function(step["key_mapper"], "key"), joiner_of(step), value=value, name=name)
        if op == "join":
            return node.join(labels[step["table"]], joiner_of(step), value=value, name=name)
        if op == "left_join":
            return node.left_join(labels[step["table"]], joiner_of(step), value=value, name=name)
        if op == "print":
            node.print(label=step.get("label"), name=name)
            return None
        if op in ("process", "process_values"):
            stores = step.get("stores", [])
            proc = processor(step["processor"], stores)
            if op == "process":
                return node.process(proc, stores=stores, key=key, value=value, name=name)
            return node.process_values(proc, stores=stores, value=value, name=name)
        fn = step["fn"]
        if op == "map_values":
            return node.map_values(function(fn, "mapper"), value=value, name=name)
        if op == "flat_map_values":
            return node.flat_map_values(function(fn, "flat"), value=value, name=name)
        if op == "map_values_with_key":
            return node.map_values_with_key(function(fn, "mapper_with_key"), value=value, name=name)
        if op == "flat_map_values_with_key":
            return node.flat_map_values_with_key(function(fn, "flat_with_key"), value=value, name=name)
        if op == "flat_map":
            return node.flat_map(function(fn, "flat_map"), key=key, value=value, name=name)
        if op == "filter":
            return node.filter(function(fn, "predicate"), name=name)
        if op == "filter_not":
            return node.filter_not(function(fn, "predicate"), name=name)
        if op == "map":
            return node.map(function(fn, "map"), key=key, value=value, name=name)
        if op == "select_key":
            return node.select_key(function(fn, "key"), key=key, name=name)
        if op == "group_by":
            return node.group_by(function(fn, "key"), key=key, value=value, name=name)
        if op == "peek":
            return node.peek(function(fn, "action"), name=name)
        if op == "foreach":
            node.foreach(function(fn, "action"), name=name)
            return None
    if isinstance(node, (TimeWindowedKStream, SessionWindowedKStream)):
        if op == "emit_strategy":
            strategy = EmitStrategy.on_window_close() if step["strategy"] == "on_window_close" else EmitStrategy.on_window_update()
            return node.emit_strategy(strategy)
        m = materialized(step)
        if op == "count":
            return node.count(materialized=m, name=name)
        if op == "reduce":
            wreducer: Any = step["builtin"] if "builtin" in step else function(step["fn"], "reducer")
            return node.reduce(wreducer, materialized=m, name=name)
        if op == "aggregate":
            init, agg = function(step["init"], "init"), function(step["fn"], "aggregator")
            if isinstance(node, SessionWindowedKStream):
                # None when the case leaves it out: the SDK or the engine refuses it.
                merger: Any = function(step["merger"], "merger") if "merger" in step else None
                return node.aggregate(init, agg, merger, materialized=m, name=name)
            return node.aggregate(init, agg, materialized=m, name=name)
    if isinstance(node, KGroupedStream) and op == "cogroup":
        return node.cogroup(function(step["fn"], "aggregator"))
    if isinstance(node, CogroupedKStream):
        if op == "cogroup":
            return node.cogroup(labels[step["other"]], function(step["fn"], "aggregator"))
        if op == "windowed_by":
            return node.windowed_by(windows(step["windows"]))
        if op == "aggregate":
            return node.aggregate(function(step["init"], "init"), materialized=materialized(step), name=name)
    if isinstance(node, TimeWindowedCogroupedKStream) and op == "aggregate":
        return node.aggregate(function(step["init"], "init"), materialized=materialized(step), name=name)
    if isinstance(node, SessionWindowedCogroupedKStream) and op == "aggregate":
        # None when the case leaves it out: the SDK or the engine refuses it.
        cg_merger: Any = function(step["merger"], "merger") if "merger" in step else None
        return node.aggregate(function(step["init"], "init"), cg_merger, materialized=materialized(step), name=name)
    if isinstance(node, KGroupedStream):
        if op == "windowed_by":
            return node.windowed_by(windows(step["windows"]))
        m = materialized(step)
        if op == "count":
            return node.count(materialized=m, name=name)
        if op == "reduce":
            reducer: Any = step["builtin"] if "builtin" in step else function(step["fn"], "reducer")
            return node.reduce(reducer, materialized=m, name=name)
        if op == "aggregate":
            return node.aggregate(function(step["init"], "init"), function(step["fn"], "aggregator"), materialized=m, name=name)
    if isinstance(node, KTable):
        if op == "transform_values":
            stores = step.get("stores", [])
            return node.transform_values(transformer(step["transformer"], stores), stores=stores, value=value, materialized=materialized(step), name=name)
        if op in ("foreign_key_join", "left_foreign_key_join"):
            fk_join = node.foreign_key_join if op == "foreign_key_join" else node.left_foreign_key_join
            fk, joiner = function(step["foreign_key"], "mapper"), joiner_of(step)
            return fk_join(labels[step["table"]], fk, joiner, value=value, materialized=materialized(step), name=name)
        if op == "to_stream":
            if "fn" in step:
                return node.to_stream(function(step["fn"], "key"), key=key, name=name)
            return node.to_stream(name=name)
        if op == "suppress":
            bc = step.get("buffer")
            buffer = None
            if bc is not None and ("max_records" in bc or "max_bytes" in bc):
                buffer = BufferConfig(max_records=bc.get("max_records"), max_bytes=bc.get("max_bytes"), when_full=bc.get("when_full", "emit_early"))
            if "time_limit_ms" in step:
                return node.suppress(Suppressed.until_time_limit(step["time_limit_ms"], buffer, name=name))
            return node.suppress(Suppressed.until_window_closes(buffer, name=name))
        m = materialized(step)
        if op == "filter":
            return node.filter(function(step["fn"], "predicate"), materialized=m, name=name)
        if op == "filter_not":
            return node.filter_not(function(step["fn"], "predicate"), materialized=m, name=name)
        if op == "map_values":
            return node.map_values(function(step["fn"], "mapper"), value=value, materialized=m, name=name)
        if op in ("join", "left_join", "outer_join"):
            join = {"join": node.join, "left_join": node.left_join, "outer_join": node.outer_join}[op]
            return join(labels[step["table"]], joiner_of(step), value=value, materialized=m, name=name)
        if op == "group_by":
            return node.group_by(function(step["fn"], "map"), key=key, value=value, name=name)
    if isinstance(node, KGroupedTable):
        m = materialized(step)
        role = "reducer" if op == "reduce" else "aggregator"
        # None when the case leaves it out: the SDK or the engine refuses it.
        sub: Any = function(step["subtractor"], role) if "subtractor" in step else None
        if op == "count":
            return node.count(materialized=m, name=name)
        if op == "reduce":
            adder: Any = step["builtin"] if "builtin" in step else function(step["fn"], "reducer")
            return node.reduce(adder, sub, materialized=m, name=name)
        if op == "aggregate":
            return node.aggregate(function(step["init"], "init"), function(step["fn"], "aggregator"), sub, materialized=m, name=name)
    raise RuntimeError(f"executor: {op} cannot apply to {node!r}")


def code_of(e: BaseException) -> str:
    if isinstance(e, PolystreamsError):
        return e.code
    if isinstance(e, (TypeError, ValueError)):
        return "invalid_argument"  # the SDK's own argument checks
    return "unknown"


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    case, prefix = spec["case"], spec["topic_prefix"]
    props = dict(spec["config"])
    config = Config(
        processing_guarantee=props.pop("processing.guarantee", None),
        commit_interval_ms=int(props.pop("commit.interval.ms")) if "commit.interval.ms" in props else None,
        state_dir=props.pop("state.dir", None),
        extra=props,
    )
    stop = threading.Event()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    with App(spec["application_id"], config, engine=spec["engine"]) as app:
        labels: dict[str, Any] = {}
        prev: Any = None
        for i, step in enumerate(case["topology"]):
            node = labels[step["from"]] if "from" in step else prev
            if "branch" in step:
                node = node[step["branch"]]
            try:
                out = apply(app, step, node, prefix, labels)
            except Exception as e:  # noqa: BLE001 - reported to the runner
                emit("build_error", step=i, code=code_of(e), message=getattr(e, "message", str(e)))
                stop.wait()
                return 0
            if step["op"] == "split":  # reached only through its label
                labels[step["as"]] = out
                continue
            if out is not None:
                prev = out
                if "as" in step:
                    labels[step["as"]] = out
        emit("built", describe=app.describe())
        if not spec["start"]:
            stop.wait()
            return 0
        app.start()
        emit("started", session=app._session)  # test driver mode (runner -driver) pipes into it
        def stop_when_told() -> None:
            stop.wait()
            try:
                emit("dropped_records", count=app.dropped_records())
            except PolystreamsError as e:
                print(f"executor: dropped_records: {e}", file=sys.stderr, flush=True)
            app.stop()

        threading.Thread(target=stop_when_told, daemon=True).start()
        try:
            app.run()
        except ProcessingError as e:
            emit("failed", code=e.code, message=e.message, topic=e.topic or "", partition=e.partition or 0,
                 offset=e.offset or 0, node=e.node or "")
            stop.wait()
            return 0
        emit("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
