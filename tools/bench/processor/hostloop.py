"""The Python host's side of a processor bundle, without protobuf: the work
an SDK executor adds per record once the columns are decoded (the C++
protobuf runtime decodes a bytes column without copying it per record).

  stateless   split the records' columns, value -> value, join the outputs
              (a map_values bundle: the floor).
  metadata    stateless, each call also given a RecordMetadata object
              (timestamp, headers, topic, partition, offset): what a
              function that did not opt in would pay if every call got one.
  processor   the same records plus a store view (the current entry of each
              distinct key), an overlay dict built from it, per record
              get / put / forward through a ProcessorContext-like object,
              and the op columns joined for the answer.

Run by tools/bench/processor (main.go) with its parameters; prints
"name ns_per_record" lines, one per round.
"""

import random
import struct
import sys
import time


def split(lengths, data):
    out, o = [], 0
    for n in lengths:
        if n < 0:
            out.append(None)
        else:
            out.append(data[o:o + n])
            o += n
    return out


def column(values):
    lengths, parts = [], []
    for v in values:
        if v is None:
            lengths.append(-1)
        else:
            lengths.append(len(v))
            parts.append(v)
    return lengths, b"".join(parts)


class Store:
    """The host's view of a store for one bundle: prefetched entries under
    the bundle's own writes; ops record the writes in order."""

    __slots__ = ("known", "ops")

    def __init__(self, keys, values, ops):
        self.known = dict(zip(keys, values))
        self.ops = ops

    def get(self, key):
        try:
            return self.known[key]
        except KeyError:
            raise LookupError(f"key {key!r} was not prefetched") from None

    def put(self, key, value):
        self.known[key] = value
        self.ops.append((1, 0, key, value))


class RecordMetadata:
    __slots__ = ("timestamp", "headers", "topic", "partition", "offset")

    def __init__(self, timestamp, headers, topic, partition, offset):
        self.timestamp = timestamp
        self.headers = headers
        self.topic = topic
        self.partition = partition
        self.offset = offset


class Context:
    __slots__ = ("ops", "ts")

    def __init__(self, ops):
        self.ops = ops
        self.ts = 0

    def forward(self, key, value):
        self.ops.append((3, 0, key, value))


def main():
    records, distinct, value_size, rounds = (int(a) for a in sys.argv[1:5])
    rng = random.Random(1)
    keys = [b"customer-%06d" % rng.randrange(distinct) for _ in range(records)]
    values = [bytes(rng.randrange(97, 123) for _ in range(value_size)) for _ in range(records)]
    kl, kc = column(keys)
    vl, vc = column(values)
    uniq = list(dict.fromkeys(keys))
    state = [None if i % 2 else b"\0" * 8 + b"s" * (value_size - 8) for i in range(len(uniq))]
    sl, sc = column(uniq)
    svl, svc = column(state)

    def stateless():
        vs = split(vl, vc)
        out = [v.upper() for v in vs]
        return column(out)

    tss = list(range(records))

    def metadata():
        vs = split(vl, vc)
        out = [upper(v, RecordMetadata(t, (), "orders", 3, t)) for v, t in zip(vs, tss)]
        return column(out)

    def upper(v, meta):
        return v.upper()

    def processor():
        ks, vs = split(kl, kc), split(vl, vc)
        ops = []
        store = Store(split(sl, sc), split(svl, svc), ops)
        ctx = Context(ops)
        counts = []
        for k, v in zip(ks, vs):
            before = len(ops)
            cur = store.get(k)
            n = struct.unpack_from(">q", cur)[0] if cur else 0
            nxt = struct.pack(">q", n + 1) + v[8:]
            store.put(k, nxt)
            ctx.forward(k, nxt)
            counts.append(len(ops) - before)
        kinds = [o[0] for o in ops]
        targets = [o[1] for o in ops]
        return counts, kinds, targets, column(o[2] for o in ops), column(o[3] for o in ops)

    for fn in (stateless, metadata, processor):
        for _ in range(3):
            fn()
    n = 200
    for _ in range(rounds):
        for name, fn in (("stateless", stateless), ("metadata", metadata), ("processor", processor)):
            t = time.perf_counter_ns()
            for _ in range(n):
                fn()
            print(name, (time.perf_counter_ns() - t) / (n * records))


main()
