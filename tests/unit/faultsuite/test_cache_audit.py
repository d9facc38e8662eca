"""The fault suite's checks of the caches (``faultsuite.caches``), on histories the core
makes (no broker): a cache whose every lookup was answered and every computing attempt
released passes with its figures; one left computing or with a lookup waiting once the
runs ended is named; the workflows' audits leave the caches (and limiters) apart; the
batch has a cached shape whose items share their keys across its workflows."""

from __future__ import annotations

from typing import Any

from faultsuite.batch import ALL_SHAPES, make_batch
from faultsuite.caches import cache_faults
from faultsuite.limits import LEFT_BEHIND, limiter_faults
from faultsuite.shapes import CACHED_KEYS
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.caching import cache_id
from headwater.core.machine import step
from headwater.core.state import WorkflowState

T0 = 1_700_000_000_000
CID = cache_id(None, "e2e.digest", "fb.k0")


def _history(*inputs: ev.Input) -> list[Record]:
    state: WorkflowState | None = None
    out: list[Record] = []
    for record in inputs:
        result = step(state, record)
        state = result.state
        out += [Record(0, len(out), CID, e, b"") for e in result.events]
    return out


def _look(holder: str) -> ev.CacheLookedUp:
    return ev.CacheLookedUp(CID, holder, "e2e.digest", "fb.k0", 60_000, False, T0)


def _release(holder: str, output: Any = None) -> ev.CacheReleased:
    source = {"workflow_id": holder.split("/")[0], "node": "m", "index": 0, "attempt": 1}
    return ev.CacheReleased(CID, holder, T0 + 10, output is not None, output,
                            source if output is not None else None, 10, None)


def test_a_cache_whose_lookups_were_all_answered_passes_with_its_figures() -> None:
    records = _history(_look("w1/m/0/1"), _look("w2/m/0/1"), _release("w1/m/0/1", "x"),
                       _look("w3/m/0/1"))
    faults, figures = cache_faults(records)
    assert faults == []
    assert figures == {"caches": 1, "lookups": 3, "hits": 2, "misses": 1, "stores": 1}
    assert limiter_faults(records) == ([], {"limiters": 0, "granted": 0, "refused": 0,
                                                "most_held": {}})


def test_a_computing_attempt_or_a_waiting_lookup_left_behind_is_named() -> None:
    faults, _ = cache_faults(_history(_look("w1/m/0/1"), _look("w2/m/0/1")))
    assert len(faults) == 2 and all(LEFT_BEHIND in f for f in faults), faults
    assert "w1/m/0/1 computes its key" in faults[0] and "w2/m/0/1" in faults[1]


def test_a_miss_served_while_another_attempt_computes_is_named() -> None:
    records = _history(_look("w1/m/0/1"))
    served = next(r for r in records if isinstance(r.value.body, ev.CacheServed))
    copy = ev.HistoryEvent(CID, served.value.seq + 1,
                           ev.CacheServed(CID, "w2/m/0/1", False, T0))
    faults, _ = cache_faults([*records, Record(0, 9, CID, copy, b"")])
    assert any("lets w2/m/0/1 compute while w1/m/0/1 does" in f for f in faults), faults


def test_the_batch_has_a_cached_shape_whose_items_share_keys() -> None:
    batch = make_batch("fb", 2 * len(ALL_SHAPES))
    cached = [s for s in batch if s.shape == "cached"]
    assert len(cached) == 2
    keys = [set(s.input["items"]) for s in cached]
    assert keys[0] == keys[1] and len(keys[0]) == CACHED_KEYS  # shared across workflows
    node = cached[0].spec["nodes"][0]
    assert node["cache"] == {"key": "${item}", "ttl": "1h"}
