"""The records of the ``definitions`` topic: ``DefinitionStored`` and ``DefinitionHead``
(``headwater.core.definitions``), single-object Avro like every Headwater record
(``headwater.codec``; ``schemas/avro/DefinitionStored.avsc`` and ``DefinitionHead.avsc``).

Only the codec encodes and decodes them; this module refuses, on the way in, what
does not belong on the topic.
"""

from __future__ import annotations

from headwater import codec
from headwater.core.definitions import DefinitionHead, DefinitionStored
from headwater.errors import DecodeError

DefinitionRecord = DefinitionStored | DefinitionHead
_NAMES = frozenset({DefinitionStored.__name__, DefinitionHead.__name__})


def encode(record: DefinitionRecord) -> bytes:
    """The record as single-object Avro (``headwater.codec.encode``).

    Raises:
        ValueError: a field does not fit the schema (a spec or input schema that is not
            JSON, a version beyond an Avro ``int``).
    """
    return codec.encode(record)


def decode(data: bytes | None) -> DefinitionRecord:
    """Decode a record of the ``definitions`` topic (``headwater.codec.decode``).

    Raises:
        DecodeError: a tombstone, no marker, an unknown fingerprint, a record of another
            type (named in the message), or a bad body (truncated, trailing bytes, JSON
            that does not parse).
    """
    if data is None:
        raise DecodeError("a tombstone (null value), not a definition record")
    name = codec.record_type(data)
    if name not in _NAMES:
        raise DecodeError(f"a {name} record, not a DefinitionStored or DefinitionHead")
    record: DefinitionRecord = codec.decode(data)
    return record
