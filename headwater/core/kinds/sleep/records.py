"""The ``sleep`` kind's records: its spec fields (``SleepSpec``) and its event, with how
it reads (``DESCRIBE``: its timeline detail; ``FOLLOW``: its live-view line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.instants import iso_text, seconds_text
from headwater.core.wording import Describe, Follow, FollowNote


@dataclass(frozen=True)
class SleepSpec:
    """A sleep node: ``duration`` seconds from its start, or ``until`` an instant (an
    RFC 3339 text, or a ``${...}`` reference resolved at start). Exactly one is set."""

    duration: float | None = None
    until: str | None = None


@dataclass(frozen=True)
class SleepStarted:
    """History: a ``sleep`` node sleeps until ``wake_at_ms`` (ms since the epoch)."""

    workflow_id: str
    node: str
    at_ms: int
    wake_at_ms: int


def _sleep_started(data: Mapping[str, Any]) -> FollowNote:
    note = f"sleeping until {seconds_text(data.get('wake_at_ms'))}"
    return FollowNote(f"{data.get('node')}: {note}", detail=note, running=True)


DESCRIBE: dict[type[Any], Describe] = {
    SleepStarted: lambda b: (f"until {iso_text(b.wake_at_ms)} "
                             f"({(b.wake_at_ms - b.at_ms) / 1000:g} s)"),
}
"""The event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = {SleepStarted: _sleep_started}
"""The event's line in the live view (``ops/cli/follow.py``)."""
