"""Avro single-object encoding of every record (``headwater.codec``): each schema file
has its record type, each record round-trips, the header is the marker and the schema's
fingerprint, and what encode refuses. What decode refuses: ``test_codec_decoding.py``."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from codec_samples import AT, SAMPLES, SPEC, WF, body_samples, sample_id, schema_docs, standalone
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from headwater import codec
from headwater.announcement import WorkerAnnounced
from headwater.core import events as ev
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.log_lines import TaskLogLines
from headwater.operations import OperationRecorded
from headwater.trigger_records import TriggerStored
from headwater.webhooks import WebhookStored


def crc64_avro(data: bytes) -> int:
    """CRC-64-AVRO as written out in the Avro specification."""
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)
    fp = empty
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


# -- every schema has a record type and round-trips --------------------------------------


def test_every_schema_file_has_a_record_type_and_back() -> None:
    assert set(schema_docs()) == set(codec.RECORD_TYPES)
    assert {type(r).__name__ for r in SAMPLES} == set(codec.RECORD_TYPES)
    bodies = {type(b).__name__ for b in body_samples()}
    assert bodies == {cls.__name__ for cls in ev.Body.__args__}


@pytest.mark.parametrize("record", SAMPLES, ids=sample_id)
def test_round_trip(record: Any) -> None:
    data = codec.encode(record)
    decoded = codec.decode(data)
    assert decoded == record
    assert type(decoded) is type(record)


@pytest.mark.parametrize("name", sorted(codec.RECORD_TYPES))
def test_header_is_marker_and_crc64_fingerprint_of_the_schema_file(name: str) -> None:
    docs = schema_docs()
    canonical = to_parsing_canonical_form(parse_schema(standalone(name, docs), _write_hint=False))
    expected = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    assert expected == struct.pack("<Q", crc64_avro(canonical.encode()))  # little-endian
    header = codec.fingerprint_header(name)
    assert header == b"\xc3\x01" + expected
    assert len(header) == codec.HEADER_SIZE
    record = next(r for r in SAMPLES if type(r).__name__ == name)
    assert codec.encode(record)[: codec.HEADER_SIZE] == header


def test_crc64_reference_vector() -> None:
    # The Avro specification's fingerprint of the schema "null".
    assert crc64_avro(b'"null"') == 7195948357588979594


def test_fingerprints_are_distinct() -> None:
    headers = [codec.fingerprint_header(n) for n in codec.RECORD_TYPES]
    assert len(set(headers)) == len(headers)


# -- what encode refuses ----------------------------------------------------------------

def test_encode_rejects_values_that_are_not_json() -> None:
    with pytest.raises(ValueError, match="TaskSucceeded does not fit its schema"):
        codec.encode(ev.TaskSucceeded(WF, "n", None, 1, AT, {1, 2}))
    with pytest.raises(KeyError):
        codec.encode(ev.HistoryEvent)


def test_a_signals_fields_are_a_json_document() -> None:
    record = ev.SignalSent(WF, "s", AT, None, "", {"a": [1, {"b": None}]})
    assert b'{"a":[1,{"b":null}]}' in codec.encode(record)
    with pytest.raises(ValueError, match="SignalSent does not fit its schema"):
        codec.encode(ev.SignalSent(WF, "s", AT, None, "", {"a": {1, 2}}))
    deep: Any = 0
    for _ in range(codec.MAX_JSON_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="fields: JSON nested deeper than"):
        codec.encode(ev.SignalSent(WF, "s", AT, None, "", deep))


def test_encode_out_of_range_long_raises_value_error() -> None:
    record = ev.TimerScheduled(WF, "t", 2**63, "n", None, 2, AT)
    with pytest.raises(ValueError):
        codec.encode(record)


@pytest.mark.parametrize("record", [
    ev.TaskSucceeded(WF, "n", None, 2**31, AT, None),
    ev.TaskSucceeded(WF, "n", -(2**31) - 1, 1, AT, None),
    ev.HistoryEvent(WF, 1, ev.MapExpanded(WF, "m", 2**31, AT)),
    DefinitionHead("g", 2**31, False, AT),
    WorkerAnnounced("w", "q", (), 1, 0, "v", "h", 2**32, 0, AT, 1),
], ids=lambda r: type(r).__name__)
def test_an_integer_beyond_an_avro_int_does_not_encode(record: Any) -> None:
    """fastavro would write it (an Avro ``int`` is a zig-zag varint like a ``long``):
    other Avro readers would not read it back."""
    with pytest.raises(ValueError, match="is beyond an Avro int"):
        codec.encode(record)
    smallest = ev.TaskSucceeded(WF, "n", -(2**31), 2**31 - 1, AT, None)
    assert codec.decode(codec.encode(smallest)) == smallest


def test_an_array_decodes_as_a_tuple_and_null_json_as_none() -> None:
    announced = next(r for r in SAMPLES if isinstance(r, WorkerAnnounced))
    assert codec.decode(codec.encode(announced)).tasks == ("embed", "ränk")
    stored = DefinitionStored("g", 1, SPEC, None, "d", AT)
    assert b"\x08null" in codec.encode(stored)  # the JSON document null, 4 bytes long
    assert codec.decode(codec.encode(stored)).input_schema is None
    deep: Any = 0
    for _ in range(codec.MAX_JSON_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ValueError, match="input_schema: JSON nested deeper than"):
        codec.encode(DefinitionStored("g", 1, SPEC, deep, "d", AT))


def test_record_types_are_the_event_dataclasses_and_the_others() -> None:
    others = {DefinitionStored, DefinitionHead, WorkerAnnounced, TaskLogLines, TriggerStored,
              WebhookStored, OperationRecorded}
    for name, cls in codec.RECORD_TYPES.items():
        assert dataclasses.is_dataclass(cls) and cls.__name__ == name
        assert cls in others or cls is getattr(ev, name)
    assert others <= set(codec.RECORD_TYPES.values())


def test_json_text_refuses_what_json_cannot_hold() -> None:
    assert codec.json_text({"a": [1, 2.5, None], "b": "null"}) == b'{"a":[1,2.5,null],"b":"null"}'
    assert codec.json_text(1e308) == b"1e+308"
    for value in (float("nan"), {"a": [None, (float("inf"),)]}, [None, {"x": -float("inf")}]):
        with pytest.raises(TypeError, match="NaN and Infinity are not JSON"):
            codec.json_text(value)
    with pytest.raises(TypeError):
        codec.json_text({1, 2})
