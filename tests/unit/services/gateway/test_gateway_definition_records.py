"""The definitions topic's records: single-object Avro that round-trips, and clear
errors for anything else."""

from __future__ import annotations

import pytest

from headwater import codec
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError
from services.gateway import definition_records

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
    assert data[:codec.HEADER_SIZE] == codec.fingerprint_header(type(record).__name__)
    assert definition_records.decode(data) == record


def test_the_two_schemas_have_distinct_fingerprints() -> None:
    assert (codec.fingerprint_header("DefinitionStored")
            != codec.fingerprint_header("DefinitionHead"))


@pytest.mark.parametrize(("data", "message"), [
    (None, "tombstone"),
    (b"", "not a DefinitionStored or DefinitionHead"),
    (b"{\"name\": \"x\"}", "not a DefinitionStored or DefinitionHead"),
    (codec.fingerprint_header("TaskSucceeded") + b"\x00", "not a DefinitionStored"),
    (definition_records.encode(SAMPLES[0])[:-3], "bad DefinitionStored body"),
    (definition_records.encode(SAMPLES[2]) + b"\x00", "trailing bytes"),
])
def test_what_decode_refuses(data: bytes | None, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        definition_records.decode(data)


def test_a_version_beyond_an_avro_int_does_not_encode() -> None:
    with pytest.raises(ValueError, match="does not fit its schema"):
        definition_records.encode(DefinitionHead("greet", 2**31, False, 0))
