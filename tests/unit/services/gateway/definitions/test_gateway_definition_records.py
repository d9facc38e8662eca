"""The definitions topic's records: single-object Avro that round-trips, and clear
errors for anything else."""

from __future__ import annotations

import pytest

from headwater import codec
from headwater.announcement import WorkerAnnounced
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError
from services.gateway.definitions import records as definition_records

SPEC = {"name": "greet", "nodes": [{"id": "a", "task": "t.a", "input": {"x": [1, 2.5, None]}}]}
SAMPLES = [
    DefinitionStored("greet", 1, SPEC, None, "d" * 64, 1_700_000_000_000),
    DefinitionStored("greet", 2**31 - 1, SPEC, {"type": "object", "required": ["who"]},
                     "e" * 64, 0),
    DefinitionHead("greet", 3, False, 1_700_000_000_001),
    DefinitionHead("greet", 3, True, 1_700_000_000_002),
]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record: DefinitionStored | DefinitionHead) -> None:
    data = definition_records.encode(record)
    assert data == codec.encode(record)  # the one codec of every record
    assert data[:codec.HEADER_SIZE] == codec.fingerprint_header(type(record).__name__)
    assert definition_records.decode(data) == record


def test_the_two_schemas_have_distinct_fingerprints() -> None:
    assert (codec.fingerprint_header("DefinitionStored")
            != codec.fingerprint_header("DefinitionHead"))


@pytest.mark.parametrize(("data", "message"), [
    (None, "tombstone"),
    (b"", "no C3 01 marker"),
    (b"{\"name\": \"x\"}", "no C3 01 marker"),
    (b"\xc3\x01" + b"\x00" * 8 + b"\x02", "unknown schema fingerprint"),
    (codec.fingerprint_header("TaskSucceeded") + b"\x00",
     "a TaskSucceeded record, not a DefinitionStored or DefinitionHead"),
    (codec.encode(WorkerAnnounced("w", "q", ("t",), 1, 0, "v", "h", 1, 0, 0, 1)),
     "a WorkerAnnounced record, not a DefinitionStored or DefinitionHead"),
    (definition_records.encode(SAMPLES[0])[:-3], "bad DefinitionStored body"),
    (definition_records.encode(SAMPLES[2]) + b"\x00", "trailing bytes"),
    # name "g", version 1, spec "{x" (not JSON), input_schema null, digest "d", at_ms 0,
    # tenant null
    (codec.fingerprint_header("DefinitionStored") + b"\x02g\x02\x04{x\x08null\x02d\x00\x00",
     "bad DefinitionStored body: JSONDecodeError"),
])
def test_what_decode_refuses(data: bytes | None, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        definition_records.decode(data)


@pytest.mark.parametrize("record", [
    DefinitionHead("greet", 2**31, False, 0),
    DefinitionStored("greet", 2**31, SPEC, None, "d" * 64, 0),
    DefinitionStored("greet", -(2**31) - 1, SPEC, None, "d" * 64, 0),
], ids=lambda r: f"{type(r).__name__}-{r.version}")
def test_a_version_beyond_an_avro_int_does_not_encode(record: DefinitionStored
                                                      | DefinitionHead) -> None:
    with pytest.raises(ValueError, match=r"does not fit its schema: version: -?\d+ is "
                                         r"beyond an Avro int"):
        definition_records.encode(record)


def test_a_spec_or_input_schema_that_is_not_json_does_not_encode() -> None:
    with pytest.raises(ValueError, match="DefinitionStored does not fit its schema"):
        definition_records.encode(DefinitionStored("g", 1, {1, 2}, None, "d", 0))
    with pytest.raises(ValueError, match="DefinitionStored does not fit its schema"):
        definition_records.encode(DefinitionStored("g", 1, SPEC, {"a": {1}}, "d", 0))
