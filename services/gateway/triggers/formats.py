"""Reading a trigger's records: the value in the trigger's ``format``, and the record's
view that its filter, input and id are written over (``view``).

- ``json``: the value is UTF-8 JSON (every digit of an integer kept: one beyond 64 bits is
  dead-lettered, as HTTP refuses it).
- ``avro``: the value is Avro binary of the trigger's schema, framed as its ``framing``
  says (``settings.FRAMINGS``); Avro's ``bytes`` and ``fixed`` become base64 text, its
  logical types (decimals, dates, UUIDs) their text, so the view is JSON.
- ``bytes``: the value's base64 text.

A record without a value (a tombstone) has the value null in every format. The key is
its UTF-8 text (base64 text when it is no UTF-8; null when absent) and each header's
value its UTF-8 text (the last of a repeated name).
"""

from __future__ import annotations

import base64
import io
import struct
from collections.abc import Sequence
from typing import Any

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form
from pydantic import TypeAdapter, ValidationError

from services.gateway.triggers.settings import TriggerSettings
from services.gateway.triggers.templates import MappingError

_JSON: TypeAdapter[Any] = TypeAdapter(Any)
"""A JSON value read as plain values (pydantic's parser: no float for a long integer)."""

CONFLUENT_MAGIC = b"\x00"
"""The first byte of the Confluent wire format, before the 4-byte schema id."""
SINGLE_OBJECT_MAGIC = b"\xc3\x01"
"""Avro single-object encoding's marker, before the 8-byte CRC-64-AVRO fingerprint."""


def decode_value(settings: TriggerSettings, value: bytes | None) -> Any:
    """The record's value read in the trigger's format.

    Raises:
        MappingError: the value is not of that format (``value: not JSON: ...``).
    """
    if value is None:
        return None
    if settings.format == "bytes":
        return base64.b64encode(value).decode()
    if settings.format == "json":
        try:  # integers keep every digit, as HTTP bodies' (edge.body.parse_json)
            return _JSON.validate_json(value)
        except ValidationError as e:
            raise MappingError(f"value: not JSON: {e.errors()[0]['msg']}") from e
    return _avro(settings, value)


def _avro(settings: TriggerSettings, value: bytes) -> Any:
    body = value
    if settings.framing == "confluent":
        if len(value) < 5 or value[:1] != CONFLUENT_MAGIC:
            raise MappingError("value: not in the Confluent wire format (a zero byte and a "
                               "4-byte schema id before the Avro body)")
        body = value[5:]
    elif settings.framing == "single-object":
        expected = SINGLE_OBJECT_MAGIC + bytes.fromhex(fingerprint(
            to_parsing_canonical_form(settings.avro_schema), "CRC-64-AVRO"))
        if value[:10] != expected:
            raise MappingError("value: not Avro single-object encoding of the trigger's "
                               f"schema (expected the header {expected.hex()}, got "
                               f"{value[:10].hex()})")
        body = value[10:]
    stream = io.BytesIO(body)
    try:
        record = fastavro.schemaless_reader(stream, settings.avro_schema, None)
    except (EOFError, ValueError, IndexError, TypeError, struct.error,
            UnicodeDecodeError) as e:
        raise MappingError(f"value: not Avro of the trigger's schema: {e!r}") from e
    if stream.tell() != len(body):
        raise MappingError(f"value: {len(body) - stream.tell()} bytes left after the Avro "
                           "record: not of the trigger's schema")
    return _json_safe(record)


def _json_safe(value: Any) -> Any:
    """An Avro value as JSON: bytes as base64 text, logical types as their text."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def text_of(data: bytes | None) -> str | None:
    """``data`` as UTF-8 text, or its base64 text when it is no UTF-8; None for None."""
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return base64.b64encode(data).decode()


def view(settings: TriggerSettings, record: Any) -> dict[str, Any]:
    """What a trigger's templates read of a Kafka record (an aiokafka
    ``ConsumerRecord``): ``{value, key, headers, topic, partition, offset, timestamp}``.

    Raises:
        MappingError: the value is not of the trigger's format.
    """
    headers: Sequence[tuple[str, bytes]] = record.headers or ()
    return {"value": decode_value(settings, record.value), "key": text_of(record.key),
            "headers": {k: text_of(v) for k, v in headers}, "topic": record.topic,
            "partition": record.partition, "offset": record.offset,
            "timestamp": record.timestamp}
