"""Tests of make bench-peers' own logic (expectations, verification, report),
without a broker: cd tools/bench/peers && python -m pytest -q test_peers.py.
Nothing here measures or asserts on time."""
from __future__ import annotations

import json
import random
import struct

import peers

LONG = struct.Struct(">q").pack


ORIGIN = peers.origin_ms(1_796_190_000.5)


def seeded(kind: str, topology: str, n: int = 500, keys: int = 20) -> tuple[list[peers.Record], peers.Expected]:
    gen = peers.generate(kind, n, keys, random.Random(1), ORIGIN)
    recs = [gen(i) for i in range(n)]
    table = None
    if peers.TOPOLOGIES[topology].table:
        rows = peers.generate("rates", keys, keys, random.Random(1), ORIGIN)
        table = [rows(i) for i in range(keys)]
    return recs, peers.expect(topology, recs, table)


def test_map_values_passes_the_upper_cased_multiset_in_any_order() -> None:
    recs, want = seeded("text", "map_values")
    got = [(i % 8, None, v.upper()) for i, (_, v, _) in enumerate(reversed(recs))]
    assert peers.verify(peers.TOPOLOGIES["map_values"], want, got, "long") == []


def test_map_values_fails_a_lost_a_duplicated_and_an_unchanged_record() -> None:
    recs, want = seeded("text", "map_values")
    good = [(0, None, v.upper()) for _, v, _ in recs]
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
    total = sum(json.loads(v)["amount"] for _, v, _ in recs)
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
    joined = [peers.Run("kfake", "join", "loop", 1, 1000, 1.0, 0.1, 1 << 20)]
    text = peers.report(joined, {}, ["loop", "faust"], "loop")
    assert "- Faust (faust-streaming): not run: Faust has no stream-table join" in text


def test_every_arm_names_a_known_output_encoding_and_every_topology_a_known_input() -> None:
    for arm in peers.ARMS.values():
        assert arm.out in ("long", "json"), arm.name
    for topo in peers.TOPOLOGIES.values():
        assert topo.input in ("text", "lines", "amounts", "events"), topo.name
        assert topo.output in ("values", "latest", "windows"), topo.name
        assert (topo.output == "windows") == (topo.window is not None), topo.name
        assert topo.table in (None, "rates"), topo.name
    for arm in peers.ARMS.values():
        assert set(arm.cannot) <= set(peers.TOPOLOGIES), arm.name


def test_window_starts_are_kafka_streams_windows_for() -> None:
    # TimeWindows.windowsFor: every start k * advance with start <= ts < start + size.
    for ts in [0, 1, 14_999, 15_000, 59_999, 60_000, 61_234, 1_796_187_654_321]:
        for size, advance in [(60_000, 60_000), (60_000, 15_000)]:
            want = [s for s in range(max(0, ts - size), ts + 1) if s % advance == 0 and s <= ts < s + size]
            assert list(peers.window_starts(ts, size, advance)) == want, (ts, size, advance)
    assert list(peers.window_starts(61_234, 60_000, 15_000)) == [15_000, 30_000, 45_000, 60_000]
    assert list(peers.window_starts(10, 60_000, 15_000)) == [0]


def test_events_are_ordered_in_time_and_span_ten_minutes_from_an_hour_boundary() -> None:
    recs, _ = seeded("events", "tumbling_count", n=1000)
    stamps = [ts for _, _, ts in recs]
    assert stamps == sorted(stamps)
    assert ORIGIN % 3_600_000 == 0 and stamps[0] == ORIGIN
    assert stamps[-1] - stamps[0] < peers.EVENT_SPAN_MS <= stamps[-1] - stamps[0] + peers.EVENT_SPAN_MS // 1000


def windowed_long(key: bytes, start: int, n: int) -> tuple[bytes, bytes]:
    """A record as Kafka Streams writes a windowed count: key + 8-byte start, Serdes.Long."""
    return key + struct.pack(">q", start), LONG(n)


def test_windowed_expectations_count_each_record_once_per_window() -> None:
    recs, tumbling = seeded("events", "tumbling_count", n=1000)
    _, hopping = seeded("events", "hopping_count", n=1000)
    _, sums = seeded("events", "hopping_sum", n=1000)
    assert sum(tumbling.latest.values()) == len(recs)
    # Hopping 60 s / 15 s: a record is in 4 windows (none near the epoch).
    assert sum(hopping.latest.values()) == 4 * len(recs)
    assert sum(sums.latest.values()) == 4 * sum(json.loads(v)["amount"] for _, v, _ in recs)
    # Ten minutes of events from an hour boundary: 10 tumbling windows a key.
    assert {int(k.split(b"@")[1]) for k in tumbling.latest} == {ORIGIN + m * 60_000 for m in range(10)}


def test_windowed_output_in_kafka_streams_encoding_passes_and_a_lost_window_fails() -> None:
    _, want = seeded("events", "hopping_count")
    topo = peers.TOPOLOGIES["hopping_count"]
    got = []
    for wk, n in want.latest.items():
        key, start = wk.rsplit(b"@", 1)
        got.append((1, *windowed_long(key, int(start), n - 1)))
        got.append((1, *windowed_long(key, int(start), n)))
    assert peers.verify(topo, want, got, "long") == []
    problems = peers.verify(topo, want, got[:-1], "long")
    assert problems and "wrong final value" in problems[0]
    problems = peers.verify(topo, want, got[:-2], "long")
    assert problems and "1 of" in problems[0] and "keys missing" in problems[0]
    # A window a second off is another window: missing, and unexpected.
    key, start = next(iter(want.latest)).rsplit(b"@", 1)
    shifted = [r for r in got if r[1] != key + struct.pack(">q", int(start))]
    shifted.append((1, *windowed_long(key, int(start) + 1000, want.latest[key + b"@" + start])))
    text = "\n".join(peers.verify(topo, want, shifted, "long"))
    assert "keys missing" in text and "1 unexpected keys" in text


def test_windowed_output_as_quix_json_passes_and_a_plain_long_key_is_refused() -> None:
    _, want = seeded("events", "tumbling_count")
    topo = peers.TOPOLOGIES["tumbling_count"]
    got = []
    for wk, n in want.latest.items():
        key, start = wk.rsplit(b"@", 1)
        value = json.dumps({"start": int(start), "end": int(start) + 60_000, "value": n}).encode()
        got.append((2, json.dumps(key.decode()).encode(), value))
    assert peers.verify(topo, want, got, "json") == []
    bare = [(0, b"7", LONG(3))]  # an unwindowed count is not a window result
    assert "is not a windowed key" in peers.verify(topo, want, bare, "long")[0]
    assert "not a JSON window result" in peers.verify(topo, want, [(0, b"7", b"3")], "json")[0]


def test_join_output_is_each_event_key_with_amount_times_rate() -> None:
    recs, want = seeded("events", "join")
    topo = peers.TOPOLOGIES["join"]
    assert want.records == len(recs)  # every key has a rate
    rates = {str(j).encode(): j % 7 + 1 for j in range(20)}
    got = [(0, k, b"%d" % (json.loads(v)["amount"] * rates[k])) for k, v, _ in recs if k is not None]
    assert peers.verify(topo, want, got, "long") == []
    # The amount alone (the table not joined) and one lost event both fail.
    unjoined = [(0, k, b"%d" % json.loads(v)["amount"]) for k, v, _ in recs]
    assert any("digest differs" in p for p in peers.verify(topo, want, unjoined, "long"))
    assert "499 output records, want 500" in peers.verify(topo, want, got[1:], "long")[0]
    # The same values under other keys fail too: the key is part of the check.
    rekeyed = [(0, b"x" + k, v) for _, k, v in got]
    assert any("digest differs" in p for p in peers.verify(topo, want, rekeyed, "long"))


def test_the_arms_flags_know_every_topology_and_its_windows() -> None:
    from arms import common
    assert common.TOPOLOGIES == list(peers.TOPOLOGIES)
    assert common.WINDOWS == {t.name: t.window for t in peers.TOPOLOGIES.values() if t.window}


def test_the_global_table_join_expects_what_the_table_join_does() -> None:
    _, want = seeded("events", "join_global")
    assert want == seeded("events", "join")[1]
    assert "join_global" in peers.ARMS["quix"].cannot and "join_global" in peers.ARMS["faust"].cannot
