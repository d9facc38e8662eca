"""The ``limiter`` kind's rules and its ``UNIT``: how a limiter takes requests and
releases, grants in order, and how its events change its node's state (the kind is
described in ``headwater/core/kinds/limiter/__init__.py``).

The node's state (``NodeState.limiter``) is a JSON document, as the table keeps it::

    {"kind": "concurrency" | "rate", "key": <text>, "limit": n, "window_ms": w,
     "holders": {holder id: units}, "queue": [[holder id, units], ...],
     "grants": [[at ms, units, holder id], ...], "granted": n,
     "defined": [limit, window ms]}   # only while a limit is defined

``holders`` are the concurrency permits held; ``grants`` the rate permits granted within
the last window, with their units as granted or as the attempt reported it used them
(older ones are dropped as events come); ``granted`` counts every permit granted. The
limit is the one the latest request carried (a spec's), so changing a spec's limit
changes its key's limit from its next request on, unless one is defined apart
(``PUT /v1/limits/{key}``, ``LimitDefined``): that one governs until taken back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.attempts import KindEvolution
from headwater.core.kinds.limiter.records import (
    DESCRIBE,
    FOLLOW,
    LimitDefined,
    PermitIssued,
    PermitRefused,
    PermitReleased,
    PermitRequested,
)
from headwater.core.limits import CONCURRENCY, LIMITER_NODE, RATE
from headwater.core.machine import flow
from headwater.core.machine.recorder import Recorder
from headwater.core.registry import KindUnit
from headwater.core.spec import NodeKind, NodeSpec
from headwater.core.spec.kinds import KindParts, Work, no_parts
from headwater.core.state import IllegalTransition, TimerState, WorkflowState, node_state
from headwater.core.status import NodeStatus

LIMITER_SPEC: dict[str, Any] = {"name": "limiter", "nodes": [{"id": LIMITER_NODE,
                                                              "kind": NodeKind.LIMITER.value}]}
"""The spec a limiter is accepted with."""
MAX_QUEUED = 10_000
"""The most requests a limiter keeps waiting (each ``[holder, units]`` in its header,
rewritten at each of its events, some 60 bytes); one more is refused (``PermitRefused``)
and its attempt fails, to ask again after its retry's backoff."""
TIMER_PREFIX = "limit"
WINDOW_TIMER = f"{TIMER_PREFIX}:window"
"""The timer that wakes a rate limiter when its window leaves room for the request at
the head of its queue."""
NOT_SUBMITTED = ("a limiter node is the coordinator's own (it keeps a limit's key); "
                 "use concurrency: or rate_limit: on a task or map node")


# -- rules ----------------------------------------------------------------------------

def requested(rec: Recorder, state: WorkflowState | None, event: PermitRequested) -> None:
    """A request: the first for an id creates its limiter; a copy of a request it holds
    or queues changes nothing; one over ``MAX_QUEUED`` waiting is refused; else it
    queues, and what fits is granted."""
    state = rec.opened(event.workflow_id, LIMITER_SPEC, event.at_ms)
    if state is None:
        return
    lim = limiter_of(state)
    if lim is not None and (event.holder in lim["holders"]
                            or any(h == event.holder for h, _ in lim["queue"])):
        return
    holding = _holding(lim, rec.at_ms) if lim is not None else 0
    queued = len(lim["queue"]) + 1 if lim is not None else 1
    granted = lim.get("granted", 0) if lim is not None else 0
    if queued > MAX_QUEUED:
        _refuse(rec, event, holding, queued - 1, granted)
        return
    rec.record(dataclasses.replace(event, holding=holding, queued=queued, granted=granted))
    _issue(rec)


def _refuse(rec: Recorder, event: PermitRequested, holding: int, queued: int,
            granted: int) -> None:
    """Refuse a request over ``MAX_QUEUED``: the limiter's header, rewritten at each of
    its events, stays bounded (one grown past a table entry would be failed as
    oversized, and its holders would wait for ever). The request is not queued (a
    release of its holder records nothing); a copy coming once the queue has room is
    queued like any request, and the attempt's end releases it.

    The queue is not empty, so its head does not fit, and a request behind it would not
    be granted now either (first come, first served)."""
    rec.record(PermitRefused(event.workflow_id, event.holder, event.units, MAX_QUEUED,
                             rec.at_ms, holding, queued, granted))


def defined(rec: Recorder, state: WorkflowState | None, event: LimitDefined) -> None:
    """A limit defined apart from the specs (``PUT /v1/limits/{key}``): it governs the
    key from now on, over what requests carry (``limit`` 0: no longer); a limiter not
    created yet is created with it. The same definition again changes nothing."""
    state = rec.opened(event.workflow_id, LIMITER_SPEC, event.at_ms)
    if state is None:
        return
    lim = limiter_of(state)
    wanted = [event.limit, event.window_ms] if event.limit else None
    if lim is not None and lim.get("defined") == wanted:
        return
    rec.record(dataclasses.replace(
        event, holding=_holding(lim, rec.at_ms) if lim is not None else 0,
        queued=len(lim["queue"]) if lim is not None else 0,
        granted=lim.get("granted", 0) if lim is not None else 0))
    _issue(rec)


def released(rec: Recorder, state: WorkflowState | None, event: PermitReleased) -> None:
    """A release: frees the holder's permit, or drops its waiting request, then grants
    what fits; nothing for a holder it neither holds nor queues (a copy, or one that
    never asked)."""
    if state is None or state.status.terminal or state.spec_error:
        return
    lim = limiter_of(state)
    if lim is None or (event.holder not in lim["holders"]
                       and not any(h == event.holder for h, _ in lim["queue"])
                       and not _reports(lim, event)):
        return
    rec.record(dataclasses.replace(
        event, holding=_holding_after(lim, event, rec.at_ms),
        queued=sum(1 for h, _ in lim["queue"] if h != event.holder),
        granted=lim.get("granted", 0)))
    _issue(rec)


def _holding_after(lim: Mapping[str, Any], event: PermitReleased, now_ms: int) -> int:
    """What ``_holding`` gives once ``event`` is applied: a concurrency permit less, or
    the window's units with the attempt's reported ones."""
    if lim["kind"] == CONCURRENCY:
        return len(lim["holders"]) - (event.holder in lim["holders"])
    since = now_ms - lim["window_ms"]
    return sum(event.units if event.units is not None and g[2:] == [event.holder] else g[1]
               for g in lim["grants"] if g[0] > since)


def _reports(lim: Mapping[str, Any], event: PermitReleased) -> bool:
    """Whether a release of a rate permit granted in the window reports other units than
    were granted (which then count instead)."""
    return event.units is not None and any(
        g[2:] == [event.holder] and g[1] != event.units for g in lim["grants"])


def limiter_of(state: WorkflowState) -> dict[str, Any] | None:
    """A limiter's live state, None before its first request (or for a workflow that is
    no limiter)."""
    node = state.nodes.get(LIMITER_NODE)
    return node.limiter if node is not None else None


def _issue(rec: Recorder) -> None:
    """Grant the requests at the head of the queue while they fit (first come, first
    served: one that does not fit holds those behind it)."""
    while True:
        lim = limiter_of(rec.current)
        if lim is None or not lim["queue"]:
            return
        holder, units = lim["queue"][0]
        holding = _holding(lim, rec.at_ms)
        if not _fits(lim, holding, units):
            return
        after = holding + (1 if lim["kind"] == CONCURRENCY else units)
        rec.record(PermitIssued(rec.current.workflow_id, holder, units, after, lim["limit"],
                                rec.at_ms, len(lim["queue"]) - 1, lim.get("granted", 0) + 1))


def _holding(lim: Mapping[str, Any], now_ms: int) -> int:
    """Permits held (concurrency), or units granted in the window ending now (rate)."""
    if lim["kind"] == CONCURRENCY:
        return len(lim["holders"])
    since = now_ms - lim["window_ms"]
    return sum(g[1] for g in lim["grants"] if g[0] > since)


def _fits(lim: Mapping[str, Any], holding: int, units: int) -> bool:
    """Whether a request of ``units`` may be granted with ``holding`` held; a rate
    request larger than the whole limit is granted alone, into an empty window."""
    limit: int = lim["limit"]
    if lim["kind"] == CONCURRENCY:
        return holding < limit
    return holding + units <= limit or holding == 0


def woke(rec: Recorder, spec: NodeSpec, index: int | None = None) -> None:
    """The window timer fired (``TimerFired`` recorded): grant what fits now."""
    _issue(rec)


def start(rec: Recorder, spec: NodeSpec) -> None:
    """A limiter's node is started by its first request, never by a submission: in a
    submitted spec it fails."""
    flow.node_failed(rec, spec.id, f"{spec.id}: {NOT_SUBMITTED}")


def attempt_succeeded(rec: Recorder, spec: NodeSpec, report: ev.TaskSucceeded) -> None:
    """A limiter has no tasks."""


def attempt_failed(rec: Recorder, spec: NodeSpec, report: ev.TaskFailed) -> None:
    """A limiter has no tasks."""


# -- evolution --------------------------------------------------------------------------

def _requested(state: WorkflowState, body: PermitRequested) -> None:
    """The request queues (the first opens the limiter); the limit is the one the
    latest request carried, unless one is defined (``LimitDefined``)."""
    lim = _opened(state, body.kind, body.key, body.limit, body.window_ms)
    if lim.get("defined") is None:
        lim["limit"], lim["window_ms"] = body.limit, body.window_ms
    lim["queue"].append([body.holder, body.units])
    _settle(state, lim, body.at_ms)


def _opened(state: WorkflowState, kind: str, key: str, limit: int,
            window_ms: int) -> dict[str, Any]:
    """The limiter's live state; its first event opens it (its node runs for good)."""
    node = node_state(state, LIMITER_NODE)
    if node.limiter is None:
        node.status = NodeStatus.RUNNING
        node.limiter = {"kind": kind, "key": key, "limit": limit, "window_ms": window_ms,
                        "holders": {}, "queue": [], "grants": [], "granted": 0}
    return node.limiter


def _defined(state: WorkflowState, body: LimitDefined) -> None:
    """A defined limit governs until it is taken back; then the limit is the next
    request's (the one before stays meanwhile)."""
    lim = _opened(state, body.kind, body.key, body.limit, body.window_ms)
    if body.limit:
        lim["defined"] = [body.limit, body.window_ms]
        lim["limit"], lim["window_ms"] = body.limit, body.window_ms
    else:
        lim.pop("defined", None)
    _settle(state, lim, body.at_ms)


def _released(state: WorkflowState, body: PermitReleased) -> None:
    lim = _live(state)
    lim["holders"].pop(body.holder, None)
    lim["queue"] = [q for q in lim["queue"] if q[0] != body.holder]
    if body.units is not None:  # a rate permit's units as used
        for grant in lim["grants"]:
            if grant[2:] == [body.holder]:
                grant[1] = body.units
    _settle(state, lim, body.at_ms)


def _issued(state: WorkflowState, body: PermitIssued) -> None:
    lim = _live(state)
    lim["queue"] = [q for q in lim["queue"] if q[0] != body.holder]
    lim["granted"] = lim.get("granted", 0) + 1
    if lim["kind"] == CONCURRENCY:
        lim["holders"][body.holder] = body.units
    else:
        lim["grants"].append([body.at_ms, body.units, body.holder])
    _settle(state, lim, body.at_ms)


def _refused(state: WorkflowState, body: PermitRefused) -> None:
    """A refusal changes nothing: the request was never queued."""
    _live(state)


def _live(state: WorkflowState) -> dict[str, Any]:
    lim = limiter_of(state)
    if lim is None:
        raise IllegalTransition(f"{state.workflow_id} is no open limiter")
    return lim


def _settle(state: WorkflowState, lim: dict[str, Any], now_ms: int) -> None:
    """Drop a rate limiter's grants that left the window, and arm its window timer for
    when the head of the queue fits (none when nothing waits, or it fits now)."""
    state.timers.pop(WINDOW_TIMER, None)
    if lim["kind"] != RATE:
        return
    since = now_ms - lim["window_ms"]
    lim["grants"] = [g for g in lim["grants"] if g[0] > since]
    if not lim["queue"]:
        return
    units = lim["queue"][0][1]
    holding = sum(g[1] for g in lim["grants"])
    if _fits(lim, holding, units):
        return  # granted in this step (``_issue``), or a release's step grants it
    for at, used, *_ in sorted(lim["grants"]):
        holding -= used
        if _fits(lim, holding, units):
            state.timers[WINDOW_TIMER] = TimerState(at + lim["window_ms"], LIMITER_NODE,
                                                    None, 0)
            return


def _timer_fired(state: WorkflowState, timer_id: str, timer: TimerState) -> None:
    """The window timer fired and left ``state.timers``: arm it again if the head of
    the queue still does not fit (its grants are decided in the same step)."""
    lim = limiter_of(state)
    if lim is not None:
        _settle(state, lim, timer.fire_at_ms)


def _parse(raw: Mapping[str, Any], where: str, work: Work,
           validate: Callable[[Any], list[str]], faults: list[str]) -> KindParts:
    return no_parts(raw, where, work, validate, faults)


UNIT = KindUnit(NodeKind.LIMITER, frozenset(), start, attempt_succeeded, attempt_failed,
                parse=_parse, timer_prefix=TIMER_PREFIX, timer_fired=woke,
                events={PermitRequested: _requested, PermitReleased: _released,
                        PermitIssued: _issued, PermitRefused: _refused,
                        LimitDefined: _defined},
                evolution=KindEvolution(timer_fired=_timer_fired),
                describe=DESCRIBE, follow=FOLLOW)  # an attempt's TaskHeld, PermitGranted too
"""The ``limiter`` kind."""
