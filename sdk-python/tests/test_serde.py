import json
import struct

import pytest

from polystreams import serde


@pytest.mark.parametrize(
    "name,obj,raw",
    [
        ("bytes", b"\x00\xffab", b"\x00\xffab"),
        ("string", "héllo", "héllo".encode()),
        ("json", {"a": [1, 2.5, None, "é"]}, '{"a":[1,2.5,null,"é"]}'.encode()),
        ("long", -2, b"\xff" * 7 + b"\xfe"),
        ("long", 2**63 - 1, b"\x7f" + b"\xff" * 7),
        ("integer", 258, b"\x00\x00\x01\x02"),
        ("double", 1.5, struct.pack(">d", 1.5)),
    ],
)
def test_each_serde_matches_kafka_bytes(name: str, obj: object, raw: bytes) -> None:
    assert serde.encode(name, obj) == raw
    assert serde.decode(name, raw) == obj


@pytest.mark.parametrize("name", serde.SERDE_NAMES)
def test_null_is_none_in_every_serde(name: str) -> None:
    assert serde.encode(name, None) is None
    assert serde.decode(name, None) is None
    data, lengths, failures = serde.encode_column(name, [None, None])
    assert (data, lengths, failures) == (b"", [-1, -1], {})
    items, failures = serde.decode_column(name, b"", [-1, -1])
    assert items == [None, None] and not failures


def test_json_is_compact_utf8_not_ascii_escaped() -> None:
    data, lengths, failures = serde.encode_column("json", [{"k": "ü", "n": [1, 2]}, "x"])
    assert not failures
    assert data == '{"k":"ü","n":[1,2]}"x"'.encode()
    assert lengths == [len('{"k":"ü","n":[1,2]}'.encode()), 3]


def test_string_column_round_trip_with_nulls_empty_and_non_ascii() -> None:
    items = ["a", None, "", "日本", "zz"]
    data, lengths, failures = serde.encode_column("string", items)
    assert not failures
    assert lengths == [1, -1, 0, 6, 2]
    assert data == "a日本zz".encode()
    back, failures = serde.decode_column("string", data, lengths)
    assert back == items and not failures


@pytest.mark.parametrize("name,items", [("long", [1, -1, 2**40]), ("integer", [1, -1, 2**30]), ("double", [0.5, -2.0, 1e300])])
def test_fixed_width_columns(name: str, items: list[object]) -> None:
    data, lengths, failures = serde.encode_column(name, items)
    assert not failures
    back, failures = serde.decode_column(name, data, lengths)
    assert back == items and not failures
    data2, lengths2, _ = serde.encode_column(name, [items[0], None, items[1]])
    assert lengths2[1] == -1
    assert serde.decode_column(name, data2, lengths2)[0] == [items[0], None, items[1]]


def test_double_accepts_ints() -> None:
    assert serde.encode_column("double", [1, 2.0])[0] == struct.pack(">2d", 1.0, 2.0)


def test_decode_failures_are_per_record() -> None:
    data = b"ok" + b"\xff\xfe" + b"fine"
    items, failures = serde.decode_column("string", data, [2, 2, 4])
    assert items == ["ok", None, "fine"]
    assert list(failures) == [1] and failures[1].startswith("UnicodeDecodeError: ")

    items, failures = serde.decode_column("json", b'{"a":1}{bad', [7, 4])
    assert items == [{"a": 1}, None]
    assert failures[1].startswith("JSONDecodeError: ")

    items, failures = serde.decode_column("long", b"\x00" * 8 + b"\x01\x02", [8, 2])
    assert items == [0, None]
    assert failures == {1: "ValueError: long serde: want 8 bytes, got 2"}


def test_malformed_column_fails_every_record() -> None:
    items, failures = serde.decode_column("string", b"abc", [1, 1])
    assert items == [None, None]
    assert set(failures) == {0, 1} and "malformed" in failures[0]


def test_unknown_serde() -> None:
    _, failures = serde.decode_column("avro", b"a", [1])
    assert "unknown serde 'avro'" in failures[0]
    with pytest.raises(ValueError, match="avro"):
        serde.encode("avro", b"x")


@pytest.mark.parametrize(
    "name,bad,message",
    [
        ("string", 5, "TypeError: string serde: want str, got int"),
        ("bytes", "text", "TypeError: bytes serde: want bytes, got str"),
        ("long", 1.5, "TypeError: long serde: want int, got float"),
        ("long", 2**63, "OverflowError: long serde: 9223372036854775808 does not fit in 64 bits"),
        ("integer", 2**31, "OverflowError: integer serde: 2147483648 does not fit in 32 bits"),
        ("double", "1.5", "TypeError: double serde: want float, got str"),
        ("json", {1, 2}, "TypeError: Object of type set is not JSON serializable"),
    ],
)
def test_encode_failures_are_per_record(name: str, bad: object, message: str) -> None:
    good = {"string": "x", "bytes": b"x", "long": 1, "integer": 1, "double": 1.0, "json": [1]}[name]
    data, lengths, failures = serde.encode_column(name, [good, bad, good])
    assert failures == {1: message}


def test_bytes_accepts_bytes_like() -> None:
    data, lengths, failures = serde.encode_column("bytes", [bytearray(b"ab"), memoryview(b"c"), b""])
    assert (data, lengths, failures) == (b"abc", [2, 1, 0], {})


def test_json_round_trip_preserves_types() -> None:
    objs = [{"n": 1, "f": 1.25, "s": "x", "l": [True, None]}, 3, "s", [1]]
    data, lengths, _ = serde.encode_column("json", objs)
    back, _ = serde.decode_column("json", data, lengths)
    assert back == objs
    assert json.loads(data[: lengths[0]]) == objs[0]


@pytest.mark.parametrize(
    "name,good,bad",
    [
        ("long", [0, -1, 2**63 - 1, True], ["1", 1.5, 2**63]),
        ("integer", [0, -(2**31)], [2**31, "x"]),
        ("double", [0.5, 3, -1e300], ["x", []]),
        ("string", ["", "é"], [b"x", 1, "\ud800"]),
        ("json", [{"a": [1]}, "x", 1.5], [{1, 2}, object()]),
        ("bytes", [b"", b"\x00", bytearray(b"ab")], ["x", 1]),
    ],
)
def test_fast_encoder_agrees_with_encode(name: str, good: list[object], bad: list[object]) -> None:
    enc = serde.encoder(name)
    assert enc is not None
    for v in good:
        assert enc(v) == serde.encode(name, v)
    for v in bad:
        with pytest.raises(Exception):
            enc(v)
        with pytest.raises(Exception):
            serde.encode(name, v)
    assert serde.encoder("avro") is None


@pytest.mark.parametrize(
    "raw",
    [b'{"a": [1, 2.5, "x"], "b": null}', b' {"a": 1}', b'{"a": 1}\n', b"NaN", b'"\xc3\xa9"', b"[]", b"7"],
)
def test_json_decodes_as_json_loads(raw: bytes) -> None:
    # The JSON decoder calls json's scanner directly (a fast path); it must
    # agree with json.loads, surrounding whitespace included.
    assert repr(serde.decode("json", raw)) == repr(json.loads(raw))


@pytest.mark.parametrize("raw", [b'{"a": 1} x', b'{"a": 1}{}', b"", b"  ", b"{"])
def test_json_refuses_what_json_loads_refuses(raw: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(raw)
    values, failures = serde.decode_column("json", raw, [len(raw)])
    assert values == [None] and 0 in failures


def test_avro_names_the_schema_registry_serde() -> None:
    from polystreams import avro

    assert avro() == "avro"
    schema = {"type": "record", "name": "Priced", "fields": [{"name": "id", "type": "long"}]}
    assert avro(schema) == 'avro({"type":"record","name":"Priced","fields":[{"name":"id","type":"long"}]})'
    assert avro('{"type":"string"}') == 'avro({"type":"string"})'


def test_json_schema_names_the_schema_registry_serde() -> None:
    from polystreams import json_schema

    assert json_schema() == "json-schema"
    assert json_schema({"type": "object"}) == 'json-schema({"type":"object"})'


def test_protobuf_names_the_schema_registry_serde() -> None:
    from polystreams import protobuf

    assert protobuf() == "protobuf"
    assert protobuf('syntax = "proto3"; message M { int64 id = 1; }') == 'protobuf(syntax = "proto3"; message M { int64 id = 1; })'
    assert protobuf("message M {}", message="M") == "protobuf(message M {}, message=M)"
    assert protobuf(message="shop.Refund") == "protobuf(message=shop.Refund)"


def test_an_ascii_json_column_decodes_as_record_by_record() -> None:
    # The column is scanned in one str where it is ASCII: a record the scan
    # does not end exactly at its length (digits the next record would
    # extend, whitespace, a string that runs on, extra data, no JSON) must
    # decode, or fail, as it does alone.
    records = [b"12", b"34", b"-5", b" 7", b"8 ", b"", b"true", b"nul", b'"a', b'b"', b'{"x":[1,2]}',
               b"1e", b"5", b"[1", b"2]", b"NaN", b'"\\u00e9"', b"{}{}", b"0", b"01", b"[" * 100_000]
    data, lengths = b"".join(records), [len(r) for r in records]
    alone_items: list[object] = []
    alone_failures: dict[int, str] = {}
    for j, r in enumerate(records):
        try:
            alone_items.append(serde.decoder("json")(r))
        except Exception as e:  # noqa: BLE001 - the failure the column must report too
            alone_items.append(None)
            alone_failures[j] = f"{type(e).__name__}: {e}"
    assert serde.decode_column("json", data, lengths) == (alone_items, alone_failures)
    assert alone_items[:5] == [12, 34, -5, 7, 8] and alone_items[16] == "é"
    assert sorted(alone_failures) == [5, 7, 8, 9, 11, 13, 14, 17, 19, 20]
    # With nulls between, and a non-ASCII column (the record-by-record path).
    assert serde.decode_column("json", b"1" + b"2", [1, -1, 1]) == ([1, None, 2], {})
    assert serde.decode_column("json", '"é"'.encode() + b"3", [4, 1]) == (["é", 3], {})
