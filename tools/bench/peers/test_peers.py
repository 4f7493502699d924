"""Tests of make bench-peers' own logic (expectations, verification, report),
without a broker: cd tools/bench/peers && python -m pytest -q test_peers.py.
Nothing here measures or asserts on time."""
from __future__ import annotations

import json
import random
import struct

import peers

LONG = struct.Struct(">q").pack


def seeded(kind: str, topology: str, n: int = 500, keys: int = 20) -> tuple[list[tuple[bytes | None, bytes]], peers.Expected]:
    gen = peers.generate(kind, n, keys, random.Random(1))
    recs = [gen(i) for i in range(n)]
    return recs, peers.expect(topology, recs)


def test_map_values_passes_the_upper_cased_multiset_in_any_order() -> None:
    recs, want = seeded("text", "map_values")
    got = [(i % 8, None, v.upper()) for i, (_, v) in enumerate(reversed(recs))]
    assert peers.verify(peers.TOPOLOGIES["map_values"], want, got, "long") == []


def test_map_values_fails_a_lost_a_duplicated_and_an_unchanged_record() -> None:
    recs, want = seeded("text", "map_values")
    good = [(0, None, v.upper()) for _, v in recs]
    topo = peers.TOPOLOGIES["map_values"]
    assert "499 output records, want 500" in peers.verify(topo, want, good[1:], "long")[0]
    assert peers.verify(topo, want, good + good[:1], "long")
    swapped = good[:-1] + [(0, None, recs[-1][1])]
    assert any("digest" in p for p in peers.verify(topo, want, swapped, "long"))


def test_word_count_takes_the_last_value_per_key_in_offset_order() -> None:
    recs, want = seeded("lines", "word_count")
    assert sum(want.latest.values()) == 8 * len(recs)
    got = []
    for word, n in want.latest.items():
        got.append((1, word, LONG(n - 1)))
        got.append((1, word, LONG(n)))
    assert peers.verify(peers.TOPOLOGIES["word_count"], want, got, "long") == []
    wrong = got[:-1]  # the last word's final update lost
    problems = peers.verify(peers.TOPOLOGIES["word_count"], want, wrong, "long")
    assert problems and "wrong final value" in problems[0]


def test_sums_decode_json_numbers_and_json_keys_for_the_python_frameworks() -> None:
    recs, want = seeded("amounts", "sum_eos")
    assert want.latest == peers.expect("sum_alos", recs).latest
    total = sum(json.loads(v)["amount"] for _, v in recs)
    assert sum(want.latest.values()) == total
    got = [(2, json.dumps(k.decode()).encode(), str(v).encode()) for k, v in want.latest.items()]
    assert peers.verify(peers.TOPOLOGIES["sum_eos"], want, got, "json") == []
    # The same bytes read as Serdes.Long are wrong, and say why.
    problems = peers.verify(peers.TOPOLOGIES["sum_eos"], want, got, "long")
    assert problems and "is not a Serdes.Long" in problems[0]


def test_a_key_on_two_partitions_a_missing_and_an_extra_key_are_reported() -> None:
    _, want = seeded("amounts", "count")
    keys = sorted(want.latest)
    got = [(0, k, LONG(want.latest[k])) for k in keys[1:]]
    got.append((3, keys[1], LONG(want.latest[keys[1]])))
    got.append((0, b"stranger", LONG(1)))
    problems = "\n".join(peers.verify(peers.TOPOLOGIES["count"], want, got, "long"))
    assert "written to partitions 0 and 3" in problems
    assert "1 of 20 keys missing" in problems
    assert "1 unexpected keys" in problems


def test_report_prints_medians_rounds_ratios_and_failures() -> None:
    runs = []
    for r, (loop_s, ps_s) in enumerate([(10.0, 5.0), (12.0, 4.0), (11.0, 5.5)], start=1):
        runs.append(peers.Run("kfake", "count", "loop", r, 1_000_000, loop_s, 3.0, 50 << 20))
        runs.append(peers.Run("kfake", "count", "ps-python", r, 1_000_000, ps_s, 6.0, 200 << 20))
    runs.append(peers.Run("kfake", "count", "quix", 1, 1_000_000, problems=["3 keys with a wrong final value"]))
    text = peers.report(runs, {}, ["loop", "ps-python", "quix"], "loop")
    assert "| polystreams, Python host | 200k | 200k, 250k, 182k | 2.00x, 3.00x, 2.00x | 6.0 | 200 |" in text
    assert "| confluent-kafka loop (dict) | 91k |" in text
    assert "| Quix Streams | FAILED | FAILED | — |" in text
    assert "Quix Streams, round 1: 3 keys with a wrong final value" in text


def test_every_arm_names_a_known_output_encoding_and_every_topology_a_known_input() -> None:
    for arm in peers.ARMS.values():
        assert arm.out in ("long", "json"), arm.name
    for topo in peers.TOPOLOGIES.values():
        assert topo.input in ("text", "lines", "amounts"), topo.name
        assert topo.output in ("values", "latest"), topo.name
