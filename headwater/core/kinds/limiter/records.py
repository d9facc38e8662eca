"""The ``limiter`` kind's records: the attempt's side (``TaskHeld``: it waits for a
permit; ``PermitGranted``: it got one; ``PermitDenied``: its request was refused) and
the limiter's (``PermitRequested``, ``PermitReleased``, ``PermitIssued``,
``PermitRefused``), with how each reads (``DESCRIBE``, ``FOLLOW``).

An attempt's ``TaskHeld`` is sent to its limiter as ``PermitRequested`` (on ``control``,
keyed by the limiter's id); its end (``TaskSucceeded``, ``TaskFailed``,
``TaskCancelled``, each followed by ``PermitsReturned``) as ``PermitReleased``; the
limiter's ``PermitIssued`` is sent to the attempt's workflow as ``PermitGranted`` (on
``reports``), its ``PermitRefused`` as ``PermitDenied``: the coordinator routes them
(``services/coordinator/permits.py``).
``LimitDefined`` comes from the gateway (``PUT /v1/limits/{key}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.ids import task_key
from headwater.core.wording import Describe, Follow, FollowNote, where


@dataclass(frozen=True)
class TaskHeld:
    """History: attempt ``attempt`` of ``node`` (item ``index``) waits for a permit of
    ``limiter`` (the limit ``kind`` of ``key``: ``limit`` at once, or per ``window_ms``,
    taking ``units``) before it is dispatched."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    limiter: str
    kind: str
    key: str
    limit: int
    window_ms: int
    units: int
    at_ms: int


@dataclass(frozen=True)
class PermitGranted:
    """Input (``reports``) and history: ``limiter`` granted the held attempt its
    permit."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    limiter: str
    at_ms: int


@dataclass(frozen=True)
class PermitDenied:
    """Input (``reports``): ``limiter`` refused the held attempt's request, its queue
    being full (``bound`` requests wait, the most a limiter queues). The attempt that
    waits for it fails, retryable (``LimitQueueFull``); it is not recorded itself."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    limiter: str
    bound: int
    at_ms: int


@dataclass(frozen=True)
class PermitsReturned:
    """History: attempt ``attempt`` of ``node`` (item ``index``) ended (succeeded, failed,
    cancelled) and gives back what it held or waited for at each of ``limiters`` (the
    coordinator sends each a ``PermitReleased``); ``units``: what it reported it used of
    its rate limits (``TaskSucceeded.units``), or None. Recorded right after the event
    that ended the attempt (``machine.recorder``), from the limiters it asked
    (``TaskState.limiters``), so the release never depends on resolving a key again."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    limiters: tuple[str, ...]
    at_ms: int
    units: int | None = None


@dataclass(frozen=True)
class PermitRequested:
    """Input (``control``, keyed by the limiter's id) and the limiter's history: the
    attempt ``holder`` (its dispatch id) asks for ``units`` of the limit."""

    workflow_id: str
    holder: str
    kind: str
    key: str
    limit: int
    window_ms: int
    units: int
    at_ms: int
    holding: int = 0
    queued: int = 0
    granted: int = 0


@dataclass(frozen=True)
class PermitReleased:
    """Input (``control``) and the limiter's history: the attempt ``holder`` ended, or
    no longer waits (its permit, or its place in the queue, is given up).

    ``holding``, ``queued`` and ``granted`` (of this record, of ``PermitRequested`` and
    of ``PermitIssued``) are what the limiter holds, queues and has granted in all once
    it is applied: the producer leaves them 0, the limiter records them (for the
    projection's view of it, ``GET /v1/limits``).

    ``units``: for a rate limit, what the attempt reports it used (its
    ``TaskSucceeded.units``), which replaces what it was granted in the window; None:
    what it was granted stands."""

    workflow_id: str
    holder: str
    at_ms: int
    holding: int = 0
    queued: int = 0
    granted: int = 0
    units: int | None = None


@dataclass(frozen=True)
class PermitIssued:
    """The limiter's history: it granted ``holder`` its ``units``; ``holding`` is what
    is held after it (permits at once, or units in the window), at most ``limit``
    unless one request alone asks for more than the whole limit; ``queued``, the
    requests still waiting."""

    workflow_id: str
    holder: str
    units: int
    holding: int
    limit: int
    at_ms: int
    queued: int = 0
    granted: int = 0


@dataclass(frozen=True)
class PermitRefused:
    """The limiter's history: it refused ``holder``'s request for ``units``, since
    ``bound`` requests wait already (``MAX_QUEUED``); the request is not queued, and the
    attempt fails (``PermitDenied``) to ask again after its retry's backoff.
    ``holding``, ``queued`` and ``granted`` as in ``PermitReleased`` (unchanged by it)."""

    workflow_id: str
    holder: str
    units: int
    bound: int
    at_ms: int
    holding: int = 0
    queued: int = 0
    granted: int = 0


@dataclass(frozen=True)
class LimitDefined:
    """Input (``control``, keyed by the limiter's id; ``PUT /v1/limits/{key}``) and the
    limiter's history: ``kind``'s limit of ``key`` is ``limit`` (per ``window_ms`` for a
    rate), whatever the specs naming the key say; ``limit`` 0 takes the definition back
    (the latest request's limit applies again). ``holding``, ``queued`` and ``granted``
    as in ``PermitReleased``."""

    workflow_id: str
    kind: str
    key: str
    limit: int
    window_ms: int
    at_ms: int
    holding: int = 0
    queued: int = 0
    granted: int = 0


def _held(data: Mapping[str, Any]) -> FollowNote:
    note = f"waiting for {data.get('kind')} {data.get('key')}"
    return FollowNote(f"{where(data)}: {note}", detail=note, running=True)


DESCRIBE: dict[type[Any], Describe] = {
    TaskHeld: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt} waits for "
                         f"{b.kind} {b.key} (limit {b.limit})"),
    PermitGranted: lambda b: f"{task_key(b.node, b.index)} attempt {b.attempt}: {b.limiter}",
    PermitsReturned: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt}: "
                                f"{', '.join(b.limiters)}"),
    PermitRequested: lambda b: f"{b.holder} asks for {b.units}",
    PermitReleased: lambda b: f"{b.holder} released",
    PermitIssued: lambda b: f"{b.holder}: {b.holding} of {b.limit} held",
    PermitRefused: lambda b: f"{b.holder} refused: {b.bound} requests wait already",
    LimitDefined: lambda b: (f"{b.kind} {b.key}: limit {b.limit}" if b.limit
                             else f"{b.kind} {b.key}: definition taken back"),
}
"""Each event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = {
    TaskHeld: _held,
    PermitGranted: None,
    PermitsReturned: None,
    PermitRequested: lambda data: FollowNote(f"{data.get('holder')} asks for a permit"),
    PermitReleased: lambda data: FollowNote(f"{data.get('holder')} released its permit"),
    PermitIssued: lambda data: FollowNote(f"{data.get('holder')} granted "
                                          f"({data.get('holding')} of {data.get('limit')})"),
    PermitRefused: lambda data: FollowNote(f"{data.get('holder')} refused: the queue is "
                                           f"full ({data.get('bound')})"),
    LimitDefined: lambda data: FollowNote(f"limit defined: {data.get('limit')}"),
}
"""Each event's line in the live view (``ops/cli/follow.py``)."""
