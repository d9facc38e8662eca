"""The JSON values the gateway accepts: what PostgreSQL, orjson and Avro can carry.

PostgreSQL ``text`` and ``jsonb`` cannot hold U+0000, orjson cannot encode integers
beyond 64 bits and writes NaN and the infinities as ``null``. A value that would break
one of them further down is rejected at the edge, naming the JSON path of the first
offending value in document order, e.g. ``input.a.b[3]: contains U+0000``.

The walk is iterative (an explicit stack), so a deeply nested value cannot exhaust the
interpreter's recursion limit, and it builds a path only for the value it reports.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (the outermost one is level 1)."""
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_MAX_KEY_CHARS = 60

# A path is built backwards: (parent link, key or index), or None at the root.
_Link = tuple[Any, str | int] | None


def first_fault(value: Any, root: str) -> str | None:
    """Find the first value the database or the Kafka codec could not hold.

    Args:
        value: a value decoded from JSON (dicts, lists, str, int, float, bool, None).
        root: the name of ``value`` in paths, e.g. ``"input"``.

    Returns:
        ``"<path>: <fault>"`` for the first string or key with U+0000, integer outside
        signed 64 bits, NaN or infinity, array or object nested deeper than
        ``MAX_DEPTH``, or non-JSON value, in document order; ``None`` when there is none.
    """
    stack: list[tuple[Any, _Link, int]] = [(value, None, 0)]
    while stack:
        item, link, depth = stack.pop()
        if link is not None and isinstance(link[1], str) and "\x00" in link[1]:
            return f"{format_path(root, link)}: the key contains U+0000"
        fault = _scalar_fault(item)
        if fault is None and isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                fault = f"nested deeper than {MAX_DEPTH} levels"
            else:
                children = item.items() if isinstance(item, dict) else enumerate(item)
                stack.extend((child, (link, key), depth + 1)
                             for key, child in reversed(list(children)))
        if fault is not None:
            return f"{format_path(root, link)}: {fault}"
    return None


def _scalar_fault(item: Any) -> str | None:
    if item is None or isinstance(item, bool | dict | list):
        return None
    if isinstance(item, str):
        return "contains U+0000" if "\x00" in item else None
    if isinstance(item, int):
        if INT64_MIN <= item <= INT64_MAX:
            return None
        return "integer outside the signed 64-bit range"
    if isinstance(item, float):
        return None if math.isfinite(item) else "not a finite number (NaN or infinity)"
    return f"not a JSON value ({type(item).__name__})"


def format_path(root: str, link: _Link) -> str:
    """The path of a value, e.g. ``input.a["b c"][3]``, from its link chain.

    Args:
        root: the name of the outermost value.
        link: ``(parent link, key or index)``, or ``None`` for the root itself.

    Returns:
        The path; object keys that are not plain names are quoted as JSON strings
        (U+0000 shows as ``\\u0000``) and cut to 60 characters.
    """
    parts: list[str] = []
    while link is not None:
        link, key = link
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _NAME.match(key) and len(key) <= _MAX_KEY_CHARS:
            parts.append(f".{key}")
        else:
            shown = key if len(key) <= _MAX_KEY_CHARS else key[:_MAX_KEY_CHARS] + "…"
            parts.append(f"[{orjson.dumps(shown).decode()}]")
    return root + "".join(reversed(parts))
