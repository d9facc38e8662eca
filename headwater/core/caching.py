"""Task result caching: a node's ``cache: {key, ttl}`` (and a code step's ``cache_key``),
and the ids of the caches that keep the results.

An attempt of a cached node first looks its key up: a *hit* records the output an
earlier attempt computed for the same key as its success, without dispatching it; a
*miss* goes on to its limits and its dispatch, and its success stores its output under
the key for ``ttl``. Each (tenant, task, resolved key) is kept by one *cache*, a
long-lived run of the coordinator whose id is a digest of the three (``cache_id``:
``cache::<digest>``), so that two tenants, or two tasks naming the same key, never share
an entry; the prefix ``cache::`` is reserved like a limiter's (``limits.reserved_id``).
The cache's rules are in ``headwater/core/kinds/cache/``, the attempt's side in
``headwater/core/machine/lookups.py``; docs/architecture.md §4o describes both.

Pure, as the core is.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from headwater.core.refs import parse_ref

KEY = "cache"
"""The spec field of a ``task`` or ``map`` node that caches its results."""
CACHE_PREFIX = "cache::"
"""The prefix of every cache's id; no submitted workflow may take it."""
CACHE_NODE = "cache"
"""The one node of a cache's spec."""
DAY_MS = 86_400_000
DEFAULT_TTL_MS = 7 * DAY_MS
"""How long an entry lives when the spec gives no ``ttl`` (7 days)."""
MAX_TTL_MS = 365 * DAY_MS
"""The longest ``ttl`` (365 days)."""
MAX_KEY_CHARS = 1000
"""The longest key a spec or a code step gives; a resolved key longer than this (a
whole document, say) is kept as the digest of its canonical JSON (``resolved_key``)."""
_FIELDS = frozenset({"key", "ttl"})
DURATION_PATTERN = r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$"
"""What a ``ttl`` given as a text is: a number and its unit."""
_DURATION = re.compile(DURATION_PATTERN)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": DAY_MS}
_ID_DIGITS = 40
"""Hex digits of the SHA-256 in a cache's id."""


@dataclass(frozen=True)
class CacheSpec:
    """A node's (or a code step's) cache.

    Attributes:
        key: the key: a text, or one ``${...}`` reference resolved per attempt (a map's
            may use ``${item}`` and ``${index}``); a code step's is a literal text;
            None: the attempt's input (the task is cached by what it is given).
        ttl_ms: how long an entry stored under it lives, ms.
    """

    key: str | None
    ttl_ms: int = DEFAULT_TTL_MS


def ttl_ms(value: Any, what: str = "ttl") -> int:
    """A ``ttl`` as ms: seconds as a number, or a duration text (``30s``, ``15m``,
    ``12h``, ``7d``; ``500ms``). ``what`` names the value in faults (a run's
    ``deadline`` takes the same durations: ``headwater/core/deadline.py``).

    Raises:
        ValueError: not such a value, or not from 1 ms to ``MAX_TTL_MS``.
    """
    if isinstance(value, bool):
        raise ValueError(f"a {what} is seconds or a duration such as 30s, 15m, 12h, 7d")
    if isinstance(value, int | float):
        scaled = value * 1000
    elif isinstance(value, str) and (m := _DURATION.fullmatch(value)):
        scaled = float(m.group(1)) * _UNIT_MS[m.group(2)]
    else:
        raise ValueError(f"a {what} is seconds or a duration such as 30s, 15m, 12h, 7d, not "
                         f"{str(value)[:40]!r}")
    try:
        finite = math.isfinite(scaled)
    except OverflowError:  # an integer of 400 digits
        finite = False
    if not finite:  # 1e308 seconds, or 400 digits of them
        raise ValueError(f"a {what} must be finite, and from 1 ms to "
                         f"{MAX_TTL_MS // DAY_MS} days, not {str(value)[:40]!r}")
    ms = round(scaled)
    if not 1 <= ms <= MAX_TTL_MS:
        raise ValueError(f"a {what} must be from 1 ms to {MAX_TTL_MS // DAY_MS} days, not "
                         f"{str(value)[:40]!r}")
    return ms


def parse_cache(raw: Mapping[str, Any], where: str, faults: list[str]) -> CacheSpec | None:
    """A node's ``cache`` (None when absent); each fault appended naming ``where``."""
    value = raw.get(KEY)
    if value is None:
        return None
    where = f"{where}: {KEY}"
    if not isinstance(value, Mapping):
        faults.append(f"{where} must be a mapping such as {{key: \"${{input.doc}}\", "
                      "ttl: 7d}")
        return None
    unknown = sorted(str(k) for k in value if k not in _FIELDS)
    if unknown:
        faults.append(f"{where}: unknown field {unknown[0]!r} (it takes key, ttl)")
        return None
    key = value.get("key")
    if key is not None and _key(key, where, faults) is None:
        return None
    try:
        ttl = ttl_ms(value["ttl"]) if value.get("ttl") is not None else DEFAULT_TTL_MS
    except ValueError as e:
        faults.append(f"{where}: ttl: {e}")
        return None
    return CacheSpec(key, ttl)


def _key(key: Any, where: str, faults: list[str]) -> str | None:
    """A ``cache``'s key as the spec gives it, or None with its fault appended."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        faults.append(f"{where}: key must be a text of 1 to {MAX_KEY_CHARS} characters, "
                      "or one ${...} reference")
        return None
    if "${" in key and parse_ref(key) is None:
        faults.append(f"{where}: key {key[:80]!r} must be a plain text or exactly one "
                      "${...} reference (references are not interpolated)")
        return None
    return key


def step_cache(step: Mapping[str, Any]) -> CacheSpec | None:
    """A code step's cache (``wf.run(..., cache_key=..., cache_ttl=...)``, kept in the
    step as ``{"cache": {"key": text, "ttl_ms": n}}``), None for an uncached step."""
    cache = step.get(KEY)
    if not isinstance(cache, Mapping):
        return None
    return CacheSpec(str(cache.get("key")), int(cache.get("ttl_ms") or DEFAULT_TTL_MS))


def step_cache_fault(value: Any) -> str | None:
    """Why a code step's ``cache`` is malformed, or None."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"key", "ttl_ms"}:
        return "cache must be {\"key\": text, \"ttl_ms\": n}"
    key, ttl = value.get("key"), value.get("ttl_ms")
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
        return f"cache key must be a text of 1 to {MAX_KEY_CHARS} characters"
    if type(ttl) is not int or not 1 <= ttl <= MAX_TTL_MS:
        return f"cache ttl_ms must be an integer from 1 to {MAX_TTL_MS}"
    return None


def resolved_key(value: Any) -> str:
    """A key as resolved for an attempt: a text as it is, any other JSON value as its
    canonical JSON (keys sorted), so a whole document may be a key; a key longer than
    ``MAX_KEY_CHARS`` as ``sha256:`` and the digest of that text (the cache keeps the
    key it is given, and a document may be large).

    Raises:
        ValueError: None, or the empty text.
    """
    if value is None:
        raise ValueError("a cache's key resolved to null")
    text = value if isinstance(value, str) else orjson.dumps(
        value, option=orjson.OPT_SORT_KEYS).decode()
    if not text:
        raise ValueError("a cache's key resolved to the empty text")
    if len(text) > MAX_KEY_CHARS:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return text


def cache_id(tenant: str | None, task: str, key: Any) -> str:
    """The id of the cache keeping ``task``'s results for ``key`` in ``tenant``'s runs:
    ``cache::`` and the first 40 hex digits of the SHA-256 of the three (so any key
    gives a valid workflow id, and no two tenants or tasks share one).

    ``key`` is the value the key resolved to, a text or any other JSON value (its fields
    sorted), so that the number ``1`` and the text ``"1"``, which a task may take
    differently, are two keys, though ``resolved_key`` writes both as ``1``."""
    text = orjson.dumps([tenant or "", task, key], option=orjson.OPT_SORT_KEYS)
    return f"{CACHE_PREFIX}{hashlib.sha256(text).hexdigest()[:_ID_DIGITS]}"


def is_cache(workflow_id: str) -> bool:
    """Whether ``workflow_id`` is a cache's."""
    return workflow_id.startswith(CACHE_PREFIX)


def lookup_fault(workflow_id: str, ttl: int) -> str | None:
    """What is wrong with a cache's input, or None: its id is a cache's, its ttl in
    range (0 for a release). The coordinator dead-letters one that is wrong
    (``machine/refusals.py``)."""
    if not re.fullmatch(rf"{re.escape(CACHE_PREFIX)}[0-9a-f]{{{_ID_DIGITS}}}", workflow_id):
        return f"{workflow_id[:80]} is no cache's id"
    if not 0 <= ttl <= MAX_TTL_MS:
        return f"ttl_ms {ttl} is not from 1 to {MAX_TTL_MS}"
    return None
