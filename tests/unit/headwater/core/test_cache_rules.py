"""Task result caching in the core: the ``cache`` field, the cache's id, the cache's
rules (hit, miss, single flight, a waiter promoted after a failure, refresh, expiry,
copies of every input, replay) and the attempt's side (a hit succeeds without a
dispatch, a miss dispatches, a late answer changes nothing, a cancel while waiting
releases)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core import events as ev
from headwater.core.caching import (
    DAY_MS,
    DEFAULT_TTL_MS,
    CacheSpec,
    cache_id,
    parse_cache,
    ttl_ms,
)
from headwater.core.evolve import evolve
from headwater.core.kinds.cache.rules import EXPIRE_TIMER, cache_of
from headwater.core.limits import reserved_id
from headwater.core.machine import step
from headwater.core.machine.refusals import refusal
from headwater.core.spec import parse_spec
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus, WorkflowStatus
from headwater.errors import SpecError

T0 = 1_700_000_000_000
CID = cache_id("acme", "rag.embed", "doc-1")


@pytest.mark.parametrize(("given", "ms"), [
    (30, 30_000), (0.5, 500), ("30s", 30_000), ("15m", 900_000), ("12h", 43_200_000),
    ("7d", 7 * DAY_MS), ("250ms", 250), ("365d", 365 * DAY_MS)])
def test_a_ttl_is_seconds_or_a_duration(given: Any, ms: int) -> None:
    assert ttl_ms(given) == ms


@pytest.mark.parametrize("given", ["7 days", "366d", 0, -1, True, "d", None, float("inf")])
def test_a_bad_ttl_is_refused(given: Any) -> None:
    with pytest.raises(ValueError):
        ttl_ms(given)


def test_the_cache_field_parses_and_names_its_faults() -> None:
    faults: list[str] = []
    assert parse_cache({"cache": {"key": "${input.doc}"}}, "node 'a'", faults) == CacheSpec(
        "${input.doc}", DEFAULT_TTL_MS)
    assert parse_cache({}, "node 'a'", faults) is None and faults == []
    for bad in ({"key": "x", "ttl": "forever"}, {"key": ""}, {"key": "x", "tll": 3}, "x"):
        parse_cache({"cache": bad}, "node 'a'", faults)
    assert len(faults) == 4 and all(f.startswith("node 'a': cache") for f in faults), faults


def _spec(**cache: Any) -> dict[str, Any]:
    return {"name": "c", "nodes": [
        {"id": "up", "task": "t.up"},
        {"id": "a", "task": "rag.embed", "needs": ["up"], "cache": cache or {"key": "k"}}]}


def _faults(doc: dict[str, Any]) -> str:
    try:
        parse_spec(doc)
    except SpecError as e:
        return str(e)
    return ""


def test_references_in_a_cache_key_are_checked_with_the_specs() -> None:
    assert _faults(_spec(key="${nodes.up.output.doc}")) == ""
    assert parse_spec(_spec(key="k", ttl="12h")).node("a").cache == CacheSpec("k", 43_200_000)
    assert "cache: ${nodes.nope.output}" in _faults(_spec(key="${nodes.nope.output}"))
    assert "cache: ${item}" in _faults(_spec(key="${item}"))
    assert "cache" in _faults(_spec(key="a-${input.x}"))
    assert _faults({"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "t", "over": "${input.xs}",
         "cache": {"key": "${item}", "ttl": "1h"}}]}) == ""


def test_a_caches_id_is_scoped_by_tenant_and_task() -> None:
    ids = {cache_id("acme", "rag.embed", "k"), cache_id("globex", "rag.embed", "k"),
           cache_id("acme", "rag.chunk", "k"), cache_id(None, "rag.embed", "k"),
           cache_id("acme", "rag.embed", "k2")}
    assert len(ids) == 5 and all(i.startswith("cache::") and len(i) == 47 for i in ids)
    assert cache_id("acme", "rag.embed", "k") == cache_id("acme", "rag.embed", "k")
    assert reserved_id(CID) and reserved_id("limit::rate:x") and not reserved_id("cache-1")


def test_submissions_cancels_and_signals_of_a_cache_and_forged_lookups_are_refused() -> None:
    for record in (ev.WorkflowSubmitted(CID, {"name": "x", "nodes": []}, None, T0),
                   ev.CancelRequested(CID, T0), ev.SignalSent(CID, "s", T0)):
        assert "refused" in (refusal(None, record) or "")
    assert "no cache's id" in (refusal(None, ev.CacheLookedUp(
        "cache::nope", "w/a/1", "t", "k", 1000, False, T0)) or "")
    assert refusal(None, ev.CacheLookedUp(CID, "w/a/1", "t", "k", 1000, False, T0)) is None


# -- the cache's rules --------------------------------------------------------------------

class Cache:
    """A cache stepped through inputs, keeping its whole history for a replay."""

    def __init__(self) -> None:
        self.state: WorkflowState | None = None
        self.history: list[ev.HistoryEvent] = []

    def apply(self, record: ev.Input) -> list[Any]:
        result = step(self.state, record)
        self.state = result.state
        self.history += result.events
        return [e.body for e in result.events]

    def look(self, holder: str, at: int = T0, refresh: bool = False,
             ttl: int = 60_000) -> list[Any]:
        return self.apply(ev.CacheLookedUp(CID, holder, "rag.embed", "doc-1", ttl, refresh, at))

    def release(self, holder: str, output: Any = None, at: int = T0) -> list[Any]:
        stored = output is not None
        source = {"workflow_id": holder.split("/")[0], "node": "a", "index": None,
                  "attempt": 1} if stored else None
        return self.apply(ev.CacheReleased(CID, holder, at, stored, output, source,
                                           1500 if stored else 0, 40 if stored else None))

    @property
    def doc(self) -> dict[str, Any]:
        assert self.state is not None
        found = cache_of(self.state)
        assert found is not None
        return found


def _served(bodies: list[Any]) -> list[tuple[str, bool]]:
    return [(b.holder, b.hit) for b in bodies if isinstance(b, ev.CacheServed)]


def test_one_computes_the_others_wait_and_all_get_its_output() -> None:
    c = Cache()
    assert _served(c.look("w1/a/1")) == [("w1/a/1", False)]
    assert c.look("w1/a/1") == []  # a copy of the computing one's lookup
    assert _served(c.look("w2/a/1")) == []  # single flight: it waits
    assert _served(c.look("w3/a/1")) == []
    assert c.look("w2/a/1") == []  # a copy of a waiter's lookup
    assert c.doc["computing"][0] == "w1/a/1" and len(c.doc["waiters"]) == 2
    out = c.release("w1/a/1", {"vec": [1]}, T0 + 2000)
    assert _served(out) == [("w2/a/1", True), ("w3/a/1", True)]
    assert all(b.output == {"vec": [1]} and b.source["workflow_id"] == "w1"
               for b in out if isinstance(b, ev.CacheServed))
    assert c.release("w1/a/1", {"vec": [1]}, T0 + 2001) == []  # a copy of the release
    assert _served(c.look("w4/a/1", T0 + 3000)) == [("w4/a/1", True)]  # a live entry
    assert c.doc["hits"] == 3 and c.doc["misses"] == 1 and c.doc["stores"] == 1
    assert c.state is not None
    assert c.state.timers[EXPIRE_TIMER].fire_at_ms == T0 + 2000 + 60_000


def test_a_failed_computer_lets_the_next_waiter_compute() -> None:
    c = Cache()
    c.look("w1/a/1")
    c.look("w2/a/1")
    c.look("w3/a/1")
    assert _served(c.release("w1/a/1")) == [("w2/a/1", False)]  # promoted: it computes
    assert c.doc["computing"][0] == "w2/a/1" and c.doc["entry"] is None
    assert c.release("w3/a/1") != [] and c.doc["waiters"] == []  # a waiter cancelled
    assert c.release("w3/a/1") == []  # a copy: it waits no longer
    assert _served(c.release("w2/a/1", "x")) == []  # stored; no one waits
    assert c.doc["entry"]["output"] == "x"


def test_a_refresh_computes_past_a_live_entry_and_waits_behind_a_computer() -> None:
    c = Cache()
    c.look("w1/a/1")
    c.release("w1/a/1", "old")
    assert _served(c.look("r1/a/1", T0 + 10, refresh=True)) == [("r1/a/1", False)]
    assert _served(c.look("w2/a/1", T0 + 20)) == [("w2/a/1", True)]  # the old one meanwhile
    assert _served(c.look("r2/a/1", T0 + 30, refresh=True)) == []  # behind r1
    out = c.release("r1/a/1", "new", T0 + 40)
    assert _served(out) == [("r2/a/1", True)]
    assert [b.output for b in out if isinstance(b, ev.CacheServed)] == ["new"]


def test_the_expiry_timer_drops_the_entry() -> None:
    c = Cache()
    c.look("w1/a/1")
    c.release("w1/a/1", "v")
    expires = T0 + 60_000
    assert c.apply(ev.TimerFired(CID, EXPIRE_TIMER, expires - 1)) == []  # early
    assert c.doc["entry"] is not None
    assert c.apply(ev.TimerFired(CID, EXPIRE_TIMER, expires))
    assert c.doc["entry"] is None and c.state is not None and not c.state.timers
    assert _served(c.look("w2/a/1", expires + 1)) == [("w2/a/1", False)]


def test_a_replay_of_the_caches_history_gives_the_same_state() -> None:
    c = Cache()
    for holder in ("w1/a/1", "w2/a/1", "w3/a/1"):
        c.look(holder)
    c.release("w1/a/1")
    c.release("w2/a/1", {"v": 2})
    c.look("r/a/1", refresh=True)
    folded: WorkflowState | None = None
    for e in c.history:
        folded = evolve(folded, e)
    assert folded is not None and c.state is not None
    assert cache_of(folded) == c.doc and folded.timers == c.state.timers
    assert folded.seq == c.state.seq


# -- the attempt's side --------------------------------------------------------------------

SPEC = {"name": "cached", "nodes": [
    {"id": "a", "task": "rag.embed", "input": {"doc": "${input.doc}"},
     "cache": {"key": "${input.doc}", "ttl": "1h"}}], "output": "${nodes.a.output}"}


def _run(refresh: bool = False) -> tuple[WorkflowState, list[Any]]:
    result = step(None, ev.WorkflowSubmitted("w1", SPEC, {"doc": "d"}, T0, "acme",
                                             cache_refresh=refresh))
    assert result.state is not None
    return result.state, [e.body for e in result.events]


def _answer(hit: bool, attempt: int = 1) -> ev.CacheAnswered:
    return ev.CacheAnswered("w1", "a", None, attempt, cache_id("acme", "rag.embed", "d"), hit,
                            T0 + 5, {"vec": [9]} if hit else None,
                            {"workflow_id": "w0", "node": "a", "index": None, "attempt": 1}
                            if hit else None, 1500 if hit else 0, 40 if hit else None)


def test_an_attempt_looks_up_first_and_a_hit_succeeds_without_a_dispatch() -> None:
    state, bodies = _run()
    (looked,) = [b for b in bodies if isinstance(b, ev.TaskLookedUp)]
    assert looked.cache == cache_id("acme", "rag.embed", "d") and not looked.refresh
    assert not [b for b in bodies if isinstance(b, ev.TaskDispatched)]
    assert state.tasks["a"].status is TaskStatus.HELD
    result = step(state, _answer(True))
    kinds = [type(e.body).__name__ for e in result.events]
    assert kinds[0] == "TaskCached" and "TaskDispatched" not in kinds
    assert "CacheReturned" not in kinds  # a hit releases nothing
    assert result.state is not None and result.state.status is WorkflowStatus.SUCCEEDED
    assert result.state.output == {"vec": [9]}
    assert step(result.state, _answer(True)).events == []  # a copy


def test_a_miss_dispatches_and_its_success_is_stored() -> None:
    state, _ = _run(refresh=True)
    assert state.cache_refresh
    result = step(state, _answer(False))
    assert [type(e.body).__name__ for e in result.events] == ["CacheAnswered",
                                                             "TaskDispatched"]
    assert result.state is not None
    assert step(result.state, _answer(False)).events == []  # no longer waits
    state = step(result.state, ev.TaskStarted("w1", "a", None, 1, T0 + 10, "wk")).state
    done = step(state, ev.TaskSucceeded("w1", "a", None, 1, T0 + 1510, {"vec": [1]},
                                        units=40))
    (returned,) = [e.body for e in done.events if isinstance(e.body, ev.CacheReturned)]
    assert returned.stored and returned.output == {"vec": [1]}
    assert returned.saved_ms == 1500 and returned.units == 40


def test_a_cancel_while_waiting_releases_and_a_late_answer_changes_nothing() -> None:
    state, _ = _run()
    result = step(state, ev.CancelRequested("w1", T0 + 1))
    (returned,) = [e.body for e in result.events if isinstance(e.body, ev.CacheReturned)]
    assert not returned.stored and returned.output is None
    assert result.state is not None
    assert step(result.state, _answer(True)).events == []


def test_the_clients_cache_refresh_is_the_submissions_query() -> None:
    from headwater.client.http import submit_call

    call = submit_call({"name": "n", "nodes": []}, None, None, "w1", {"cache_refresh": True})
    assert call.params == {"cache": "refresh"} and "cache" not in call.json
    assert submit_call({"name": "n", "nodes": []}, None, None, "w1").params == {}


def test_a_lookup_over_the_bound_on_waiters_computes_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.core.kinds.cache import rules

    monkeypatch.setattr(rules, "MAX_WAITERS", 2)
    c = Cache()
    c.look("w1/a/1")
    assert _served(c.look("w2/a/1")) == [] and _served(c.look("w3/a/1")) == []
    over = c.look("w4/a/1")
    assert _served(over) == [("w4/a/1", False)]
    assert [b.alone for b in over if isinstance(b, ev.CacheServed)] == [True]
    assert c.doc["computing"][0] == "w1/a/1" and len(c.doc["waiters"]) == 2
    assert c.release("w4/a/1", "its own") == []  # not the key's computing one: not stored
    assert c.doc["entry"] is None
    stored = c.release("w1/a/1", "x", T0 + 10)
    assert _served(stored) == [("w2/a/1", True), ("w3/a/1", True)]
    assert c.doc["misses"] == 2 and c.doc["hits"] == 2 and c.doc["stores"] == 1
    replayed: WorkflowState | None = None
    for e in c.history:
        replayed = evolve(replayed, e)
    assert replayed is not None and cache_of(replayed) == c.doc


def test_a_paused_miss_gives_its_cache_back_and_its_next_attempt_looks_up_again() -> None:
    """A pause recalls the attempt computing a miss: it releases the cache (empty, so a
    waiter computes) before its recall, and the resume looks the key up again under the
    next attempt, which may now be answered a hit."""
    state, _ = _run()
    state = step(state, _answer(False)).state
    assert state is not None
    paused = step(state, ev.PauseRequested("w1", T0 + 20, "p"))
    assert [type(e.body).__name__ for e in paused.events] == [
        "WorkflowPaused", "CacheReturned", "DispatchRecalled"]
    (returned,) = [e.body for e in paused.events if isinstance(e.body, ev.CacheReturned)]
    assert returned.attempt == 1 and not returned.stored
    assert paused.state is not None and paused.state.tasks["a"].cache == ""
    resumed = step(paused.state, ev.ResumeRequested("w1", T0 + 30, "r"))
    bodies = [e.body for e in resumed.events]
    assert [type(b).__name__ for b in bodies] == ["WorkflowResumed", "TaskLookedUp"]
    assert bodies[1].attempt == 2
    assert resumed.state is not None
    hit = step(resumed.state, _answer(True, attempt=2))
    assert hit.state is not None and hit.state.status is WorkflowStatus.SUCCEEDED
