"""Instants written as RFC 3339 date-times (a sleep's ``until``), as ms since the epoch.

Only parsing and arithmetic on given values: this module reads no clock (the core
boundary test checks that ``datetime`` is used here without ``now``/``today``/
``utcnow``). The shape is RFC 3339 section 5.6 (``2025-06-01T12:00:00Z``,
``2025-06-01T14:00:00.250+02:00``); a UTC offset is required, since a local time names
no instant. The value itself is parsed by ``datetime.fromisoformat``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
FIRST_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS
"""0001-01-01T00:00:00Z: the earliest instant accepted (Python's ``datetime.MINYEAR``)."""
LAST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) // _MS
"""9999-12-31T23:59:59.999Z: the latest (``topics.MAX_AT_MS``, the latest time a record
may carry). An offset can push a local year-1 or year-9999 date-time past either end:
such a value names no instant a reader of the history could write down."""
RFC3339_HINT = "an RFC 3339 date-time with a UTC offset, such as 2025-06-01T12:00:00Z"
"""How faults describe what an instant must look like."""


def parse_instant(text: str) -> int | None:
    """The instant ``text`` names, in ms since the Unix epoch (floored), or None when it
    is not an RFC 3339 date-time with a UTC offset (or names no real date, e.g. a 31st
    of February).

    Args:
        text: e.g. ``"2025-06-01T12:00:00Z"`` or ``"2025-06-01 14:00:00.5+02:00"``.

    Returns:
        Milliseconds since 1970-01-01T00:00:00Z (negative before it), or None, also when
        the instant is before ``FIRST_MS`` or after ``LAST_MS`` in UTC.
    """
    if not _RFC3339.fullmatch(text):
        return None
    head, dot, rest = text.upper().partition(".")
    if dot:  # fromisoformat takes at most 6 fraction digits: keep the milliseconds
        digits = re.match(r"\d+", rest)
        assert digits is not None
        fraction = digits.group(0)
        text = f"{head}.{fraction[:6].ljust(6, '0')}{rest[len(fraction):]}"
    else:
        text = head
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        ms = (moment - _EPOCH) // _MS
    except OverflowError:
        return None
    return ms if FIRST_MS <= ms <= LAST_MS else None


def iso_text(at_ms: int) -> str:
    """``at_ms`` (ms since the epoch) as UTC ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (a timeline's
    instants)."""
    return (_EPOCH + at_ms * _MS).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def seconds_text(at_ms: object) -> str:
    """``at_ms`` (ms since the epoch, as read from JSON) as ``YYYY-MM-DD HH:MM:SS UTC``
    (the live view's instants), or ``?`` when it is not a number."""
    if not isinstance(at_ms, int | float) or isinstance(at_ms, bool):
        return "?"
    return (_EPOCH + timedelta(milliseconds=at_ms)).strftime("%Y-%m-%d %H:%M:%S UTC")
