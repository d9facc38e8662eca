"""Limits on a node's attempts: ``concurrency`` (at most ``limit`` attempts hold a permit
of one key at once) and ``rate_limit`` (at most ``limit`` units granted in any window of
``window_s``), and the ids of the limiters that keep them.

A limit names a key: a text, or one ``${...}`` reference resolved for the attempt
(``${input.customer}``, ``${item.model}``), so that each value is a limit of its own. Each
resolved key is kept by one *limiter*, a long-lived run of the coordinator whose id is
derived from the key (``limiter_id``: ``limit::concurrency:acme``); the prefix
``limit::`` is reserved (``reserved_id``: no submission may take such an id). The
limiter's rules are in ``headwater/core/kinds/limiter/``, the attempt's side in
``headwater/core/machine/holds.py``; docs/architecture.md §4n describes both.

Pure, as the core is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.caching import CACHE_PREFIX
from headwater.core.refs import parse_ref

CONCURRENCY = "concurrency"
"""A limit on the attempts holding a permit at once (``concurrency:``)."""
RATE = "rate"
"""A limit on the units granted per window (``rate_limit:``)."""
CONCURRENCY_KEY = "concurrency"
RATE_KEY = "rate_limit"
KEYS = frozenset({CONCURRENCY_KEY, RATE_KEY})
"""The spec fields of a ``task`` or ``map`` node that limit its attempts."""
LIMITER_PREFIX = "limit::"
"""The prefix of every limiter's id; no submitted workflow may take it."""
LIMITER_NODE = "limiter"
"""The one node of a limiter's spec."""
MAX_LIMIT = 1_000_000
"""The highest ``limit`` (and ``units``) a spec may give."""
MAX_WINDOW_S = 86_400
"""The longest rate window, seconds (a day)."""
MAX_KEY_CHARS = 200
"""The longest resolved key; a longer one fails the attempt like a bad reference."""
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_.\-]{1,120}$")
"""A key written into its limiter's id as it is; any other is written as a digest."""
_CONCURRENCY_FIELDS = frozenset({"key", "limit"})
_RATE_FIELDS = frozenset({"key", "limit", "window_s", "per_second", "per_minute", "units"})


@dataclass(frozen=True)
class LimitSpec:
    """One limit of a node.

    Attributes:
        kind: ``CONCURRENCY`` or ``RATE``.
        key: the key: a text, or one ``${...}`` reference resolved per attempt.
        limit: permits held at once (concurrency), or units per window (rate).
        window_ms: a rate limit's window, ms (0 for concurrency).
        units: what one attempt takes of a rate limit: an integer, or a ``${...}``
            reference giving one (1 for concurrency).
    """

    kind: str
    key: str
    limit: int
    window_ms: int = 0
    units: Any = 1


RESERVED_PREFIXES = (LIMITER_PREFIX, CACHE_PREFIX)
"""The prefixes of the coordinator's own runs: limiters and caches (``caching``)."""


def reserved_id(workflow_id: str) -> bool:
    """Whether ``workflow_id`` is a limiter's (``LIMITER_PREFIX``) or a cache's
    (``caching.CACHE_PREFIX``): refused to a submission, a cancel and a signal alike."""
    return workflow_id.startswith(RESERVED_PREFIXES)


def is_rate(limiter: str) -> bool:
    """Whether ``limiter`` (a ``limiter_id``) keeps a rate limit."""
    return limiter.startswith(f"{LIMITER_PREFIX}{RATE}:")


def limiter_id(kind: str, key: str) -> str:
    """The id of the limiter keeping ``kind``'s limit of ``key``: ``limit::<kind>:<key>``
    for a key of letters, digits and ``_.-``, else ``limit::<kind>::<digest>`` (the
    first 32 hex digits of its SHA-256), so that any key gives a valid workflow id."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{LIMITER_PREFIX}{kind}:{key}"
    return f"{LIMITER_PREFIX}{kind}::{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def parse_limits(raw: Mapping[str, Any], where: str, faults: list[str]) -> tuple[LimitSpec, ...]:
    """A node's limits: its ``concurrency`` then its ``rate_limit`` (either may be
    absent); each fault appended naming ``where``."""
    out: list[LimitSpec] = []
    conc = raw.get(CONCURRENCY_KEY)
    if conc is not None:
        parsed = _concurrency(conc, f"{where}: {CONCURRENCY_KEY}", faults)
        if parsed is not None:
            out.append(parsed)
    rate = raw.get(RATE_KEY)
    if rate is not None:
        parsed = _rate(rate, f"{where}: {RATE_KEY}", faults)
        if parsed is not None:
            out.append(parsed)
    return tuple(out)


def _concurrency(value: Any, where: str, faults: list[str]) -> LimitSpec | None:
    if not isinstance(value, Mapping):
        faults.append(f"{where} must be a mapping such as {{key: \"${{input.customer}}\", "
                      "limit: 2}")
        return None
    if not _known(value, _CONCURRENCY_FIELDS, where, faults):
        return None
    key = _key(value.get("key"), where, faults)
    limit = _count(value.get("limit"), f"{where}: limit", faults)
    if key is None or limit is None:
        return None
    return LimitSpec(CONCURRENCY, key, limit)


def _rate(value: Any, where: str, faults: list[str]) -> LimitSpec | None:
    if not isinstance(value, Mapping):
        faults.append(f"{where} must be a mapping such as {{key: openai, per_minute: 500}}")
        return None
    if not _known(value, _RATE_FIELDS, where, faults):
        return None
    key = _key(value.get("key"), where, faults)
    given = [f for f in ("per_second", "per_minute", "limit") if value.get(f) is not None]
    if len(given) != 1:
        faults.append(f"{where} needs exactly one of per_second, per_minute, or limit "
                      "with window_s")
        return None
    limit = _count(value.get(given[0]), f"{where}: {given[0]}", faults)
    window_ms = {"per_second": 1000, "per_minute": 60_000}.get(given[0], 0)
    if given[0] == "limit":
        window_ms = _window(value.get("window_s"), f"{where}: window_s", faults)
    elif value.get("window_s") is not None:
        faults.append(f"{where}: window_s goes with limit, not with {given[0]}")
        return None
    units = _units(value.get("units", 1), f"{where}: units", faults)
    if key is None or limit is None or not window_ms or units is None:
        return None
    return LimitSpec(RATE, key, limit, window_ms, units)


def _known(value: Mapping[str, Any], fields: frozenset[str], where: str,
           faults: list[str]) -> bool:
    unknown = sorted(str(k) for k in value if k not in fields)
    if unknown:
        faults.append(f"{where}: unknown field {unknown[0]!r} (it takes "
                      f"{', '.join(sorted(fields))})")
    return not unknown


def _key(value: Any, where: str, faults: list[str]) -> str | None:
    if not isinstance(value, str) or not value or len(value) > MAX_KEY_CHARS:
        faults.append(f"{where}: key must be a text of 1 to {MAX_KEY_CHARS} characters, or "
                      "one ${...} reference")
        return None
    if "${" in value and not _is_ref(value):
        faults.append(f"{where}: key {value[:80]!r} must be a plain text or exactly one "
                      "${...} reference (references are not interpolated)")
        return None
    return value


def _is_ref(value: Any) -> bool:
    return isinstance(value, str) and parse_ref(value) is not None


def _count(value: Any, where: str, faults: list[str]) -> int | None:
    if type(value) is not int or not 1 <= value <= MAX_LIMIT:
        faults.append(f"{where} must be an integer from 1 to {MAX_LIMIT}")
        return None
    return value


def _window(value: Any, where: str, faults: list[str]) -> int:
    if (not isinstance(value, int | float) or isinstance(value, bool)
            or not 0.001 <= value <= MAX_WINDOW_S):
        faults.append(f"{where} must be a number of seconds from 0.001 to {MAX_WINDOW_S}")
        return 0
    return round(value * 1000)


def _units(value: Any, where: str, faults: list[str]) -> Any:
    if _is_ref(value):
        return value
    return _count(value, where, faults)


def resolved_key(value: Any) -> str:
    """A key as resolved for an attempt: a text as it is, a number or a boolean as JSON
    writes it.

    Raises:
        ValueError: the reference gave no text, number or boolean, or a text too long.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float | str):
        text = str(value)
    else:
        raise ValueError(f"a limit's key must resolve to a text or a number, got "
                         f"{type(value).__name__}")
    if not text or len(text) > MAX_KEY_CHARS:
        raise ValueError(f"a limit's key must be 1 to {MAX_KEY_CHARS} characters, got "
                         f"{len(text)}")
    return text


def resolved_units(value: Any) -> int:
    """An attempt's units of a rate limit, as resolved.

    Raises:
        ValueError: not an integer from 0 to ``MAX_LIMIT``.
    """
    if type(value) is not int or not 0 <= value <= MAX_LIMIT:
        raise ValueError(f"a rate limit's units must resolve to an integer from 0 to "
                         f"{MAX_LIMIT}, got {str(value)[:40]}")
    return value


def permit_fault(workflow_id: str, kind: str, limit: int, window_ms: int, units: int,
                 defining: bool = False) -> str | None:
    """What is wrong with a limiter's input (a request, or a definition when
    ``defining``: its limit may be 0, taking it back), or None: the limiter's id and
    kind agree, the limit, window and units are in range. The coordinator dead-letters
    one that is wrong (``machine/refusals.py``): a limiter applies only what a
    coordinator or the gateway would send."""
    if kind not in (CONCURRENCY, RATE) or not workflow_id.startswith(
            f"{LIMITER_PREFIX}{kind}:"):
        return f"{workflow_id[:80]} is no limiter of kind {kind[:20]!r}"
    if not (0 if defining else 1) <= limit <= MAX_LIMIT:
        return f"limit {limit} is not from 1 to {MAX_LIMIT}"
    if kind == RATE and limit and not 1 <= window_ms <= MAX_WINDOW_S * 1000:
        return f"window_ms {window_ms} is not from 1 to {MAX_WINDOW_S * 1000}"
    if not 0 <= units <= MAX_LIMIT:
        return f"units {units} is not from 0 to {MAX_LIMIT}"
    return None
