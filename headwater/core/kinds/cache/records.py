"""The ``cache`` kind's records: the attempt's side (``TaskLookedUp``: it waits for the
cache's answer; ``CacheAnswered``: the answer; ``TaskCached``: a hit, its success;
``CacheReturned``: the end of an attempt that computed, or waited for, a key) and the
cache's (``CacheLookedUp``, ``CacheServed``, ``CacheReleased``), with how each reads.

An attempt's ``TaskLookedUp`` is sent to its cache as ``CacheLookedUp`` (on ``control``,
keyed by the cache's id); its ``CacheReturned`` as ``CacheReleased``; the cache's
``CacheServed`` is sent to the attempt's workflow as ``CacheAnswered`` (on ``reports``):
the coordinator routes them (``services/coordinator/lookups.py``).

A ``source`` names the attempt that computed an entry: ``{"workflow_id", "node",
"index", "attempt"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.ids import task_key
from headwater.core.wording import Describe, Follow, FollowNote, short, where


@dataclass(frozen=True)
class TaskLookedUp:
    """History: attempt ``attempt`` of ``node`` (item ``index``), of ``task``, waits for
    the cache ``cache``'s answer for ``key`` (entries stored for ``ttl_ms``) before it is
    held for its limits or dispatched; ``refresh``: its run bypasses hits."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    cache: str
    task: str
    key: str
    ttl_ms: int
    refresh: bool
    at_ms: int


@dataclass(frozen=True)
class CacheAnswered:
    """Input (``reports``): the cache's answer to the attempt's lookup: a hit, with the
    output ``source`` computed, the run time it saved (``saved_ms``) and the units it
    reported; or a miss (the attempt computes). A miss is recorded as it came; a hit is
    recorded as ``TaskCached``."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    cache: str
    hit: bool
    at_ms: int
    output: Any = None
    source: Any = None
    saved_ms: int = 0
    units: int | None = None


@dataclass(frozen=True)
class TaskCached:
    """History: attempt ``attempt`` of ``node`` (item ``index``) succeeded with the
    output the cache ``cache`` kept, computed by ``source``, without being dispatched;
    ``saved_ms`` and ``units``: what computing it cost. It changes the state as a
    ``TaskSucceeded`` does."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    cache: str
    task: str
    output: Any
    source: Any
    at_ms: int
    saved_ms: int = 0
    units: int | None = None


@dataclass(frozen=True)
class CacheReturned:
    """History: attempt ``attempt`` of ``node`` (item ``index``), which looked ``cache``
    up and was not answered by a hit, ended: ``stored`` when it succeeded, with its
    ``output``, its run time ``saved_ms`` and its ``units`` (the cache keeps them);
    otherwise it failed or was cancelled, and the cache lets the next waiter compute.
    Recorded right after the event that ended the attempt (``machine.recorder``)."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    cache: str
    at_ms: int
    stored: bool = False
    output: Any = None
    saved_ms: int = 0
    units: int | None = None


@dataclass(frozen=True)
class CacheLookedUp:
    """Input (``control``, keyed by the cache's id) and the cache's history: the attempt
    ``holder`` (its dispatch id) of ``task`` looks ``key`` up; ``ttl_ms``: how long its
    output is kept if it computes; ``refresh``: it takes no entry stored before it.
    ``waiting``: what waits once it is applied (the producer leaves it 0)."""

    workflow_id: str
    holder: str
    task: str
    key: str
    ttl_ms: int
    refresh: bool
    at_ms: int
    waiting: int = 0


@dataclass(frozen=True)
class CacheServed:
    """The cache's history: its answer to ``holder``: a hit with the entry's output,
    ``source``, ``saved_ms`` and ``units``, or a miss (``holder`` computes the key);
    ``alone``: a miss to a lookup over ``MAX_WAITERS``, which computes without being the
    key's computing attempt (its output is not stored, and nothing waits for it)."""

    workflow_id: str
    holder: str
    hit: bool
    at_ms: int
    output: Any = None
    source: Any = None
    saved_ms: int = 0
    units: int | None = None
    alone: bool = False


@dataclass(frozen=True)
class CacheReleased:
    """Input (``control``) and the cache's history: the attempt ``holder`` ended without
    a hit: ``stored`` with its ``output`` (from ``source``, which ran ``saved_ms`` and
    reported ``units``) when it succeeded, else nothing (it failed, or was cancelled)."""

    workflow_id: str
    holder: str
    at_ms: int
    stored: bool = False
    output: Any = None
    source: Any = None
    saved_ms: int = 0
    units: int | None = None


def source_text(source: Any) -> str:
    """``run/node[i] attempt n`` of a ``source``."""
    if not isinstance(source, Mapping):
        return "?"
    return (f"{source.get('workflow_id')}/{task_key(str(source.get('node')), source.get('index'))}"
            f" attempt {source.get('attempt')}")


def _looked_up(data: Mapping[str, Any]) -> FollowNote:
    note = f"looking up the cache of {data.get('task')} ({short(data.get('key'))})"
    return FollowNote(f"{where(data)}: {note}", detail=note, running=True)


DESCRIBE: dict[type[Any], Describe] = {
    TaskLookedUp: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt} looks up "
                             f"{b.task} {short(b.key)}{' (refresh)' if b.refresh else ''}"),
    CacheAnswered: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt}: "
                              f"{'hit' if b.hit else 'miss'}"),
    TaskCached: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt}: cached, from "
                           f"{source_text(b.source)}"),
    CacheReturned: lambda b: (f"{task_key(b.node, b.index)} attempt {b.attempt}: "
                              f"{'stored' if b.stored else 'released'}"),
    CacheLookedUp: lambda b: (f"{b.holder} looks up {short(b.key)}"
                              f"{' (refresh)' if b.refresh else ''}"),
    CacheServed: lambda b: (f"{b.holder}: hit from {source_text(b.source)}" if b.hit
                            else f"{b.holder}: miss (computes)"),
    CacheReleased: lambda b: f"{b.holder} {'stored' if b.stored else 'released'}",
}
"""Each event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = {
    TaskLookedUp: _looked_up,
    CacheAnswered: None,
    TaskCached: lambda data: FollowNote(f"{where(data)}: cached", detail="cached"),
    CacheReturned: None,
    CacheLookedUp: lambda data: FollowNote(f"{data.get('holder')} looks the key up"),
    CacheServed: lambda data: FollowNote(
        f"{data.get('holder')}: {'hit' if data.get('hit') else 'miss'}"),
    CacheReleased: lambda data: FollowNote(
        f"{data.get('holder')} {'stored' if data.get('stored') else 'released'}"),
}
"""Each event's line in the live view (``ops/cli/follow.py``)."""
