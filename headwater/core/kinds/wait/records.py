"""The ``wait`` kind's records: its spec fields (``WaitSpec``) and its events.

Input: ``SignalSent`` (on ``control``), recorded in the history once a running workflow
takes it; history: ``WaitStarted``, ``SignalConsumed``, ``SignalDiscarded``. How each
reads: its timeline detail (``DESCRIBE``) and its live-view line (``FOLLOW``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.instants import iso_text, seconds_text
from headwater.core.wording import Describe, Follow, FollowNote, short, where

SIGNAL_FIELD_TYPES = ("string", "number", "integer", "boolean", "object", "array", "any")
"""The types a wait's signal fields may declare (JSON Schema's names; ``any``: all)."""


@dataclass(frozen=True)
class SignalField:
    """One declared field of a signal: ``type`` is one of ``SIGNAL_FIELD_TYPES``."""

    name: str
    type: str
    required: bool = True


@dataclass(frozen=True)
class WaitSpec:
    """A wait node: the signal it waits for (named like a node id) and the fields that
    signal must carry. Its timeout is the node's ``timeout``."""

    signal: str
    fields: tuple[SignalField, ...] = ()


@dataclass(frozen=True)
class SignalSent:
    """A signal for a ``wait`` node (the gateway, or any producer on ``control``).

    Attributes:
        name: the signal a wait node declares (``signal:``).
        index: the map item whose wait it is for, or None for a plain wait node.
        signal_id: the sender's id for it: a second signal with an id already recorded
            changes nothing (at-least-once senders); ``""``: no such check.
        fields: the signal's fields (a JSON object), the wait node's output.
    """

    workflow_id: str
    name: str
    at_ms: int
    index: int | None = None
    signal_id: str = ""
    fields: Any = None


@dataclass(frozen=True)
class WaitStarted:
    """History: a ``wait`` node (or its item ``index``) waits for ``signal``, until
    ``timeout_at_ms`` (ms since the epoch) or for ever (None)."""

    workflow_id: str
    node: str
    index: int | None
    signal: str
    at_ms: int
    timeout_at_ms: int | None = None


@dataclass(frozen=True)
class SignalConsumed:
    """History: a waiting node (item ``index``) took the signal ``signal_id``; its
    ``fields`` are the node's (the item's) output."""

    workflow_id: str
    node: str
    index: int | None
    name: str
    signal_id: str
    at_ms: int
    fields: Any = None


@dataclass(frozen=True)
class SignalDiscarded:
    """History: a signal that came after its wait had ended (timed out, took another
    signal, was cancelled) changed nothing."""

    workflow_id: str
    name: str
    index: int | None
    signal_id: str
    at_ms: int
    reason: str = ""


def _waiting(b: WaitStarted) -> str:
    until = (f" until {iso_text(b.timeout_at_ms)} ({(b.timeout_at_ms - b.at_ms) / 1000:g} s)"
             if b.timeout_at_ms is not None else ", no timeout")
    return f"for signal {b.signal}{until}"


def _signal(b: SignalSent | SignalConsumed | SignalDiscarded) -> str:
    at = "" if b.index is None else f"[{b.index}]"
    return f"{b.name}{at}" + (f" id {b.signal_id}" if b.signal_id else "")


DESCRIBE: dict[type[Any], Describe] = {
    WaitStarted: _waiting,
    SignalSent: lambda b: short(f"{_signal(b)} {short(b.fields)}"),
    SignalConsumed: lambda b: short(f"took {_signal(b)} {short(b.fields)}"),
    SignalDiscarded: lambda b: short(f"{_signal(b)}: {b.reason}" if b.reason
                                     else _signal(b)),
}
"""Each event's timeline detail."""


def _wait_started(data: Mapping[str, Any]) -> FollowNote:
    until = data.get("timeout_at_ms")
    note = f"waiting on signal {data.get('signal')}" + (
        f" until {seconds_text(until)}" if until is not None else "")
    return FollowNote(f"{where(data)}: {note}", detail=note, running=True)


def _signal_name(data: Mapping[str, Any]) -> str:
    return where({"node": data.get("name"), "index": data.get("index")})


def _signal_discarded(data: Mapping[str, Any]) -> FollowNote:
    return FollowNote(f"signal {_signal_name(data)} discarded"
                      + (f": {data['reason']}" if data.get("reason") else ""))


FOLLOW: dict[type[Any], Follow | None] = {
    WaitStarted: _wait_started,
    SignalSent: lambda data: FollowNote(f"signal {_signal_name(data)} received"),
    SignalConsumed: lambda data: FollowNote(f"{where(data)}: took signal {data.get('name')}",
                                            detail=f"took signal {data.get('name')}"),
    SignalDiscarded: _signal_discarded,
}
"""Each event's line in the live view (``ops/cli/follow.py``)."""
