"""The limiters' checks: the histories of the limiters a run's keyed limits created
(``headwater.core.limits``: ids ``limit::...``), set apart from the workflows' (a
limiter never ends, and no one submits it).

Each limiter's history must be sound like a workflow's (seq 1..n without gaps, no seq
with two bodies, it folds), no ``PermitIssued`` may leave more held than the limit (a
permit granted twice, or beyond the limit), no ``PermitRefused`` may refuse a request
while fewer than its bound waited (a refusal is the limiter's answer to a full queue,
and its attempt asks again later: not a fault), and once every run has ended the
limiter must hold nothing and queue nothing (no permit leaked, no request left behind,
a refused request's copy included): a SIGKILL at any point must change none of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from faultsuite.audit import WorkflowAudit, audit_history
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.limits import CONCURRENCY, LIMITER_NODE, LIMITER_PREFIX, reserved_id
from headwater.core.state import IllegalTransition, WorkflowState

LEFT_BEHIND = "left behind once every run ended"
"""What names a permit or a request left behind (``_leaks``)."""


def set_apart(audits: Mapping[str, WorkflowAudit]) -> dict[str, WorkflowAudit]:
    """The audits but the limiters' and the caches' (``limits.reserved_id``)."""
    return {w: a for w, a in audits.items() if not reserved_id(w)}


def limiter_faults(records: Sequence[Record]) -> tuple[list[str], dict[str, Any]]:
    """Each broken limiter invariant (one line each), and the limiters' figures: how
    many there were, the permits they granted, the most held at once of each."""
    per: dict[str, list[ev.HistoryEvent]] = {}
    for r in records:
        if isinstance(r.value, ev.HistoryEvent) and r.value.workflow_id.startswith(
                LIMITER_PREFIX):
            per.setdefault(r.value.workflow_id, []).append(r.value)
    faults: list[str] = []
    figures: dict[str, Any] = {"limiters": len(per), "granted": 0, "refused": 0,
                               "most_held": {}}
    for wid, events in sorted(per.items()):
        audit = audit_history(wid, events)
        faults += [f for f in audit.violations() if "terminal events" not in f]
        history = first_of_each_seq(events)
        issued = [e.body for e in history if isinstance(e.body, ev.PermitIssued)]
        figures["granted"] += len(issued)
        figures["most_held"][wid] = max((b.holding for b in issued), default=0)
        faults += [f"{wid}: seq {e.seq} left {e.body.holding} held, over its limit of "
                   f"{e.body.limit}" for e in history
                   if isinstance(e.body, ev.PermitIssued) and e.body.holding > e.body.limit
                   and (e.body.units <= e.body.limit or _concurrency(history))]
        faults += _refusals(wid, history)
        figures["refused"] += sum(isinstance(e.body, ev.PermitRefused) for e in history)
        faults += _leaks(wid, history)
    return faults, figures


def first_of_each_seq(events: Sequence[ev.HistoryEvent]) -> list[ev.HistoryEvent]:
    """The first record of each seq, in seq order."""
    first: dict[int, ev.HistoryEvent] = {}
    for e in events:
        first.setdefault(e.seq, e)
    return [first[s] for s in sorted(first)]


def _concurrency(history: Sequence[ev.HistoryEvent]) -> bool:
    return any(isinstance(e.body, ev.PermitRequested) and e.body.kind == CONCURRENCY
               for e in history)


def _refusals(wid: str, history: Sequence[ev.HistoryEvent]) -> list[str]:
    """Each refusal recorded while the queue had room (fewer than its bound waiting,
    by the limiter's state folded up to it)."""
    state: WorkflowState | None = None
    out = []
    try:
        for e in history:
            if isinstance(e.body, ev.PermitRefused):
                node = state.nodes.get(LIMITER_NODE) if state is not None else None
                lim = node.limiter if node is not None else None
                waiting = len(lim["queue"]) if lim is not None else 0
                if waiting < e.body.bound:
                    out.append(f"{wid}: seq {e.seq} refused {e.body.holder} with "
                               f"{waiting} waiting, under its bound of {e.body.bound}")
            state = evolve(state, e)
    except IllegalTransition:
        return out  # the audit names it
    return out


def _leaks(wid: str, history: Sequence[ev.HistoryEvent]) -> list[str]:
    """What the limiter still holds or queues once its history is folded (every run of
    the batch has ended by then)."""
    state: WorkflowState | None = None
    try:
        for e in history:
            state = evolve(state, e)
    except IllegalTransition:
        return []  # the audit names it
    node = state.nodes.get(LIMITER_NODE) if state is not None else None
    lim = node.limiter if node is not None else None
    if lim is None:
        return [f"{wid}: no limiter state"]
    out = []
    if lim["holders"]:
        out.append(f"{wid}: {LEFT_BEHIND}: permits held: {sorted(lim['holders'])[:5]}")
    if lim["queue"]:
        out.append(f"{wid}: {LEFT_BEHIND}: requests queued: "
                   f"{[q[0] for q in lim['queue']][:5]}")
    return out
