"""Interactive queries across two instances of one application, each on its
own real engine with an application.server: every key answers through
either instance, from the instance the metadata names."""

from __future__ import annotations

import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer
from test_engine_e2e import Runner, create_topic

from polystreams import App, Config, HostInfo


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spawn(args: list[str]) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Starts the engine; returns it and the addresses it printed."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    printed: dict[str, str] = {}
    assert p.stdout is not None
    while "engine" not in printed:
        line = p.stdout.readline()
        assert line, f"{args[0]} exited before it served"
        if line.startswith("polystreams: "):
            what, addr = line.removeprefix("polystreams: ").split(" ", 1)
            printed[what] = addr.strip()
    return p, printed


def test_two_instances_answer_each_others_keys(tmp_path: Path, app_id: str, real_engine: str) -> None:
    p1, p2 = free_port(), free_port()
    e1, out = spawn([real_engine, "dev", "--broker", "127.0.0.1:0", "--listen", f"127.0.0.1:{p1}", "--state-dir", str(tmp_path / "1")])
    brokers = out["broker"]
    e2, _ = spawn([real_engine, "serve", "--brokers", brokers, "--listen", f"127.0.0.1:{p2}", "--state-dir", str(tmp_path / "2")])
    apps: list[App] = []
    runners: list[Runner] = []
    try:
        create_topic(brokers, "iq-events", 4)
        keys = [f"k{i}" for i in range(40)]
        want = Counter(keys[i % len(keys)] for i in range(400))
        producer = Producer({"bootstrap.servers": brokers, "partitioner": "murmur2_random"})  # as Java's producer
        for i in range(400):
            producer.produce("iq-events", key=keys[i % len(keys)].encode(), value=b"x")
        assert producer.flush(30) == 0
        for port in (p1, p2):
            app = App(app_id, Config(state_dir=str(tmp_path / f"s{port}"), commit_interval_ms=100,
                                     extra={"application.server": f"127.0.0.1:{port}", "statestore.cache.max.bytes": "0"}),
                      engine=f"http://127.0.0.1:{port}")  # fmt: skip
            app.stream("iq-events", key="string").group_by_key().count(materialized="iq-counts")
            apps.append(app)
            runners.append(Runner(app))
        servers = {f"127.0.0.1:{p1}": apps[0], f"127.0.0.1:{p2}": apps[1]}

        def settled() -> bool:
            try:
                hosts = apps[0].metadata_for_all_streams_clients()
                if len(hosts) != 2 or any(not h.topic_partitions for h in hosts):
                    return False
                return all(a.store("iq-counts").get(k) == n for a in apps for k, n in want.items())
            except Exception:
                return False

        deadline = time.monotonic() + 90
        while not settled():
            assert time.monotonic() < deadline, "the two instances never answered every key"
            time.sleep(0.3)
        forwarded = 0
        for a_server, a in servers.items():
            for k, n in want.items():
                md = a.query_metadata_for_key("iq-counts", k)
                assert md.active_host is not None and str(md.active_host) in servers
                r = a.store("iq-counts").query(k)
                assert r.value == n and r.served_by == [str(md.active_host)] and r.partition == md.partition
                assert r.timestamp is not None and not r.from_standby
                forwarded += str(md.active_host) != a_server
        assert 0 < forwarded < 2 * len(want), f"{forwarded} forwarded: keys not spread over both instances"
        assert dict(apps[1].store("iq-counts").all()) == dict(want)  # a scan gathers both instances' partitions
        assert {h.host_info for h in apps[1].streams_metadata_for_store("iq-counts")} == {HostInfo("127.0.0.1", p1), HostInfo("127.0.0.1", p2)}
    finally:
        for a in apps:
            a.stop()
        for r in runners:
            r.join(60)
        for e in (e2, e1):
            e.terminate()
            e.wait(30)
