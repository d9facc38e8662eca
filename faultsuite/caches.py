"""The caches' checks: the histories of the caches a run's cached nodes created
(``headwater.core.caching``: ids ``cache::...``), set apart from the workflows' like
the limiters' (a cache never ends, and no one submits it).

Each cache's history must be sound like a workflow's (seq 1..n without gaps, no seq with
two bodies, it folds); one attempt at a time computes its key (no miss is served while
another attempt computes: single flight); and once every run has ended, no attempt
computes and none waits (no lookup left behind, which would hold every later lookup of
the key): a SIGKILL at any point must change none of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faultsuite.audit import audit_history
from faultsuite.limits import LEFT_BEHIND, first_of_each_seq
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.caching import is_cache
from headwater.core.evolve import evolve
from headwater.core.kinds.cache.rules import cache_of
from headwater.core.state import IllegalTransition, WorkflowState


def cache_faults(records: Sequence[Record]) -> tuple[list[str], dict[str, Any]]:
    """Each broken cache invariant (one line each), and the caches' figures: how many
    there were, the lookups, hits, misses and stores they recorded."""
    per: dict[str, list[ev.HistoryEvent]] = {}
    for r in records:
        if isinstance(r.value, ev.HistoryEvent) and is_cache(r.value.workflow_id):
            per.setdefault(r.value.workflow_id, []).append(r.value)
    faults: list[str] = []
    figures: dict[str, Any] = {"caches": len(per), "lookups": 0, "hits": 0, "misses": 0,
                               "stores": 0}
    for wid, events in sorted(per.items()):
        faults += [f for f in audit_history(wid, events).violations()
                   if "terminal events" not in f]
        state, found = _fold(wid, first_of_each_seq(events))
        faults += found
        doc = cache_of(state) if state is not None else None
        if doc is None:
            faults.append(f"{wid}: no cache state")
            continue
        for name in ("lookups", "hits", "misses", "stores"):
            figures[name] += doc[name]
        if doc["computing"] is not None:
            faults.append(f"{wid}: {LEFT_BEHIND}: {doc['computing'][0]} computes its key")
        if doc["waiters"]:
            faults.append(f"{wid}: {LEFT_BEHIND}: lookups waiting: "
                          f"{[w[0] for w in doc['waiters']][:5]}")
    return faults, figures


def _fold(wid: str, history: Sequence[ev.HistoryEvent],
          ) -> tuple[WorkflowState | None, list[str]]:
    """The cache's state once its history is folded, and each miss served while another
    attempt computed the key (the fold stops at the first event it refuses; the audit
    names it)."""
    state: WorkflowState | None = None
    faults = []
    for e in history:
        doc = cache_of(state) if state is not None else None
        if (isinstance(e.body, ev.CacheServed) and not e.body.hit and not e.body.alone
                and doc is not None and doc["computing"] is not None):
            faults.append(f"{wid}: seq {e.seq} lets {e.body.holder} compute while "
                          f"{doc['computing'][0]} does")
        try:
            state = evolve(state, e)
        except IllegalTransition:
            break
    return state, faults
