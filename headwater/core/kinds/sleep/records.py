"""The ``sleep`` kind's records: its spec fields (``SleepSpec``) and its event.
"""

from __future__ import annotations

from dataclasses import dataclass


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
