"""An independent Kafka client for the Node SDK's integration tests.

Uses confluent-kafka (librdkafka; `apt install python3-confluent-kafka`), so
what the engine writes is checked by a client that shares no code with it.
Run with Debian's /usr/bin/python3.

    kafka_tool.py create BROKER TOPIC:PARTITIONS ...
    kafka_tool.py produce BROKER TOPIC [PARTITIONER] < records.json   # [{"key": str|null, "value": str|null, "partition": int?, "timestamp": ms?}]
    kafka_tool.py consume BROKER TOPIC                  # prints [{"partition", "offset", "key", "value"}] (hex, null)
    kafka_tool.py partitions BROKER TOPIC               # prints the topic's partition count (0: no such topic)

produce's PARTITIONER is librdkafka's `partitioner` (default: its own,
consistent_random); murmur2_random places keys as Kafka's Java clients and
the engine do, which a table joined with a repartitioned stream needs.

consume reads every partition from the beginning up to its high watermark at
the time of the call (read_committed).
"""

import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(broker, specs):
    admin = AdminClient({"bootstrap.servers": broker})
    topics = []
    for spec in specs:
        name, _, parts = spec.partition(":")
        topics.append(NewTopic(name, int(parts or 1), 1))
    for f in admin.create_topics(topics).values():
        f.result(timeout=30)


def produce(broker, topic, partitioner=None):
    records = json.load(sys.stdin)
    conf = {"bootstrap.servers": broker, "linger.ms": 5}
    if partitioner:
        conf["partitioner"] = partitioner
    p = Producer(conf)
    for r in records:
        kw = {}
        if r.get("partition") is not None:
            kw["partition"] = r["partition"]
        if r.get("timestamp") is not None:
            kw["timestamp"] = r["timestamp"]
        key = r.get("key")
        value = r.get("value")
        p.produce(topic, key=None if key is None else key.encode(), value=None if value is None else value.encode(), **kw)
    if p.flush(30) != 0:
        sys.exit("produce did not complete")


def consume(broker, topic):
    c = Consumer({"bootstrap.servers": broker, "group.id": "verify", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    out = []
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None or not md.partitions:
            print("[]")
            return
        ends = {}
        for p in md.partitions:
            _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > 0:
                ends[p] = high
        c.assign([TopicPartition(topic, p, 0) for p in ends])
        pos = {p: 0 for p in ends}
        deadline = time.monotonic() + 20
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            msgs = c.consume(1000, timeout=0.1)
            for m in msgs:
                if m.error():
                    continue
                pos[m.partition()] = m.offset() + 1
                k, v = m.key(), m.value()
                out.append({"partition": m.partition(), "offset": m.offset(),
                            "key": None if k is None else k.hex(), "value": None if v is None else v.hex()})
    finally:
        c.close()
    print(json.dumps(out))


def partitions(broker, topic):
    md = AdminClient({"bootstrap.servers": broker}).list_topics(topic, timeout=10).topics.get(topic)
    print(0 if md is None or md.error is not None else len(md.partitions))


def main():
    cmd, broker, *rest = sys.argv[1:]
    if cmd == "create":
        create(broker, rest)
    elif cmd == "produce":
        produce(broker, *rest[:2])
    elif cmd == "consume":
        consume(broker, rest[0])
    elif cmd == "partitions":
        partitions(broker, rest[0])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
