"""make bench-peers: polystreams beside what a user would pick instead, on one
broker in one sitting (docs/design/bench-peers.md says how and why).

For each topology, rounds of every arm in turn (A B C ... A B C ..., the
order rotated each round), each run on a fresh output topic with a fresh
application id, against one input topic seeded once. A run is timed from its
consumer group being Stable until the output topic's end offsets last grew
(polled every 100 ms); it is complete when the group has committed the whole
input and the output has been quiet for a while, and its output is then read
back read_committed and checked against what the harness computed while
seeding. CPU and peak RSS are sampled
from /proc over the arm's process tree (for polystreams' SDK arms: the engine
and the host). After the rounds, each arm's end-to-end latency is measured on
map_values at a tenth of its median rate.

It prints Markdown tables and writes every run as JSON (--json). It asserts
nothing about speed: a run that fails verification is reported as failed.

Run by the venv `make bench-peers` builds (.cache/bench-peers/venv), with
confluent-kafka; see `python peers.py -h`.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar
from itertools import pairwise
from pathlib import Path

from arms.common import window_starts

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PARTITIONS = 8
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# --- topologies: what is seeded, what the output must be -------------------

@dataclasses.dataclass
class Topology:
    name: str
    title: str
    input: str  # the seeded topic it reads (one of generate's kinds)
    # "values" (a multiset of values), "latest" (each key's last value) or
    # "windows" (each key and window's last value)
    output: str
    commit_ms: int  # commit interval given to every arm
    window: tuple[int, int] | None = None  # (size ms, advance ms) of a windowed aggregation
    table: str | None = None  # the seeded topic read as a table (a stream-table join)


MINUTE = 60_000

TOPOLOGIES = {t.name: t for t in [
    Topology("map_values", "map_values(upper)", "text", "values", 1000),
    Topology("word_count", "word count: flat_map_values(split) → group_by(word) → count", "lines", "latest", 1000),
    Topology("count", "count by key", "amounts", "latest", 1000),
    Topology("sum_eos", "JSON-sum aggregate, exactly-once", "amounts", "latest", 100),
    Topology("sum_alos", "JSON-sum aggregate, at-least-once", "amounts", "latest", 1000),
    Topology("tumbling_count", "tumbling 60 s window count", "events", "windows", 1000, window=(MINUTE, MINUTE)),
    Topology("hopping_count", "hopping 60 s / 15 s window count", "events", "windows", 1000, window=(MINUTE, MINUTE // 4)),
    Topology("hopping_sum", "hopping 60 s / 15 s aggregate, a host function summing JSON amounts", "events", "windows",
             1000, window=(MINUTE, MINUTE // 4)),
    Topology("join", "stream-table join: events × rates → amount·rate", "events", "values", 1000, table="rates"),
    Topology("join_global", "stream-global-table join: events × rates → amount·rate", "events", "values", 1000,
             table="rates"),
]}

# The events of the windowed topologies and the join carry explicit
# timestamps, so that every arm puts every record in the same windows: the
# i-th of n at origin + i * EVENT_SPAN_MS // n, in order on each partition (no
# record is late, whatever the grace). The origin is an hour boundary an hour
# before seeding, near enough to now for brokers and frameworks that measure
# retention from the wall clock. The rates table's rows are older than every
# event, so a join that processes records in timestamp order sees the whole
# table first.
EVENT_SPAN_MS = 10 * MINUTE


def origin_ms(now_s: float) -> int:
    hour = 60 * MINUTE
    return int(now_s * 1000) // hour * hour - hour


def digest(value: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(value, digest_size=8).digest(), "big")


@dataclasses.dataclass
class Expected:
    """What a topology's output must hold. values: how many records and the
    sum of their digests (a multiset check). latest: each key's final value."""

    records: int = 0
    digest_sum: int = 0
    latest: dict[bytes, int] = dataclasses.field(default_factory=dict)


T = TypeVar("T")
Record = tuple[bytes | None, bytes, int | None]  # key, value, timestamp (None: the producer's clock)


def generate(kind: str, n: int, keys: int, rng: random.Random, origin: int = 0) -> Callable[[int], Record]:
    """The i-th record of a seeded topic of this kind."""
    if kind == "text":
        letters = "abcdefghijklmnopqrstuvwxyz     "
        base = "".join(rng.choice(letters) for _ in range(1 << 16)).encode()
        return lambda i: (None, base[(i * 7919) % ((1 << 16) - 100):][:100], None)
    if kind == "lines":
        vocab = [f"w{j}".encode() for j in range(keys)]
        return lambda i: (None, b" ".join(rng.choice(vocab) for _ in range(8)), None)
    if kind == "amounts":
        return lambda i: (str((i * 7919) % keys).encode(), b'{"amount": %d}' % ((i * 31) % 1000), None)
    if kind == "events":
        return lambda i: (str((i * 7919) % keys).encode(), b'{"amount": %d}' % ((i * 31) % 1000),
                          origin + i * EVENT_SPAN_MS // n)
    if kind == "rates":  # one row per key (n is ignored: the table has keys rows)
        return lambda i: (str(i).encode(), b'{"rate": %d}' % (i % 7 + 1), origin - MINUTE)
    raise ValueError(f"peers: unknown input kind {kind!r}")


def window_key(key: bytes, start: int) -> bytes:
    """How the expectation and the verification name one key's window."""
    return key + b"@%d" % start


def expect(topology: str, records: list[Record], table: list[Record] | None = None) -> Expected:
    e = Expected()
    topo = TOPOLOGIES.get(topology)
    if topology == "map_values":
        e.records = len(records)
        e.digest_sum = sum(digest(v.upper()) for _, v, _ in records) % (1 << 64)
    elif topology == "word_count":
        e.latest = dict(Counter(w for _, v, _ in records for w in v.split()))
    elif topology == "count":
        e.latest = dict(Counter(k for k, _, _ in records if k is not None))
    elif topology in ("sum_eos", "sum_alos"):
        sums: dict[bytes, int] = {}
        for k, v, _ in records:
            assert k is not None
            sums[k] = sums.get(k, 0) + json.loads(v)["amount"]
        e.latest = sums
    elif topo is not None and topo.window is not None:
        size, advance = topo.window
        agg: dict[bytes, int] = {}
        for k, v, ts in records:
            assert k is not None and ts is not None
            add = json.loads(v)["amount"] if topology == "hopping_sum" else 1
            for start in window_starts(ts, size, advance):
                wk = window_key(k, start)
                agg[wk] = agg.get(wk, 0) + add
        e.latest = agg
    elif topology in ("join", "join_global"):
        # Each event joined with its key's rate, written as the decimal
        # amount * rate; every key has a row, so every event has one output.
        rates = {k: json.loads(v)["rate"] for k, v, _ in table or []}
        for k, v, _ in records:
            assert k is not None
            if k in rates:
                e.records += 1
                e.digest_sum += digest(k + b"=" + b"%d" % (json.loads(v)["amount"] * rates[k]))
        e.digest_sum %= 1 << 64
    else:
        raise ValueError(f"peers: no expectation for topology {topology!r}")
    return e


def decode_number(value: bytes, fmt: str) -> int:
    """A count or sum as an arm writes it: "long" is Serdes.Long (8 bytes,
    big-endian), "json" a JSON number."""
    if fmt == "long":
        if len(value) != 8:
            raise ValueError(f"{len(value)}-byte value {value[:16]!r} is not a Serdes.Long")
        return struct.unpack(">q", value)[0]
    return int(json.loads(value))


def windowed(key: bytes, value: bytes, fmt: str) -> tuple[bytes, int]:
    """One windowed aggregation's output record as (window_key, number).
    "long": the key as Kafka Streams' TimeWindowedSerializer writes it (the
    key's bytes, then the window start as 8 bytes big-endian) and a
    Serdes.Long value; "json": the plain key and a JSON object with the
    window's "start" and "value" (Quix Streams' window results)."""
    if fmt == "long":
        if len(key) < 8:
            raise ValueError(f"{len(key)}-byte key {key!r} is not a windowed key (key, 8-byte start)")
        return window_key(key[:-8], struct.unpack(">q", key[-8:])[0]), decode_number(value, fmt)
    obj = json.loads(value)
    if not isinstance(obj, dict) or "start" not in obj or "value" not in obj:
        raise ValueError(f"value {value[:60]!r} is not a JSON window result with start and value")
    return window_key(key, int(obj["start"])), int(obj["value"])


def verify(topology: Topology, want: Expected, got: list[tuple[int, bytes | None, bytes]], fmt: str) -> list[str]:
    """Every way the output (partition, key, value in offset order) differs
    from want; empty when it matches."""
    problems: list[str] = []
    if topology.output == "values":
        if len(got) != want.records:
            problems.append(f"{len(got)} output records, want {want.records}")
        if topology.table is not None:  # a join: the key with the joined value
            d = sum(digest((k or b"") + b"=" + v) for _, k, v in got) % (1 << 64)
            what = "the keys and joined values are not each event's key with amount * rate"
        else:
            d = sum(digest(v) for _, _, v in got) % (1 << 64)
            what = "the output values are not the upper-cased input values"
        if d != want.digest_sum:
            problems.append(what + " (digest differs)")
        return problems
    latest: dict[bytes, int] = {}
    where: dict[bytes, int] = {}
    for partition, key, value in got:
        if key is None:
            problems.append(f"an output record on partition {partition} has no key")
            continue
        if key.startswith(b'"'):
            key = json.loads(key).encode()
        try:
            if topology.output == "windows":
                key, n = windowed(key, value, fmt)
            else:
                n = decode_number(value, fmt)
        except ValueError as e:
            problems.append(f"key {key!r} on partition {partition}: {e}")
            continue
        if where.setdefault(key, partition) != partition:
            problems.append(f"key {key!r} written to partitions {where[key]} and {partition}")
        latest[key] = n
    missing = [k for k in want.latest if k not in latest]
    extra = [k for k in latest if k not in want.latest]
    wrong = [k for k in want.latest if k in latest and latest[k] != want.latest[k]]
    if missing:
        problems.append(f"{len(missing)} of {len(want.latest)} keys missing (e.g. {missing[0]!r})")
    if extra:
        problems.append(f"{len(extra)} unexpected keys (e.g. {extra[0]!r})")
    if wrong:
        k = wrong[0]
        problems.append(f"{len(wrong)} keys with a wrong final value (e.g. {k!r}: {latest[k]}, want {want.latest[k]})")
    return problems[:10]


# --- arms: how each is started ---------------------------------------------

@dataclasses.dataclass
class Arm:
    name: str
    title: str
    # The command lines of the arm's processes, given the run's context;
    # "{engine}" in a later command is the engine URL the first printed.
    commands: Callable[[Context, dict[str, str]], list[list[str]]]
    out: str  # how counts and sums are written: "long" or "json"
    engine: bool = False  # the first command is a polystreams engine that prints its URL
    cwd: Path | None = None  # where the arm's last command runs (the Node host: sdk-node, for tsx)
    # The topologies the arm cannot express, each with the reason; a sitting
    # skips them and says so.
    cannot: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Context:
    python: str  # the venv's interpreter
    polystreams: str  # the engine binary
    goarm: str
    goarm_base: str  # --goarm-base: a Go arm built from another commit (arm ps-go-base), or ""
    go_profiles: str  # --go-cpuprofile: a folder for the Go arms' CPU profiles, or ""
    go_heap_profiles: str  # --go-memprofile: a folder for the Go arms' peak heap profiles, or ""
    java: str
    jvm_classpath: str
    node: str
    rust: str
    engine_log_level: str = "warn"  # --engine-log-level: the polystreams engine's (debug adds its Kafka client's log)
    kafka_data: str = "memory"  # --kafka-data: where the Apache Kafka broker keeps its log (kafka_data_dir)


def common_args(a: dict[str, str]) -> list[str]:
    table = ["--table", a["table"]] if a.get("table") else []
    return ["--brokers", a["brokers"], "--app", a["app"], "--input", a["input"], "--output", a["output"],
            "--topology", a["topology"], "--commit-ms", a["commit_ms"], "--state-dir", a["state_dir"], *table]


def go_profile(c: Context, a: dict[str, str]) -> list[str]:
    """The Go arm's --cpuprofile and --memprofile flags, one file per run, when --go-cpuprofile or
    --go-memprofile is given."""
    flags = ["--cpuprofile", str(Path(c.go_profiles) / f"{a['app']}.pprof")] if c.go_profiles else []
    if c.go_heap_profiles:
        flags += ["--memprofile", str(Path(c.go_heap_profiles) / f"{a['app']}.heap.pprof")]
    return flags


def engine_cmd(c: Context, a: dict[str, str]) -> list[str]:
    return [c.polystreams, "serve", "--brokers", a["brokers"], "--listen", "127.0.0.1:0",
            "--state-dir", a["state_dir"], "--log-level", c.engine_log_level]


ARMS = {arm.name: arm for arm in [
    Arm("loop", "confluent-kafka loop (dict)",
        lambda c, a: [[c.python, str(HERE / "arms" / "loop.py"), *common_args(a)]], "long"),
    Arm("ps-python", "polystreams, Python host",
        lambda c, a: [engine_cmd(c, a), [c.python, str(HERE / "arms" / "polystreams_py.py"), *common_args(a), "--engine", "{engine}"]],
        "long", engine=True),
    Arm("ps-go", "polystreams, Go functions",
        lambda c, a: [[c.goarm, *common_args(a), *go_profile(c, a)]], "long"),
    Arm("ps-go-base", "polystreams, Go functions, --goarm-base build",
        lambda c, a: [[c.goarm_base, *common_args(a), *go_profile(c, a)]], "long"),
    Arm("kstreams", "Kafka Streams (JVM)",
        lambda c, a: [[c.java, "-Xms256m", "-Xmx1g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                       "-cp", c.jvm_classpath, "io.polystreams.bench.Peers", *common_args(a)]], "long"),
    Arm("ps-node", "polystreams, Node host",
        lambda c, a: [engine_cmd(c, a), [c.node, "--import", "tsx", str(HERE / "arms" / "polystreams_node.mts"),
                                         *common_args(a), "--engine", "{engine}"]],
        "long", engine=True, cwd=REPO / "sdk-node"),
    Arm("quix", "Quix Streams",
        lambda c, a: [[c.python, str(HERE / "arms" / "quix.py"), *common_args(a)]], "json",
        cannot={"join_global": "Quix Streams has no global table (its enrichment join, join_asof, is the join topology)"}),
    Arm("ps-rust", "polystreams, Rust host",
        lambda c, a: [engine_cmd(c, a), [c.rust, *common_args(a), "--engine", "{engine}"]],
        "long", engine=True),
    Arm("faust", "Faust (faust-streaming)",
        lambda c, a: [[c.python, str(HERE / "arms" / "faust_app.py"), *common_args(a)]], "json",
        cannot={"join": "Faust has no stream-table join (its documentation lists joins as not implemented)",
                "join_global": "Faust has no global tables nor joins"}),
]}


# --- processes --------------------------------------------------------------

class Proc:
    """A process the harness started, in its own session so that stopping it
    stops whatever it started; its output goes to a log file."""

    def __init__(self, cmd: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.cmd = cmd
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 - closed by stop()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._out,
                                  start_new_session=True, env=env, cwd=cwd)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for raw in self.p.stdout:
            self._out.write(raw)
            self._out.flush()
            with self._cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_line(self, pred: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    if pred(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if self.p.poll() is not None:
                    raise RuntimeError(f"peers: {self.cmd[0]} exited with status {self.p.returncode} before it was ready; see {self.log}")
                if left <= 0:
                    raise RuntimeError(f"peers: {' '.join(self.cmd[:3])} printed nothing usable in {timeout:.0f} s; see {self.log}")
                self._cond.wait(min(left, 0.5))

    def alive(self) -> bool:
        return self.p.poll() is None

    def stop(self, grace: float = 30) -> None:
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        # Whatever the process left in its session (a JVM's or a host's children).
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._out.close()


def tree(roots: list[int]) -> list[int]:
    """The roots and all their descendants (from /proc/<pid>/task/*/children)."""
    out: list[int] = []
    todo = list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def usage(pids: list[int]) -> tuple[float, int]:
    """CPU seconds (user + system) and resident bytes, summed over pids."""
    cpu = 0
    rss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += int(fields[11]) + int(fields[12])  # utime, stime
            rss += int(fields[21]) * PAGE  # rss pages
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return cpu / CLK_TCK, rss


class Sampler:
    """Samples CPU and RSS of a process tree every interval seconds."""

    def __init__(self, roots: list[int], interval: float = 0.2) -> None:
        self.roots = roots
        self.samples: list[tuple[float, float, int]] = []  # (time, cpu s, rss bytes)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        self.interval = interval

    def _run(self) -> None:
        while not self._stop.is_set():
            cpu, rss = usage(tree(self.roots))
            self.samples.append((time.time(), cpu, rss))
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()

    def cpu_at(self, t: float) -> float:
        """CPU seconds at time t, interpolated between samples."""
        s = self.samples
        if not s:
            return 0.0
        if t <= s[0][0]:
            return s[0][1]
        for (t0, c0, _), (t1, c1, _) in pairwise(s):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / max(t1 - t0, 1e-9)
        return s[-1][1]

    def peak_rss(self, until: float) -> int:
        return max((r for t, _, r in self.samples if t <= until + self.interval), default=0)


# --- the broker and its clients ----------------------------------------------

def kafka_data_dir(where: str) -> tuple[Path | None, str]:
    """The Apache Kafka broker's data folder for --kafka-data, and what it is.

    "memory" (the default) puts the broker's log in a fresh folder on tmpfs
    (/dev/shm): on this kind of machine (one virtual disk, ext4) the broker's
    first writes to a new partition's memory-mapped index page-faulted for up
    to 0.8 s under the sittings' write load, while its transaction
    coordinator waited on them; an exactly-once run that met it took 5-6 s
    instead of 2.5-3.5 s, whichever arm it was (docs/performance.md, "The
    broker's disk"). "disk" is kafka.sh's own default (a folder under
    .cache/kafka/run), to measure with the disk in."""
    if where == "disk":
        return None, "on disk (.cache/kafka/run)"
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None, "on disk (.cache/kafka/run): /dev/shm is not a writable folder here"
    return Path(tempfile.mkdtemp(prefix="peers-kafka-", dir=shm)), "in memory (tmpfs, /dev/shm)"


class Broker:
    def __init__(self, kind: str, work: Path, ctx: Context) -> None:
        self.kind = kind
        self.data: Path | None = None
        if kind == "kfake":
            self.proc = Proc([ctx.polystreams, "dev", "--broker", "127.0.0.1:0", "--listen", "127.0.0.1:0",
                              "--partitions", str(PARTITIONS), "--log-level", "warn"], work / "broker.log")
            line = self.proc.wait_line(lambda l: l.startswith("polystreams: broker "), 60)
            self.address = line.split()[-1]
        elif kind == "kafka":
            self.data, where = kafka_data_dir(ctx.kafka_data)
            cmd = [str(REPO / "tools" / "kafka" / "kafka.sh"), "serve", "--watch-stdin"]
            if self.data:
                cmd += ["--data", str(self.data)]
            print(f"[kafka] the broker's log is {where}", flush=True)
            self.proc = Proc(cmd, work / "broker.log")
            self.address = self.proc.wait_line(lambda l: l.startswith("127.0.0.1:"), 180).strip()
        else:
            raise ValueError(f"peers: --broker {kind!r}: want kfake or kafka")

    def stop(self) -> None:
        self.proc.stop(60)
        if self.data:
            shutil.rmtree(self.data, ignore_errors=True)


class Kafka:
    """The harness's own clients: topics, seeding, group state, read-back."""

    def __init__(self, brokers: str) -> None:
        from confluent_kafka.admin import AdminClient
        self.brokers = brokers
        self.admin = AdminClient({"bootstrap.servers": brokers})

    def create(self, topic: str, partitions: int = PARTITIONS, config: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import NewTopic
        fs = self.admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])
        fs[topic].result(30)

    def delete_prefixed(self, prefix: str) -> None:
        """Deletes the topics a run made (its output, its application's
        internal topics): the broker then holds only the seeded inputs, in
        memory or on disk, however many runs a sitting has."""
        t0 = time.monotonic()
        try:
            topics = [t for t in self.admin.list_topics(timeout=30).topics if t.startswith(prefix)]
            for t, f in self.admin.delete_topics(topics, operation_timeout=30).items():
                f.result(60)
            if time.monotonic() - t0 > 5:
                print(f"peers: deleting the topics of {prefix} took {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001 - a topic left over costs space, not a result
            print(f"peers: deleting the topics of {prefix}: {e}", file=sys.stderr, flush=True)

    def seed(self, topic: str, gen: Callable[[int], Record], n: int) -> list[Record]:
        from confluent_kafka import Producer
        self.create(topic)
        p = Producer({"bootstrap.servers": self.brokers, "linger.ms": 20, "batch.num.messages": 10000,
                      "queue.buffering.max.messages": 1000000, "queue.buffering.max.kbytes": 1048576,
                      "partitioner": "murmur2_random",
                      # Idempotence keeps each partition in the order produced even when a
                      # batch is retried (a fresh topic's first batches are): the windowed
                      # topologies need every partition in timestamp order.
                      "enable.idempotence": True})
        failed: list[str] = []

        def report(err: object, _msg: object) -> None:
            if err is not None:
                failed.append(str(err))

        records = []
        for i in range(n):
            k, v, ts = gen(i)
            records.append((k, v, ts))
            while True:
                try:
                    # Keyless records are spread round-robin over the partitions.
                    if k is None:
                        p.produce(topic, v, partition=i % PARTITIONS, on_delivery=report, timestamp=ts or 0)
                    else:
                        p.produce(topic, v, k, on_delivery=report, timestamp=ts or 0)
                    break
                except BufferError:
                    p.poll(0.1)
        left = p.flush(120)
        if left or failed:
            raise RuntimeError(f"peers: seeding {topic}: {left} records unsent, errors: {failed[:3]}")
        return records

    def end_offsets(self, topic: str) -> dict[int, int]:
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.brokers, "group.id": "peers-offsets"})
        try:
            return {p: c.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in range(PARTITIONS)}
        finally:
            c.close()

    def group_stable(self, group: str) -> bool:
        from confluent_kafka import ConsumerGroupState
        try:
            d = self.admin.describe_consumer_groups([group], request_timeout=5)[group].result(10)
        except Exception:  # noqa: BLE001 - not there yet, or a slow answer: the next poll asks again
            return False
        return d.state == ConsumerGroupState.STABLE and len(d.members) > 0

    def committed(self, group: str, topic: str) -> dict[int, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions
        try:
            fut = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=5)
            res = fut[group].result(10)
        except Exception:  # noqa: BLE001 - the next poll asks again
            return {}
        return {tp.partition: tp.offset for tp in res.topic_partitions if tp.topic == topic and tp.offset >= 0}

    def written(self, topic: str) -> int:
        """The sum of topic's end offsets (transaction markers included)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec
        try:
            fs = self.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)},
                                         request_timeout=5)
            return sum(f.result(10).offset for f in fs.values())
        except Exception:  # noqa: BLE001 - the next poll asks again
            return -1

    def read_all(self, topic: str) -> list[tuple[int, bytes | None, bytes]]:
        """Every committed record of topic in offset order per partition."""
        return self.read(topic, lambda m: (m.partition(), m.key(), m.value()))

    def read(self, topic: str, take: Callable[[Any], T]) -> list[T]:
        """take(message) of every committed record of topic, in offset order per partition."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
        c = Consumer({"bootstrap.servers": self.brokers, "group.id": "peers-verify", "enable.auto.commit": False,
                      "isolation.level": "read_committed", "enable.partition.eof": True})
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        out: list[T] = []
        eof: set[int] = set()
        idle = time.monotonic()
        try:
            while len(eof) < PARTITIONS:
                msgs = c.consume(10000, 1.0)
                if not msgs and time.monotonic() - idle > 60:
                    raise RuntimeError(f"peers: reading {topic}: no end of partitions {sorted(set(range(PARTITIONS)) - eof)} within 60 s")
                for m in msgs:
                    idle = time.monotonic()
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            eof.add(m.partition())
                            continue
                        raise RuntimeError(f"peers: reading {topic}/{m.partition()}: {err}")
                    eof.discard(m.partition())
                    out.append(take(m))
        finally:
            c.close()
        return out


# --- runs -------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    broker: str
    topology: str
    arm: str
    round: int
    records: int
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def rate(self) -> float:
        """records/s; 0 when the run failed, or was over before its group was
        seen Stable (tiny smoke runs)."""
        return self.records / self.seconds if self.ok and self.seconds > 0 else 0.0


def start_arm(arm: Arm, ctx: Context, a: dict[str, str], logs: Path) -> list[Proc]:
    procs: list[Proc] = []
    engine = ""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmds = arm.commands(ctx, a)
    for i, cmd in enumerate(cmds):
        cmd = [part.replace("{engine}", engine) for part in cmd]
        p = Proc(cmd, logs / f"{a['app']}.{i}.log", env, arm.cwd if i == len(cmds) - 1 else None)
        procs.append(p)
        if arm.engine and i == 0:
            engine = p.wait_line(lambda l: l.startswith("polystreams: engine "), 60).split()[-1]
    return procs


def run_once(k: Kafka, arm: Arm, topo: Topology, ctx: Context, r: int, n: int, input_topic: str,
             ends: dict[int, int], want: Expected, work: Path, timeout: float, broker: str,
             table_topic: str = "") -> Run:
    run = Run(broker, topo.name, arm.name, r, n)
    app = f"peers-{topo.name.replace('_', '-')}-{arm.name}-{r}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
    output = f"{app}-out"
    k.create(output)
    state = work / "state" / app
    state.mkdir(parents=True)
    a = {"brokers": k.brokers, "app": app, "input": input_topic, "output": output, "topology": topo.name,
         "commit_ms": str(topo.commit_ms), "state_dir": str(state), "table": table_topic}
    procs = start_arm(arm, ctx, a, work / "logs")
    sampler = Sampler([p.p.pid for p in procs])
    total = sum(ends.values())
    try:
        deadline = time.monotonic() + timeout
        t0 = 0.0
        written, t_last = 0, 0.0  # the output's end offsets and when they last grew
        committed_at = 0.0
        while True:
            dead = [p for p in procs if not p.alive()]
            if dead:
                run.problems.append(f"{dead[0].cmd[0]} exited with status {dead[0].p.returncode} (log {dead[0].log})")
                return run
            if time.monotonic() > deadline:
                run.problems.append(f"not done within {timeout:.0f} s (log {procs[-1].log})")
                return run
            now = time.time()
            if not t0 and k.group_stable(app):
                t0 = now
            hw = k.written(output)
            if hw != written:
                written, t_last = hw, now
            if t0 and not committed_at:
                done = k.committed(app, input_topic)
                if sum(min(done.get(p, 0), e) for p, e in ends.items()) >= total:
                    committed_at = now
            # Done: the whole input committed, and the output quiet for a while
            # (an arm may commit its input before its last outputs are out).
            if committed_at and now - max(t_last, committed_at) > max(2.0, 3 * topo.commit_ms / 1000):
                break
            time.sleep(0.1)
        got = k.read_all(output)
        t1 = max(t_last, t0)
        run.problems = verify(topo, want, got, arm.out)
        if t_last <= t0:
            # The group was first seen Stable only after the output had ended
            # (an admin request that hung for seconds): the run has no start to
            # time from, and a rate of 0 would pull the medians down.
            run.problems.append("untimed: the consumer group was first seen Stable after the output had stopped growing")
        run.seconds = t1 - t0
        run.cpu_seconds = sampler.cpu_at(t1) - sampler.cpu_at(t0)
        run.peak_rss = sampler.peak_rss(t1)
        return run
    finally:
        sampler.stop()
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(state, ignore_errors=True)
        k.delete_prefixed(app)


# The latency phase's first second is left out of its figures: an arm's
# first records wait for the output topic's metadata, the producer's
# connection and the first fetch, once per run (each arm alike).
LATENCY_WARMUP_MS = 1000


def latency(k: Kafka, arm: Arm, ctx: Context, rate: float, duration: float, work: Path, broker: str,
            dump: str = "") -> dict[str, float]:
    """End-to-end latency of map_values at rate records/s: each input value
    starts with its send time in nanoseconds (digits survive upper()).

    On Apache Kafka both topics stamp LogAppendTime, and a record's latency is
    its output's append time minus its input's: the broker's clock at both
    ends, so neither the harness's producer nor its reader (Python, sharing
    the two cores with the arm) is in the figure. kfake ignores
    LogAppendTime: there it is the reader's receipt time minus the send time
    in the value. Records of the first LATENCY_WARMUP_MS are not counted."""
    from confluent_kafka import OFFSET_END, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
    topo = TOPOLOGIES["map_values"]
    app = f"peers-latency-{arm.name}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
    input_topic, output = f"{app}-in", f"{app}-out"
    appended = {"message.timestamp.type": "LogAppendTime"} if broker == "kafka" else None
    k.create(input_topic, config=appended)
    k.create(output, config=appended)
    state = work / "state" / app
    state.mkdir(parents=True)
    a = {"brokers": k.brokers, "app": app, "input": input_topic, "output": output, "topology": topo.name,
         "commit_ms": str(topo.commit_ms), "state_dir": str(state)}
    procs = start_arm(arm, ctx, a, work / "logs")
    lat: list[float] = []
    try:
        deadline = time.monotonic() + 120
        while not k.group_stable(app):
            if time.monotonic() > deadline or not all(p.alive() for p in procs):
                return {"error": 1.0}
            time.sleep(0.1)
        stop = threading.Event()
        reader = None
        warm_ns = 1 << 63  # set when producing starts: nothing before it counts
        if not appended:
            # kfake: a reader times each output's receipt as it arrives (one
            # record per poll: consume(n, timeout) would hand over a batch only
            # once it is full or the timeout is up).
            c = Consumer({"bootstrap.servers": k.brokers, "group.id": app + "-reader",
                          "isolation.level": "read_committed"})
            c.assign([TopicPartition(output, p, OFFSET_END) for p in range(PARTITIONS)])

            def read() -> None:
                while not stop.is_set():
                    m = c.poll(0.1)
                    if m is not None and m.error() is None and int(m.value()[:19]) >= warm_ns:
                        lat.append((time.time_ns() - int(m.value()[:19])) / 1e6)

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            time.sleep(1)  # the reader's assignment settles
        # With broker times the producer's linger is not in the figure, and
        # 5 ms (the Java producer's default) keeps the broker from appending
        # in bursts behind thousands of one-record requests a second; on
        # kfake the send time is the figure's start, so it does not linger.
        p = Producer({"bootstrap.servers": k.brokers, "linger.ms": 5 if appended else 0})
        pad = b"x" * 80
        sent = 0
        start = time.monotonic()
        warm_ns = time.time_ns() + LATENCY_WARMUP_MS * 1_000_000
        while (now := time.monotonic()) - start < duration:
            due = int((now - start) * rate)
            while sent < due:
                try:
                    p.produce(input_topic, b"%019d" % time.time_ns() + pad, partition=sent % PARTITIONS)
                except BufferError:  # the local queue is full: let it drain
                    p.poll(0.001)
                    continue
                sent += 1
            p.poll(0)
            time.sleep(0.001)
        p.flush(30)
        wait_until = time.monotonic() + 15
        if reader is not None:
            while len(lat) < sent * (duration - LATENCY_WARMUP_MS / 1000) / duration and time.monotonic() < wait_until:
                time.sleep(0.1)
            stop.set()
            reader.join()
            c.close()
        else:
            # Apache Kafka: the broker stamped both ends; read them once the
            # output holds every record (nothing of the harness runs while
            # the arm is timed but its producer).
            while k.written(output) < sent and time.monotonic() < wait_until:
                time.sleep(0.1)
            stamp = lambda m: (m.value()[:19], *m.timestamp())  # noqa: E731
            ins = {v: ts for v, kind, ts in k.read(input_topic, stamp) if kind == TIMESTAMP_LOG_APPEND_TIME}
            pairs = sorted((ins[v], ts - ins[v]) for v, kind, ts in k.read(output, stamp)
                           if kind == TIMESTAMP_LOG_APPEND_TIME and v in ins)
            first = pairs[0][0] if pairs else 0
            lat = [float(d) for t, d in pairs if t >= first + LATENCY_WARMUP_MS]
            if dump and pairs:  # each record's input append time and latency, in ms, in input order
                Path(dump).mkdir(parents=True, exist_ok=True)
                (Path(dump) / f"{broker}-{arm.name}.json").write_text(json.dumps(pairs))
        if not lat:
            return {"error": 1.0, "sent": sent}
        q = statistics.quantiles(lat, n=100)
        return {"rate": rate, "sent": sent, "received": len(lat), "p50": q[49], "p99": q[98],
                "max": max(lat), "broker_timed": float(bool(appended))}
    finally:
        for proc in reversed(procs):
            proc.stop()
        shutil.rmtree(state, ignore_errors=True)
        k.delete_prefixed(app)


# --- report -----------------------------------------------------------------

def human(rate: float) -> str:
    if rate >= 1e6:
        return f"{rate / 1e6:.2f}M"
    if rate >= 1e3:
        return f"{rate / 1e3:.0f}k"
    return f"{rate:.0f}"


def report(runs: list[Run], lat: dict[str, dict[str, dict[str, float]]], arms: list[str], baseline: str) -> str:
    lines: list[str] = []
    for broker in dict.fromkeys(r.broker for r in runs):
        for topo in dict.fromkeys(r.topology for r in runs if r.broker == broker):
            rs = [r for r in runs if r.broker == broker and r.topology == topo]
            n = rs[0].records
            lines.append(f"### {TOPOLOGIES[topo].title} — {broker}, {n:,} input records")
            lines.append("")
            lines.append(f"| arm | median records/s | per round | vs {baseline} per round | CPU s / M records | peak RSS MB |")
            lines.append("|---|---:|---|---|---:|---:|")
            base = {r.round: r for r in rs if r.arm == baseline}
            for arm in arms:
                mine = sorted((r for r in rs if r.arm == arm), key=lambda r: r.round)
                if not mine:
                    continue
                ok = [r for r in mine if r.rate]  # verified, and timed
                med = statistics.median(r.rate for r in ok) if ok else 0.0
                rounds = ", ".join(human(r.rate) if r.rate else "untimed" if r.ok else "FAILED" for r in mine)
                ratios = ", ".join(
                    f"{r.rate / base[r.round].rate:.2f}x" if r.rate and r.round in base and base[r.round].rate else "—"
                    for r in mine)
                cpu = statistics.median(r.cpu_seconds / r.records * 1e6 for r in ok) if ok else 0.0
                rss = max((r.peak_rss for r in ok), default=0) / 2**20
                lines.append(f"| {ARMS[arm].title} | {human(med) if ok else 'untimed' if all(r.ok for r in mine) else 'FAILED'} | {rounds} | {ratios} | {cpu:.1f} | {rss:.0f} |")
            lines.append("")
            notes = [f"- {ARMS[a].title}: not run: {ARMS[a].cannot[topo]}" for a in arms if topo in ARMS[a].cannot]
            notes += [f"- {ARMS[r.arm].title}, round {r.round}: " + "; ".join(r.problems) for r in rs if r.problems]
            if notes:
                lines.extend([*notes, ""])
        lb = lat.get(broker)
        if lb:
            lines.append(f"### End-to-end latency, map_values at 10% of each arm's median rate — {broker}")
            lines.append("")
            lines.append("| arm | rate | records | p50 ms | p99 ms | max ms | timed by |")
            lines.append("|---|---:|---:|---:|---:|---:|---|")
            for arm, m in lb.items():
                if "p50" in m:
                    by = "broker append times" if m.get("broker_timed") else "harness clock"
                    lines.append(f"| {ARMS[arm].title} | {m['rate']:.0f}/s | {int(m['received'])} | {m['p50']:.1f} | "
                                 f"{m['p99']:.1f} | {m.get('max', 0):.1f} | {by} |")
                else:
                    lines.append(f"| {ARMS[arm].title} | — | — | failed | failed | | |")
            lines.append("")
    return "\n".join(lines)


def build(ctx_args: argparse.Namespace, cache: Path) -> Context:
    """The arms' binaries: the Go arm (go build) and the JVM classpath (Maven,
    once). The venv and the engine binary are the Makefile's."""
    goarm = cache / "goarm"
    subprocess.run(["go", "build", "-o", str(goarm), "./tools/bench/peers/goarm"], cwd=REPO, check=True)
    jvm = HERE / "jvm"
    version = (REPO / "tools" / "kafka" / "VERSION").read_text().strip()
    stamp = jvm / "target" / f".built-{version}"
    src = jvm / "src" / "main" / "java" / "io" / "polystreams" / "bench" / "Peers.java"
    if not stamp.exists() or stamp.stat().st_mtime < max(src.stat().st_mtime, (jvm / "pom.xml").stat().st_mtime):
        subprocess.run(["mvn", "-q", "-B", f"-Dkafka.version={version}", "-f", str(jvm / "pom.xml"), "package",
                        "dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory=target/lib"], check=True)
        stamp.touch()
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java") or "java"
    for folder in (ctx_args.go_cpuprofile, ctx_args.go_memprofile):
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
    return Context(python=sys.executable, polystreams=ctx_args.polystreams, goarm=str(goarm),
                   goarm_base=ctx_args.goarm_base or "", go_profiles=ctx_args.go_cpuprofile or "",
                   go_heap_profiles=ctx_args.go_memprofile or "", java=java,
                   jvm_classpath=f"{jvm / 'target' / 'classes'}:{jvm / 'target' / 'lib'}/*",
                   node=ctx_args.node, rust=ctx_args.rust, engine_log_level=ctx_args.engine_log_level,
                   kafka_data=ctx_args.kafka_data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", default="kfake,kafka", help="comma-separated: kfake (polystreams dev's embedded broker, its own process) and/or kafka (tools/kafka/kafka.sh serve), one after the other")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    ap.add_argument("--topologies", default=",".join(TOPOLOGIES), help=f"comma-separated, of {', '.join(TOPOLOGIES)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=1_000_000, help="input records per topology (word count: lines of 8 words)")
    ap.add_argument("--keys", type=int, default=10_000, help="distinct keys (count, sums) and words (word count)")
    ap.add_argument("--baseline", default="loop", help="the arm every per-round ratio divides by")
    ap.add_argument("--latency-dump", default="", help="a folder: each arm's latency phase writes its records' "
                    "[input append time, latency] (ms, Apache Kafka only) to <broker>-<arm>.json there")
    ap.add_argument("--latency-seconds", type=float, default=15, help="how long the latency phase produces per arm (0 skips it)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one run may take before it is reported as failed")
    ap.add_argument("--polystreams", default=str(REPO / "bin" / "polystreams"))
    ap.add_argument("--engine-log-level", default="warn", choices=["debug", "info", "warn", "error"],
                    help="the log level of the engine the SDK arms run (in <work>/logs/<app>.0.log); debug adds "
                    "its Kafka client's own log: what a stalled run waited for")
    ap.add_argument("--kafka-data", default="memory", choices=["memory", "disk"],
                    help="where the Apache Kafka broker keeps its log: memory (a folder on /dev/shm, the default: "
                    "this machine's disk stalled the broker's transaction markers for up to 0.8 s at random) or disk "
                    "(kafka.sh's folder under .cache/kafka/run)")
    ap.add_argument("--node", default="node")
    ap.add_argument("--rust", default=str(REPO / "sdk-rust" / "target" / "release" / "examples" / "benchpeers"),
                    help="the Rust host arm's binary (cargo build --release --example benchpeers)")
    ap.add_argument("--goarm-base", help="the arm ps-go-base's binary: the Go arm built from another commit "
                    "(git worktree add /tmp/base main && cd /tmp/base && go build -o /tmp/goarm-base ./tools/bench/peers/goarm), "
                    "to measure a change beside its base in one sitting")
    ap.add_argument("--go-cpuprofile", help="a folder: each Go arm run writes its CPU profile there (<app>.pprof)")
    ap.add_argument("--go-memprofile", help="a folder: each Go arm run writes the heap profile at its largest "
                    "live heap there (<app>.heap.pprof)")
    ap.add_argument("--work", default=str(REPO / ".cache" / "bench-peers" / "work"))
    ap.add_argument("--json", help="write every run here (default: <work>/runs-<time>.json)")
    ap.add_argument("--report", help="only print the tables of the runs in this JSON file (a sitting's --json)")
    args = ap.parse_args()
    if args.report:
        saved = [Run(**r) for r in json.loads(Path(args.report).read_text())]
        order = [a for a in ARMS if any(r.arm == a for r in saved)]
        print(report(saved, {}, order, args.baseline if args.baseline in order else order[0]))
        return
    arms = [a for a in args.arms.split(",") if a]
    topos = [t for t in args.topologies.split(",") if t]
    for a in arms:
        if a not in ARMS:
            ap.error(f"--arms: unknown arm {a!r} (known: {', '.join(ARMS)})")
    for t in topos:
        if t not in TOPOLOGIES:
            ap.error(f"--topologies: unknown topology {t!r} (known: {', '.join(TOPOLOGIES)})")
    if "ps-go-base" in arms and not args.goarm_base:
        ap.error("--arms ps-go-base needs --goarm-base")
    if args.baseline not in arms:
        args.baseline = arms[0]
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    ctx = build(args, work.parent)
    runs: list[Run] = []
    lat: dict[str, dict[str, dict[str, float]]] = {}
    out_json = Path(args.json) if args.json else work.parent / f"runs-{time.strftime('%Y%m%dT%H%M%S')}.json"
    print(f"bench-peers: {args.records:,} records, {args.keys:,} keys, {PARTITIONS} partitions, {args.rounds} rounds, "
          f"arms {', '.join(arms)}; load average {os.getloadavg()[0]:.1f} at start", flush=True)
    for broker_kind in args.brokers.split(","):
        broker = Broker(broker_kind, work, ctx)
        try:
            k = Kafka(broker.address)
            seeded: dict[str, tuple[str, list[Record], dict[int, int]]] = {}
            origin = origin_ms(time.time())
            for t in topos:
                topo = TOPOLOGIES[t]
                # The table first: its rows are older than the events.
                for kind in [topo.table, topo.input]:
                    if kind is None or kind in seeded:
                        continue
                    topic = f"peers-{kind}"
                    n = args.keys if kind == "rates" else args.records
                    t_seed = time.monotonic()
                    recs = k.seed(topic, generate(kind, n, args.keys, random.Random(23), origin), n)
                    seeded[kind] = (topic, recs, k.end_offsets(topic))
                    print(f"[{broker_kind}] seeded {topic}: {n:,} records in {time.monotonic() - t_seed:.1f} s", flush=True)
                topic, recs, ends = seeded[topo.input]
                table_topic, table = (seeded[topo.table][0], seeded[topo.table][1]) if topo.table else ("", None)
                want = expect(t, recs, table)
                for r in range(1, args.rounds + 1):
                    order = arms[(r - 1) % len(arms):] + arms[:(r - 1) % len(arms)]
                    for arm in order:
                        if t in ARMS[arm].cannot:
                            if r == 1:
                                print(f"[{broker_kind}] {t}: {arm} skipped: {ARMS[arm].cannot[t]}", flush=True)
                            continue
                        run = run_once(k, ARMS[arm], topo, ctx, r, args.records, topic, ends, want, work, args.timeout,
                                       broker_kind, table_topic)
                        runs.append(run)
                        status = "ok" if run.ok else "FAILED: " + "; ".join(run.problems)
                        print(f"[{broker_kind}] {t} round {r} {arm}: {human(run.rate)} rec/s, {run.seconds:.1f} s, "
                              f"{run.cpu_seconds:.1f} CPU s, {run.peak_rss / 2**20:.0f} MB, {status}", flush=True)
                        out_json.write_text(json.dumps([dataclasses.asdict(x) for x in runs], indent=1))
            if args.latency_seconds > 0 and "map_values" in topos:
                lat[broker_kind] = {}
                for arm in arms:
                    ok = [r.rate for r in runs if r.broker == broker_kind and r.topology == "map_values" and r.arm == arm and r.rate]
                    if not ok:
                        continue
                    m = latency(k, ARMS[arm], ctx, statistics.median(ok) / 10, args.latency_seconds, work, broker_kind,
                                args.latency_dump)
                    lat[broker_kind][arm] = m
                    print(f"[{broker_kind}] latency {arm}: {m}", flush=True)
        finally:
            broker.stop()
    print()
    print(report(runs, lat, arms, args.baseline))
    print(f"load average {os.getloadavg()[0]:.1f} at the end; runs in {out_json}")
    if any(not r.ok for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
