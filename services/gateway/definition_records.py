"""The records of the ``definitions`` topic as single-object Avro, like every Headwater
record (``headwater.codec``: the ``C3 01`` marker, the schema's CRC-64-AVRO fingerprint,
the Avro body; ``schemas/avro/DefinitionStored.avsc`` and ``DefinitionHead.avsc``).

They are not workflow records (``headwater.core.events``), so they are encoded and
decoded here; ``spec`` and ``input_schema`` travel as JSON documents in ``bytes``.
"""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import fastavro
import orjson
from fastavro.schema import parse_schema
from fastavro.validation import ValidationError, validate

from headwater import codec
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError

DefinitionRecord = DefinitionStored | DefinitionHead
_TYPES: dict[str, type[DefinitionStored] | type[DefinitionHead]] = {
    "DefinitionStored": DefinitionStored, "DefinitionHead": DefinitionHead}


@cache
def _schema(name: str) -> Any:
    return parse_schema(orjson.loads((codec.schema_dir() / f"{name}.avsc").read_bytes()))


def encode(record: DefinitionRecord) -> bytes:
    """The record as single-object Avro.

    Raises:
        ValueError: a field does not fit the schema (a spec that is not JSON, a version
            beyond an Avro ``int``).
    """
    name = type(record).__name__
    value: dict[str, Any] = dict(record.__dict__)
    try:
        if isinstance(record, DefinitionStored):
            value["spec"] = orjson.dumps(record.spec)
            value["input_schema"] = (None if record.input_schema is None
                                     else orjson.dumps(record.input_schema))
        # fastavro writes any integer into an Avro int: checked first (a version is one).
        validate(value, _schema(name), raise_errors=True)
        buf = io.BytesIO()
        buf.write(codec.fingerprint_header(name))
        fastavro.schemaless_writer(buf, _schema(name), value)
    except (TypeError, OverflowError, ValueError, ValidationError, orjson.JSONEncodeError) as e:
        raise ValueError(f"{name} does not fit its schema: {e}") from e
    return buf.getvalue()


def decode(data: bytes | None) -> DefinitionRecord:
    """Decode a record of the ``definitions`` topic.

    Raises:
        DecodeError: a tombstone, no marker, another schema, or a bad body (truncated,
            trailing bytes, JSON that does not parse).
    """
    if data is None:
        raise DecodeError("a tombstone (null value), not a definition record")
    name = next((n for n in _TYPES if data[:codec.HEADER_SIZE] == codec.fingerprint_header(n)),
                None)
    if name is None:
        raise DecodeError("not a DefinitionStored or DefinitionHead record")
    buf = io.BytesIO(data)
    buf.seek(codec.HEADER_SIZE)
    try:
        value: dict[str, Any] = fastavro.schemaless_reader(  # type: ignore[assignment]
            buf, _schema(name), None)
        if buf.tell() != len(data):
            raise DecodeError(f"{len(data) - buf.tell()} trailing bytes after {name}")
        if name == "DefinitionStored":
            value["spec"] = orjson.loads(value["spec"])
            if value["input_schema"] is not None:
                value["input_schema"] = orjson.loads(value["input_schema"])
        return _TYPES[name](**value)
    except DecodeError:
        raise
    except Exception as e:  # fastavro raises many types on bad input; all mean the same
        raise DecodeError(f"bad {name} body: {type(e).__name__}: {e}") from e
