"""make bench-peers arm: the hand-written loop a Python user writes instead of
a stream processor. confluent-kafka consumer, a dict, confluent-kafka
producer; every updated value is produced (as the engines emit each update;
counts and sums as 8-byte big-endian longs, Kafka's Serdes.Long). Outputs are
flushed and offsets committed every --commit-ms (at-least-once); for sum_eos
each commit interval is one Kafka transaction carrying the outputs and the
input offsets (send_offsets_to_transaction). The dict is not durable: it dies
with the process, which is what the engines' state stores and changelogs
cost them.

The windowed topologies keep a dict per (key, window start) and write each
update with Kafka Streams' windowed key (the key, then the start as 8 bytes
big-endian), the windows taken from each record's timestamp. The join reads
the whole table topic into a dict first (a second consumer, to its end
offsets), then joins each event with it."""
from __future__ import annotations

import json
import signal
import struct
import time

import common
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition


def load_table(brokers: str, topic: str) -> dict[bytes, int]:
    """Every row of the table topic: key -> its JSON "rate"."""
    c = Consumer({"bootstrap.servers": brokers, "group.id": "unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    parts = list(c.list_topics(topic, timeout=30).topics[topic].partitions)
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    rows: dict[bytes, int] = {}
    left = set(parts)
    while left:
        for m in c.consume(10000, 1.0):
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(err)
                left.discard(m.partition())
            elif m.value() is None:
                rows.pop(m.key(), None)
            else:
                rows[m.key()] = json.loads(m.value())["rate"]
    c.close()
    return rows


def main() -> None:
    args = common.parser(__doc__ or "").parse_args()
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    eos = common.exactly_once(args.topology)
    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": args.app,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        # librdkafka (2.4+) waits fetch.queue.backoff.ms, 1000 by default,
        # before it fetches a partition again once its local queue passed
        # queued.min.messages: at 1M records that halved this loop's rate
        # (count: 219k -> 427k records/s at 10 ms). The loop stands for the
        # best a user can hand-write, so it is tuned as its docs advise.
        "fetch.queue.backoff.ms": 10,
    })
    pconf = {
        "bootstrap.servers": args.brokers,
        "linger.ms": 5,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 1000000,
        "queue.buffering.max.kbytes": 1048576,
    }
    if eos:
        pconf["transactional.id"] = args.app + "-tx"
    producer = Producer(pconf)
    consumer.subscribe([args.input])
    if eos:
        producer.init_transactions()
        producer.begin_transaction()
    pack = struct.Struct(">q").pack
    loads = json.loads
    produce = producer.produce
    out = args.output
    state: dict[bytes, int] = {}
    t = args.topology
    rates = load_table(args.brokers, args.table) if t in ("join", "join_global") else {}
    size, advance = common.WINDOWS.get(t, (0, 0))
    windows: dict[tuple[bytes, int], int] = {}
    starts = common.window_starts
    interval = args.commit_ms / 1000
    last = time.monotonic()
    dirty = False

    def send(value: bytes, key: bytes | None) -> None:
        try:
            produce(out, value, key)
        except BufferError:
            producer.poll(0.1)
            produce(out, value, key)

    while not stop[0]:
        msgs = consumer.consume(10000, 0.1)
        for m in msgs:
            if m.error():
                raise KafkaException(m.error())
            if t == "map_values":
                send(m.value().decode().upper().encode(), m.key())
            elif size:
                k = m.key()
                add = loads(m.value())["amount"] if t == "hopping_sum" else 1
                for start in starts(m.timestamp()[1], size, advance):
                    n = windows.get((k, start), 0) + add
                    windows[(k, start)] = n
                    send(pack(n), k + pack(start))
            elif t in ("join", "join_global"):  # the whole table first: a global table
                rate = rates.get(m.key())
                if rate is not None:
                    send(b"%d" % (loads(m.value())["amount"] * rate), m.key())
            elif t == "word_count":
                for word in m.value().split():
                    n = state.get(word, 0) + 1
                    state[word] = n
                    send(pack(n), word)
            else:
                k = m.key()
                n = state.get(k, 0) + (1 if t == "count" else loads(m.value())["amount"])
                state[k] = n
                send(pack(n), k)
        dirty = dirty or bool(msgs)
        producer.poll(0)
        now = time.monotonic()
        if dirty and now - last > interval:
            if eos:
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata())
                producer.commit_transaction()
                producer.begin_transaction()
            else:
                producer.flush()
                consumer.commit(asynchronous=False)
            dirty = False
            last = now
    if eos:
        producer.abort_transaction()
    producer.flush()
    consumer.close()


if __name__ == "__main__":
    main()
