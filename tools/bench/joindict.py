#!/usr/bin/python3
"""Join benchmark baseline: "the user's own dictionary", joining.

A hand-written python3-confluent-kafka loop, no engine, in the manner of
dictloop.py (same clients, at-least-once commits every second, no
durability):

--mode table: subscribed to the customers topic (--table) and the orders
    topic (--input); a customer record (JSON) goes into a dict by key, an
    order (JSON) is joined with its key's customer and the result produced
    as JSON (an order whose customer is not known yet is dropped: the inner
    stream-table join).
--mode stream: subscribed to the orders (--input) and payments (--other)
    topics; each record is kept per key and side, and joined with the other
    side's records of its key whose timestamps are within --window-ms of
    its own; records older than the largest timestamp seen minus
    --window-ms are forgotten, in arrival order.

Started by the Go benchmark (core/cmd/bench); exits after --records
input records, or on SIGTERM.
"""
from __future__ import annotations

import collections
import json
import time

import dictbench


def main() -> None:
    ap = dictbench.parser("flush outputs and commit offsets this often")
    ap.add_argument("--mode", choices=["table", "stream"], required=True)
    ap.add_argument("--table", help="the customers topic (--mode table)")
    ap.add_argument("--other", help="the payments topic (--mode stream)")
    ap.add_argument("--window-ms", type=int, default=300_000)
    args = ap.parse_args()
    stop = dictbench.Stop()
    second = args.table if args.mode == "table" else args.other
    consumer, producer = dictbench.clients(args, [args.input, second])
    loads, dumps = json.loads, json.dumps
    produce = producer.produce
    out, orders_topic = args.output, args.input
    customers: dict[bytes, dict] = {}
    window = args.window_ms
    sides: tuple[dict[bytes, list], dict[bytes, list]] = ({}, {})
    arrivals: collections.deque = collections.deque()
    stream_time = -1
    seen = 0
    dirty = False
    interval = args.commit_ms / 1000
    last = time.monotonic()

    def emit(value: dict, k: bytes) -> None:
        v = dumps(value).encode()
        try:
            produce(out, v, k)
        except BufferError:
            producer.poll(0.1)
            produce(out, v, k)

    while not stop.requested and seen < args.records:
        msgs = consumer.consume(10000, 0.1)
        for m in msgs:
            if m.error():
                continue
            k = m.key()
            if args.mode == "table":
                if m.topic() != orders_topic:
                    customers[k] = loads(m.value())
                    continue
                c = customers.get(k)
                if c is None:
                    continue
                o = loads(m.value())
                emit({"order": o["order"], "amount": o["amount"], "name": c["name"], "tier": c["tier"]}, k)
                continue
            ts = m.timestamp()[1]
            v = loads(m.value())
            side = 0 if m.topic() == orders_topic else 1
            for ots, ov in sides[1 - side].get(k, ()):
                if abs(ts - ots) <= window:
                    o, p = (v, ov) if side == 0 else (ov, v)
                    emit({"order": o["order"], "amount": o["amount"], "paid": p["paid"]}, k)
            sides[side].setdefault(k, []).append((ts, v))
            arrivals.append((ts, side, k))
            stream_time = max(stream_time, ts)
            while arrivals and arrivals[0][0] < stream_time - window:
                ots, oside, ok = arrivals.popleft()
                rows = sides[oside].get(ok)
                if rows:
                    rows[:] = [r for r in rows if r[0] >= stream_time - window]
                    if not rows:
                        del sides[oside][ok]
        if args.mode == "table":
            seen += sum(1 for m in msgs if m.topic() == orders_topic)
        else:
            seen += len(msgs)
        dirty = dirty or bool(msgs)
        producer.poll(0)
        now = time.monotonic()
        if now - last > interval or seen >= args.records:
            producer.flush()
            if dirty:
                consumer.commit(asynchronous=False)
                dirty = False
            last = now
    producer.flush()
    consumer.close()


if __name__ == "__main__":
    main()
