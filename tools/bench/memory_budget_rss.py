"""Engine RSS while one application holds more than its memory budget (docs/security.md,
"Memory per application").

    PYTHONPATH=sdk-python/src /usr/bin/python3 tools/bench/memory_budget_rss.py bin/polystreams \
        [--views 200000] [--budget-mib 64] [--max-app-mib 1024]

Starts a broker (`polystreams dev`, in a process of its own) and an engine (`polystreams serve
--max-app-memory --max-app-mib`), and runs two applications on the engine with the Python SDK: "greedy" (polystreams.memory.max.bytes --budget-mib)
joins views with clicks an hour either side, so every view stays in the join's window in
memory; "counting" counts words. It feeds --views views of 1 KiB and a line of words every
50 ms, samples the engine's VmRSS every 50 ms, and prints the peak, how greedy ended and
whether counting counted every word.
"""

import argparse
import re
import subprocess
import tempfile
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from polystreams import App, JoinWindows


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("--views", type=int, default=200_000)
    ap.add_argument("--budget-mib", type=int, default=64)
    ap.add_argument("--max-app-mib", type=int, default=1024)
    ap.add_argument("--log", help="write the engine's log here")
    ap.add_argument("--wait", type=float, default=60, help="seconds to wait for greedy to fail once fed")
    args = ap.parse_args()
    # The broker runs in a process of its own (an embedded broker keeps every record in the
    # engine's memory); its engine serves no one.
    kafka = subprocess.Popen(
        [args.engine, "dev", "--broker", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--state-dir", tempfile.mkdtemp(),
         "--topics", "views,clicks,joined,lines,counts", "--partitions", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert kafka.stdout is not None
    broker = ""
    for line in kafka.stdout:
        if m := re.search(r"broker (\S+)", line):
            broker = m.group(1)
            break
    p = subprocess.Popen(
        [args.engine, "serve", "--brokers", broker, "--listen", "127.0.0.1:0", "--state-dir", tempfile.mkdtemp(),
         "--max-app-memory", str(args.max_app_mib << 20)],
        stdout=subprocess.PIPE, stderr=open(args.log, "w") if args.log else subprocess.DEVNULL, text=True,
    )
    assert p.stdout is not None
    url = ""
    for line in p.stdout:
        if m := re.search(r"engine (http://\S+)", line):
            url = m.group(1)
            break
    peak, stop = [rss_mib(p.pid)], threading.Event()
    idle = peak[0]

    def sample() -> None:
        while not stop.is_set():
            peak.append(rss_mib(p.pid))
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()

    greedy = App("greedy", {"polystreams.memory.max.bytes": str(args.budget_mib << 20), "statestore.cache.max.bytes": "0"}, engine=url)
    views, clicks = greedy.stream("views", value="string"), greedy.stream("clicks", value="string")
    views.join(clicks, lambda v, c: v + c, JoinWindows.of_time_difference_with_no_grace(3_600_000)).to("joined")
    counting = App("counting", {"commit.interval.ms": "100"}, engine=url)
    (counting.stream("lines", value="string").flat_map_values(str.split)
        .group_by(lambda _k, w: w, key="string").count().to_stream().to("counts"))
    ended: dict[str, str] = {}

    def run(app: App) -> None:
        try:
            app.run()
            ended[app.application_id] = "stopped"
        except Exception as e:  # noqa: BLE001 - the error is the result
            ended[app.application_id] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=run, args=(a,), daemon=True) for a in (greedy, counting)]
    for t in threads:
        t.start()
    prod = Producer({"bootstrap.servers": broker, "linger.ms": 20})
    words = 0
    value = "v" * 1024
    start = time.monotonic()
    for i in range(args.views):
        while True:
            try:
                prod.produce("views", value.encode(), f"user-{i}".encode(), timestamp=1_000_000 + i)
                break
            except BufferError:
                prod.poll(0.05)
        if i % 2000 == 0:
            prod.produce("lines", b"a b c")
            words += 1
        prod.poll(0)
    prod.flush()
    fed = time.monotonic() - start
    # Let greedy fail (or hold everything), counting count the rest.
    deadline = time.monotonic() + args.wait
    while "greedy" not in ended and time.monotonic() < deadline:
        time.sleep(0.2)
    for _ in range(20):
        prod.produce("lines", b"a b c")
        words += 1
        prod.poll(0.05)
    prod.flush()
    counts = {}
    c = Consumer({"bootstrap.servers": broker, "group.id": "rss-reader", "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("counts", part, OFFSET_BEGINNING) for part in range(4)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and counts != {"a": words, "b": words, "c": words}:
        m = c.poll(0.2)
        if m is not None and m.error():
            print("reading counts:", m.error())
        if m is not None and not m.error():
            counts[m.key().decode()] = int.from_bytes(m.value(), "big")
    c.close()
    stop.set()
    counting.stop()
    if "greedy" not in ended:
        greedy.stop()
    p.terminate()
    p.wait()
    kafka.terminate()
    kafka.wait()
    print(f"views fed: {args.views} of 1 KiB in {fed:.1f} s; greedy's budget {args.budget_mib} MiB")
    print(f"engine RSS: idle {idle:.0f} MiB, peak {max(peak):.0f} MiB")
    print(f"greedy: {ended.get('greedy', 'still running')}")
    print(f"counting: {'exact' if counts == {'a': words, 'b': words, 'c': words} else counts} ({words} lines)")


if __name__ == "__main__":
    main()
