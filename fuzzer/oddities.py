"""Values that fit an input record's Avro schema but sit at the edges of what the rest of
Headwater expects: U+0000 and lone control characters (PostgreSQL ``text`` cannot hold
U+0000), Unicode digits that ``str.isdigit`` accepts and ``int`` may not, 32-bit
extremes, NaN and the infinities, JSON nested deeper than the gateway allows, times at
the ends of the range the coordinator takes.

``odd_record`` returns a copy of a record with one field replaced; the copy still
encodes (``headwater.codec``), so whether it decodes is the input topic's business.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from headwater import codec
from headwater.topics import MAX_AT_MS

ODD_STRINGS: tuple[str, ...] = (
    "", "\x00", "a\x00b", "²", "٣", "\u202e", "🙂" * 50, ":", "::", "deadline:n:²",
    "lease:n:-1", "retry:n:99999999999999999999", "retry:n:", "a/b[1]/2", "${input}",
    "${nodes.n.output}", "x" * 70_000, " ", "\n", "\ud7ff", "\ufffe",
)
ODD_INTS: tuple[int, ...] = (0, -1, 2**31 - 1, -(2**31), 1, 2)
ODD_LONGS: tuple[int, ...] = (0, 1, MAX_AT_MS, MAX_AT_MS - 1, 2**53, 10**15)
ODD_FLOATS: tuple[float, ...] = (float("nan"), float("inf"), float("-inf"), -0.0, -1.0,
                                 1e308, 5e-324, 2.0)


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


ODD_JSON: tuple[Any, ...] = (
    None, "\x00", {"\x00": 1}, {"k": "a\x00"}, _deep(65), _deep(200), _deep(252), _deep(254),
    2**63 - 1, -(2**63), 2**64 - 1,
    1.7976931348623157e308, list(range(5000)), {"x" * 300: 1}, "", [], {}, True,
    {"nodes": "not a list"}, {"name": "x", "nodes": [{"id": "n", "task": "t",
                                                       "queue": "no such queue!"}]},
)
"""JSON values (``spec``, ``input``, ``output``, ``checkpoint``, ``chunk``)."""

_AVRO_INT_FIELDS = frozenset({"attempt", "index", "chunk_seq"})
"""Fields whose Avro type is ``int`` (32-bit); the other integers are ``long``."""


def odd_value(name: str, value: Any, rng: random.Random) -> Any:
    """An odd value of the same Avro type as ``value`` for the field ``name``.

    Args:
        name: the field's name (``codec.JSON_FIELDS`` hold any JSON value).
        value: its current value.
        rng: the run's random numbers.
    """
    return rng.choice(_odd_of(name, value))


def _odd_of(name: str, value: Any) -> tuple[Any, ...]:
    """The odd values of the field ``name``'s type (``value`` is its current value)."""
    if name in codec.JSON_FIELDS:
        return ODD_JSON
    if isinstance(value, bool):
        return (not value,)
    if name == "index":
        return (None, *ODD_INTS)
    if isinstance(value, int):
        return ODD_INTS if name in _AVRO_INT_FIELDS else ODD_LONGS
    if isinstance(value, float):
        return ODD_FLOATS
    return ODD_STRINGS


def odd_record(record: Any, rng: random.Random, tries: int = 8) -> tuple[Any, str] | None:
    """A copy of ``record`` with one field (never ``workflow_id``, which must stay the
    key) replaced by an odd value that still encodes.

    Returns:
        ``(copy, "<field>=<value, cut to 40 characters>")``, or None when no odd value
        encoded in ``tries`` attempts.
    """
    names = [f.name for f in dataclasses.fields(record) if f.name != "workflow_id"]
    for _ in range(tries):
        name = rng.choice(names)
        changed = dataclasses.replace(record, **{name: odd_value(name, getattr(record, name),
                                                                 rng)})
        try:
            codec.encode(changed)
        except (ValueError, KeyError):
            continue
        return changed, f"{name}={getattr(changed, name)!r:.40}"
    return None


def odd_document(doc: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str]:
    """A copy of a JSON submission document with one member replaced by an odd value
    (``workflow_id`` kept; ``tenant`` and ``at_ms`` odd too)."""
    name = rng.choice(["spec", "input", "tenant", "at_ms"])
    if name == "at_ms":
        value: Any = rng.choice(ODD_LONGS)
    elif name == "tenant":
        value = rng.choice(ODD_STRINGS)
    else:
        value = rng.choice(ODD_JSON)
    return {**doc, name: value}, f"{name}={value!r:.40}"


def edge_values(record: Any) -> list[tuple[str, Any]]:
    """Every ``(field, odd value)`` pair for ``record`` (never ``workflow_id``): each
    field with each odd value of its type, in field order."""
    return [(f.name, v) for f in dataclasses.fields(record) if f.name != "workflow_id"
            for v in _odd_of(f.name, getattr(record, f.name))]
