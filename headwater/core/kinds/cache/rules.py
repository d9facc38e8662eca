"""The ``cache`` kind's rules and its ``UNIT``: how a cache answers lookups, lets one
attempt at a time compute its key, stores what it computed and drops it when its ttl
passes (the kind is described in ``headwater/core/kinds/cache/__init__.py``).

The node's state (``NodeState.cache``) is a JSON document, as the table keeps it::

    {"task": <task name>, "key": <text>,
     "entry": {"output", "source", "stored_at", "expires_at", "saved_ms", "units"} | None,
     "computing": [holder id, ttl ms] | None,
     "waiters": [[holder id, refresh, ttl ms], ...],
     "lookups": n, "hits": n, "misses": n, "stores": n}

``computing`` is the attempt that was answered a miss and computes the key; the waiters
looked the key up while it did (single flight), in the order they came. A lookup is
answered at once with a hit when an entry lives and it is no refresh; with a miss when
no one computes; else it waits. The computing attempt's release stores its output (when
it succeeded) and answers every waiter with a hit (a refresh waiter too: the output is
fresh), or (it failed, or was cancelled) lets the head waiter compute.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.caching import CACHE_NODE
from headwater.core.kinds.cache.records import (
    DESCRIBE,
    FOLLOW,
    CacheLookedUp,
    CacheReleased,
    CacheServed,
)
from headwater.core.machine import flow
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import KindParts, Work, no_parts
from headwater.core.state import IllegalTransition, TimerState, WorkflowState, node_state
from headwater.core.status import NodeStatus

CACHE_SPEC: dict[str, Any] = {"name": "cache", "nodes": [{"id": CACHE_NODE,
                                                          "kind": NodeKind.CACHE.value}]}
"""The spec a cache is accepted with."""
MAX_WAITERS = 10_000
"""The most lookups a cache keeps waiting for the attempt computing its key (each
``[holder, refresh, ttl]`` in its header, about 100 bytes); one more computes on its
own (``_overflow``)."""
TIMER_PREFIX = "cache"
EXPIRE_TIMER = f"{TIMER_PREFIX}:expire"
"""The timer that drops the entry when its ttl passes."""
NOT_SUBMITTED = ("a cache node is the coordinator's own (it keeps a task's results for "
                 "one key); use cache: on a task or map node")


# -- rules ----------------------------------------------------------------------------

def looked_up(rec: Recorder, state: WorkflowState | None, event: CacheLookedUp) -> None:
    """A lookup: the first for an id creates its cache; a copy of one that computes or
    waits changes nothing; else it is recorded and answered when it can be."""
    state = rec.opened(event.workflow_id, CACHE_SPEC, event.at_ms)
    if state is None:
        return
    doc = cache_of(state)
    if doc is not None and _knows(doc, event.holder):
        return
    waiting = len(doc["waiters"]) + 1 if doc is not None else 1
    rec.record(dataclasses.replace(event, waiting=waiting))
    _serve(rec, fresh=False)
    _overflow(rec, event.holder)


def _overflow(rec: Recorder, holder: str) -> None:
    """A lookup left waiting beyond ``MAX_WAITERS`` computes on its own (a miss
    ``alone``): the cache's header, rewritten at each of its events, stays bounded (an
    entity over a table entry's size would fail and answer no one again), at the cost
    of that attempt's computing what another computes already."""
    doc = cache_of(rec.current)
    if doc is not None and len(doc["waiters"]) > MAX_WAITERS and any(
            w[0] == holder for w in doc["waiters"]):
        rec.record(CacheServed(rec.current.workflow_id, holder, False, rec.at_ms,
                               alone=True))


def released(rec: Recorder, state: WorkflowState | None, event: CacheReleased) -> None:
    """A release: the computing attempt's stores its output (if it has one) and answers
    the waiters; a waiter's leaves the queue; anything else (a copy, a holder answered
    already) records nothing."""
    if state is None or state.status.terminal or state.spec_error:
        return
    doc = cache_of(state)
    if doc is None or not _knows(doc, event.holder):
        return
    computing = doc["computing"] is not None and doc["computing"][0] == event.holder
    stored = computing and event.stored
    rec.record(event if stored or not event.stored else dataclasses.replace(
        event, stored=False, output=None, source=None, saved_ms=0, units=None))
    _serve(rec, fresh=stored)


def _knows(doc: Mapping[str, Any], holder: str) -> bool:
    """Whether ``holder`` computes the key or waits for it."""
    computing = doc["computing"]
    return (computing is not None and computing[0] == holder) or any(
        w[0] == holder for w in doc["waiters"])


def _serve(rec: Recorder, fresh: bool) -> None:
    """Answer the waiters that can be, in order: a hit when an entry lives and the
    waiter takes it (no refresh, or ``fresh``: it was stored after they looked up);
    a miss for the first that cannot while no one computes."""
    doc = cache_of(rec.current)
    for holder, refresh, _ in list(doc["waiters"] if doc is not None else ()):
        doc = cache_of(rec.current)
        assert doc is not None
        entry = live_entry(doc, rec.at_ms)
        if entry is not None and (fresh or not refresh):
            rec.record(CacheServed(rec.current.workflow_id, holder, True, rec.at_ms,
                                   entry["output"], entry["source"], entry["saved_ms"],
                                   entry["units"]))
        elif doc["computing"] is None:
            rec.record(CacheServed(rec.current.workflow_id, holder, False, rec.at_ms))


def live_entry(doc: Mapping[str, Any], now_ms: int) -> dict[str, Any] | None:
    """The cache's entry while it lives at ``now_ms``, else None."""
    entry = doc.get("entry")
    return entry if entry is not None and entry["expires_at"] > now_ms else None


def cache_of(state: WorkflowState) -> dict[str, Any] | None:
    """A cache's state, None before its first lookup (or for a workflow that is no
    cache)."""
    node = state.nodes.get(CACHE_NODE)
    return node.cache if node is not None else None


def expired(rec: Recorder, spec: NodeSpec, index: int | None = None) -> None:
    """The expiry timer fired (``TimerFired`` recorded, the entry dropped by its
    evolution): nothing else to decide."""


def start(rec: Recorder, spec: NodeSpec) -> None:
    """A cache's node is started by its first lookup, never by a submission: in a
    submitted spec it fails."""
    flow.node_failed(rec, spec.id, f"{spec.id}: {NOT_SUBMITTED}")


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A cache has no tasks."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A cache has no tasks."""


# -- evolution --------------------------------------------------------------------------

def _looked_up(state: WorkflowState, body: CacheLookedUp) -> None:
    """The lookup waits (its answer, in the same step or later, takes it out); the
    first opens the cache (its node runs for good)."""
    node = node_state(state, CACHE_NODE)
    if node.cache is None:
        node.status = NodeStatus.RUNNING
        node.cache = {"task": body.task, "key": body.key, "entry": None, "computing": None,
                      "waiters": [], "lookups": 0, "hits": 0, "misses": 0, "stores": 0}
    node.cache["waiters"].append([body.holder, body.refresh, body.ttl_ms])
    node.cache["lookups"] += 1


def _served(state: WorkflowState, body: CacheServed) -> None:
    doc = _live(state)
    ttl = next((w[2] for w in doc["waiters"] if w[0] == body.holder), None)
    doc["waiters"] = [w for w in doc["waiters"] if w[0] != body.holder]
    if body.alone:  # over the bound: it computes, but not as the key's computing one
        doc["misses"] += 1
    elif body.hit:
        doc["hits"] += 1
    else:
        if ttl is None or doc["computing"] is not None:
            raise IllegalTransition(f"{state.workflow_id}: {body.holder} cannot compute")
        doc["computing"] = [body.holder, ttl]
        doc["misses"] += 1


def _released(state: WorkflowState, body: CacheReleased) -> None:
    doc = _live(state)
    computing = doc["computing"]
    if computing is not None and computing[0] == body.holder:
        doc["computing"] = None
        if body.stored:
            expires = body.at_ms + computing[1]
            doc["entry"] = {"output": body.output, "source": body.source,
                            "stored_at": body.at_ms, "expires_at": expires,
                            "saved_ms": body.saved_ms, "units": body.units}
            doc["stores"] += 1
            state.timers[EXPIRE_TIMER] = TimerState(expires, CACHE_NODE, None, 0)
        return
    doc["waiters"] = [w for w in doc["waiters"] if w[0] != body.holder]


def _live(state: WorkflowState) -> dict[str, Any]:
    doc = cache_of(state)
    if doc is None:
        raise IllegalTransition(f"{state.workflow_id} is no open cache")
    return doc


def _timer_fired(state: WorkflowState, timer_id: str, timer: TimerState) -> None:
    """The expiry timer fired (it fires only once due, and a later store re-arms it):
    the entry is dropped, so the cache keeps only its small header."""
    doc = cache_of(state)
    if doc is not None and doc.get("entry") is not None and (
            doc["entry"]["expires_at"] <= timer.fire_at_ms):
        doc["entry"] = None


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    return no_parts(raw, where, work, validate, faults)


UNIT = KindUnit(NodeKind.CACHE, frozenset(), start, attempt_succeeded, attempt_failed,
                parse=_parse, timer_prefix=TIMER_PREFIX, timer_fired=expired,
                events={CacheLookedUp: _looked_up, CacheServed: _served,
                        CacheReleased: _released},
                evolution=KindEvolution(timer_fired=_timer_fired),
                describe=DESCRIBE, follow=FOLLOW)  # the attempt's records too
"""The ``cache`` kind."""
