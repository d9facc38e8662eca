"""Each format of a trigger's records is read into the record's view: JSON, Avro in each
framing (Confluent's wire format, plain, single-object) and bytes; a value that is not of
the format is a ``MappingError`` naming the fault, never another exception."""

from __future__ import annotations

import base64
import io
import struct
from decimal import Decimal
from typing import Any

import fastavro
import orjson
import pytest
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form
from trigger_kit import record, trigger

from services.gateway.triggers.formats import decode_value, view
from services.gateway.triggers.templates import MappingError

SCHEMA: dict[str, Any] = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "n", "type": "int"},
    {"name": "blob", "type": "bytes"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6,
                               "scale": 2}}]}
ORDER: dict[str, Any] = {"id": "A-1", "n": 3, "blob": b"\x00\xff", "price": Decimal("0.01")}


def _avro_body(value: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parse_schema(SCHEMA), value)
    return out.getvalue()


def _avro(framing: str) -> Any:
    return trigger(format="avro", avro={"schema": SCHEMA, "framing": framing})


def test_json() -> None:
    assert decode_value(trigger(), orjson.dumps({"a": [1, None]})) == {"a": [1, None]}
    with pytest.raises(MappingError, match=r"^value: not JSON"):
        decode_value(trigger(), b"\xff{")


@pytest.mark.parametrize(("framing", "frame"), [
    ("confluent", lambda body: b"\x00" + struct.pack(">I", 42) + body),
    ("plain", lambda body: body),
    ("single-object", lambda body: b"\xc3\x01" + bytes.fromhex(fingerprint(
        to_parsing_canonical_form(parse_schema(SCHEMA)), "CRC-64-AVRO")) + body),
])
def test_avro_in_each_framing(framing: str, frame: Any) -> None:
    decoded = decode_value(_avro(framing), frame(_avro_body(ORDER)))
    assert decoded == {"id": "A-1", "n": 3, "blob": base64.b64encode(b"\x00\xff").decode(),
                       "price": "0.01"}
    orjson.dumps(decoded)  # the view is JSON


@pytest.mark.parametrize(("framing", "value", "fault"), [
    ("confluent", b"\x01\x00\x00\x00\x01abc", "not in the Confluent wire format"),
    ("confluent", b"\x00\x00", "not in the Confluent wire format"),
    ("single-object", b"\xc3\x01" + bytes(8) + b"x", "not Avro single-object encoding"),
    ("plain", b"\x02", "not Avro of the trigger's schema"),
    ("plain", b"\x80", "not Avro of the trigger's schema"),
    ("plain", b"", "not Avro of the trigger's schema"),
])
def test_avro_that_does_not_fit_is_named(framing: str, value: bytes, fault: str) -> None:
    with pytest.raises(MappingError, match=f"^value: {fault}"):
        decode_value(_avro(framing), value)


def test_avro_with_bytes_left_over_is_refused() -> None:
    with pytest.raises(MappingError, match="bytes left after the Avro record"):
        decode_value(_avro("plain"), _avro_body(ORDER) + b"\x00\x00")


def test_bytes_are_their_base64_text() -> None:
    assert decode_value(trigger(format="bytes"), b"\x00\xffhi") == "AP9oaQ=="


def test_a_tombstone_is_null_in_every_format() -> None:
    for settings in (trigger(), trigger(format="bytes"), _avro("plain")):
        assert decode_value(settings, None) is None


def test_the_view_of_a_record() -> None:
    seen = view(trigger(), record(b"[1]", key=b"\xff\xfe", headers=(
        ("a", b"1"), ("a", b"2"), ("bin", b"\xff"))))
    assert seen == {"value": [1], "key": "//4=", "headers": {"a": "2", "bin": "/w=="},
                    "topic": "shop.orders", "partition": 2, "offset": 7,
                    "timestamp": 1_722_000_000_000}
    assert view(trigger(), record(b"1", key=None))["key"] is None
