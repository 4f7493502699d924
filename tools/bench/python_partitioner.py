import time, sys
sys.path.insert(0, "sdk-python/src")  # run from the repository root
from polystreams._bundle import Executor
from polystreams.v1alpha1 import engine_pb2 as pb
N = 1000
keys = [f"key-{i}".encode() for i in range(N)]
vals = [f"value-{i}".encode() for i in range(N)]
def mk(i):
    return pb.Bundle(id=i, steps=[pb.Step(token=1, operation=pb.OPERATION_STREAM_PARTITION, node="KSTREAM-SINK-0000000001")],
        key_serde="string", value_serde="string", output_key_serde="string", output_value_serde="string",
        key_lengths=[len(k) for k in keys], keys=b"".join(keys), value_lengths=[len(v) for v in vals], values=b"".join(vals),
        topic="in", offsets=list(range(N)), timestamps=[0]*N, sink_topic="out", sink_partitions=8)
h = Executor({1: lambda topic, k, v, n: len(k) % n})
bs = [mk(i) for i in range(200)]
h.process(bs[0])
t = time.perf_counter()
for b in bs: r = h.process(b)
dt = time.perf_counter() - t
assert list(r.output_counts) == [1]*N
print(f"partitioner host cost: {dt/len(bs)/N*1e9:.0f} ns/record ({len(bs)} bundles of {N})")
