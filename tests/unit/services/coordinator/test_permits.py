"""Concurrency keys and rate limits through the core and the coordinator's routing
(``permit_world``): a key's limit is never exceeded, every run finishes, nothing is held
or queued at the end, each history folds to its state, and a copy of any record changes
nothing."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from headwater.core import events as ev
from headwater.core.limits import limiter_id
from headwater.core.machine import Context, decide
from headwater.core.status import TaskStatus, WorkflowStatus
from ops.stuck import is_stuck, pending
from tests.unit.services.coordinator.permit_world import World

CUSTOMERS = ("acme", "globex", "initech", "umbrella")


def _spec(**limits: object) -> dict[str, object]:
    return {"name": "limited", "nodes": [{"id": "call", "task": "t.call",
                                          "input": "${input}", "retry": {"max_attempts": 3},
                                          **limits}]}


def _fire_timers(world: World, but: str = "") -> None:
    """Time passes past every retry backoff: each workflow's timers fire."""
    world.now += 60_000
    for wid, state in list(world.states.items()):
        for timer_id in list(state.timers) if state is not None and wid != but else []:
            world.apply(ev.TimerFired(wid, timer_id, world.now))


def _running_per(world: World, field: str) -> Counter[str]:
    return Counter(d.input[field] for d in world.running.values())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("duplicates", [0.0, 0.3])
def test_a_concurrency_key_of_two_across_four_customers(seed: int, duplicates: float) -> None:
    world = World(random.Random(seed), duplicates=duplicates)
    spec = _spec(concurrency={"key": "${input.customer}", "limit": 2})
    for i in range(20):
        world.apply(ev.WorkflowSubmitted(f"run-{i}", spec,
                                         {"customer": CUSTOMERS[i % 4], "i": i},
                                         world.now, None))
    fails = 3
    while True:
        world.deliver()
        world.start_all()
        per = _running_per(world, "customer")
        assert max(per.values(), default=0) <= 2, per
        if not world.running:
            break
        pick = world.rng.choice(sorted(world.running))
        ok = fails <= 0 or world.rng.random() > 0.2
        fails -= not ok
        world.finish(pick, ok)
        if not ok:
            _fire_timers(world)
    for i in range(20):
        state = world.states[f"run-{i}"]
        assert state is not None and state.status is WorkflowStatus.SUCCEEDED, i
    for c in CUSTOMERS:
        lim = world.run_limiter(limiter_id("concurrency", c))
        assert lim["holders"] == {} and lim["queue"] == [] and lim["limit"] == 2
        assert world.peak[limiter_id("concurrency", c)] == 2
    world.replays()


def test_requests_are_granted_in_the_order_they_came() -> None:
    world = World(random.Random(1))
    spec = _spec(concurrency={"key": "one", "limit": 1})
    for i in range(5):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {"i": i}, world.now, None))
        world.deliver()
    order = []
    while True:
        world.deliver()
        world.start_all()
        if not world.running:
            break
        (did,) = world.running
        order.append(did.split("/")[0])
        world.finish(did)
    assert order == [f"r{i}" for i in range(5)]


def test_a_cancelled_run_gives_back_its_permit_and_its_place() -> None:
    world = World(random.Random(2))
    spec = _spec(concurrency={"key": "k", "limit": 1})
    for i in range(3):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {}, world.now, None))
    world.deliver()
    world.start_all()
    assert list(world.running) == ["r0/call/1"]
    lim = world.run_limiter(limiter_id("concurrency", "k"))
    assert [q[0] for q in lim["queue"]] == ["r1/call/1", "r2/call/1"]
    r1 = world.states["r1"]
    assert r1 is not None and r1.tasks["call"].status is TaskStatus.HELD
    assert r1.tasks["call"].waiting_for == limiter_id("concurrency", "k")
    world.replays()  # a held task and a limiter with a queue fold and load back whole
    limiter = world.states[limiter_id("concurrency", "k")]
    assert limiter is not None
    assert is_stuck(r1) is None and is_stuck(limiter) is None  # each waits for the other
    assert "task call held for a permit of limit::concurrency:k" in pending(r1)
    world.apply(ev.CancelRequested("r1", world.now, "no longer"))  # waiting: leaves the queue
    world.apply(ev.CancelRequested("r0", world.now, "no longer"))  # holding: frees it
    world.running.clear()
    world.deliver()
    world.start_all()
    assert list(world.running) == ["r2/call/1"]
    lim = world.run_limiter(limiter_id("concurrency", "k"))
    assert lim["holders"] == {"r2/call/1": 1} and lim["queue"] == []
    world.replays()


def test_a_map_holds_each_item_and_a_retry_asks_again() -> None:
    world = World(random.Random(3))
    spec = {"name": "m", "nodes": [{"id": "m", "kind": "map", "task": "t.m",
                                    "over": "${input.items}", "input": "${item}",
                                    "retry": {"max_attempts": 2},
                                    "concurrency": {"key": "gpu", "limit": 3}}]}
    world.apply(ev.WorkflowSubmitted("m1", spec, {"items": list(range(10))}, world.now, None))
    failed_once = False
    while True:
        world.deliver()
        world.start_all()
        assert len(world.running) <= 3
        if not world.running:
            break
        pick = sorted(world.running)[0]
        world.finish(pick, ok=failed_once)
        failed_once = True
        _fire_timers(world)
    state = world.states["m1"]
    assert state is not None and state.status is WorkflowStatus.SUCCEEDED
    assert state.tasks["m[0]"].attempt == 2
    world.replays()


def test_a_rate_limit_grants_at_most_its_units_per_window() -> None:
    world = World(random.Random(4))
    spec = _spec(rate_limit={"key": "api", "limit": 5, "window_s": 10})
    for i in range(12):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {}, world.now, None))
    starts: list[int] = []
    lid = limiter_id("rate", "api")
    for _ in range(10):
        world.deliver()
        starts += [world.now] * len(world.dispatched)
        world.start_all()
        for did in list(world.running):
            world.finish(did)
        world.deliver()
        state = world.states[lid]
        assert state is not None
        timer = state.timers.get("limit:window")
        if timer is None:
            break
        world.now = timer.fire_at_ms
        world.apply(ev.TimerFired(lid, "limit:window", world.now))
    assert len(starts) == 12
    grants = [e.body.at_ms for e in world.history[lid] if isinstance(e.body, ev.PermitIssued)]
    assert len(grants) == 12
    for t in grants:  # in any window of 10 s, at most 5
        assert sum(1 for u in grants if t <= u < t + 10_000) <= 5
    assert grants[5] - grants[0] == 10_000 and grants[10] - grants[5] == 10_000
    world.replays()


def test_units_come_from_the_input() -> None:
    world = World(random.Random(5))
    spec = _spec(rate_limit={"key": "tokens", "limit": 100, "window_s": 60,
                             "units": "${input.tokens}"})
    for i, tokens in enumerate((60, 30, 20)):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {"tokens": tokens}, world.now, None))
        world.deliver()
    world.start_all()
    assert sorted(world.running) == ["r0/call/1", "r1/call/1"]  # 60 + 30; 20 waits
    state = world.states[limiter_id("rate", "tokens")]
    assert state is not None and "limit:window" in state.timers



def test_units_reported_count_instead_of_those_asked() -> None:
    world = World(random.Random(6))
    spec = _spec(rate_limit={"key": "llm", "limit": 120, "window_s": 60, "units": 50})
    for i in range(3):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {}, world.now, None))
        world.deliver()
    world.start_all()
    assert sorted(world.running) == ["r0/call/1", "r1/call/1"]  # 50 + 50; r2's 50: 150
    d = world.running.pop("r0/call/1")
    world.apply(ev.TaskSucceeded(d.workflow_id, d.node, d.index, d.attempt, world.now,
                                 "ok", units=10))  # it used 10 of its 50
    world.deliver()
    world.start_all()
    assert "r2/call/1" in world.running  # 10 + 50 + 50 fit in 120
    lid = limiter_id("rate", "llm")
    released = [e.body for e in world.history[lid] if isinstance(e.body, ev.PermitReleased)]
    assert [(b.units, b.holding) for b in released] == [(10, 60)]
    issued = [e.body for e in world.history[lid] if isinstance(e.body, ev.PermitIssued)]
    assert [b.holding for b in issued] == [50, 100, 110]
    world.replays()


def test_a_defined_limit_governs_until_taken_back() -> None:
    world = World(random.Random(7))
    lid = limiter_id("concurrency", "pool")
    world.apply(ev.LimitDefined(lid, "concurrency", "pool", 1, 0, world.now))  # before any run
    spec = _spec(concurrency={"key": "pool", "limit": 3})
    for i in range(4):
        world.apply(ev.WorkflowSubmitted(f"r{i}", spec, {}, world.now, None))
    world.deliver()
    world.start_all()
    assert len(world.running) == 1  # the definition's 1, not the spec's 3
    world.apply(ev.LimitDefined(lid, "concurrency", "pool", 1, 0, world.now))  # the same
    world.apply(ev.LimitDefined(lid, "concurrency", "pool", 2, 0, world.now))  # raised: one more
    world.deliver()
    world.start_all()
    assert len(world.running) == 2
    world.apply(ev.LimitDefined(lid, "concurrency", "pool", 0, 0, world.now))  # taken back
    world.finish(sorted(world.running)[0])
    world.deliver()
    world.start_all()
    assert len(world.running) == 2  # still 2 until a request brings the spec's 3
    defined = [e.body.limit for e in world.history[lid]
               if isinstance(e.body, ev.LimitDefined)]
    assert defined == [1, 2, 0]  # the repeated definition recorded nothing
    world.replays()


def test_a_grant_for_an_attempt_its_node_cancelled_changes_nothing() -> None:
    """A map that fails for good cancels its held items while the run goes on (an error
    route): the grants on their way for them dispatch nothing."""
    world = World(random.Random(8))
    spec = {"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "t.m", "over": "${input.items}",
         "input": "${item}", "on_error": "h", "concurrency": {"key": "one", "limit": 1}},
        {"id": "h", "task": "t.h"}]}
    world.apply(ev.WorkflowSubmitted("m1", spec, {"items": [0, 1, 2]}, world.now, None))
    world.deliver()
    world.start_all()
    assert list(world.running) == ["m1/m[0]/1"]
    world.finish("m1/m[0]/1", ok=False)  # fails for good: items 1 and 2 are cancelled
    world.deliver()
    world.start_all()
    assert sorted(world.running) == ["m1/h/1"]  # the handler only: no cancelled item ran
    lim = world.run_limiter(limiter_id("concurrency", "one"))
    assert lim["holders"] == {} and lim["queue"] == []
    state = world.states["m1"]
    assert state is not None
    assert [state.tasks[f"m[{i}]"].status for i in (1, 2)] == [TaskStatus.CANCELLED] * 2
    world.replays()


def test_a_restart_gives_back_what_a_held_attempt_asked_for() -> None:
    """The key comes from an upstream output, which a restart clears: the release names
    the limiter the request named all the same (``PermitsReturned``)."""
    world = World(random.Random(9))
    world.apply(ev.WorkflowSubmitted("r0", _spec(concurrency={"key": "eu", "limit": 1}), {},
                                     world.now, None))
    world.deliver()
    world.start_all()  # r0 holds limit::concurrency:eu
    spec = {"name": "restarting", "restart_on_failure": True, "max_restarts": 1,
            "heartbeat_timeout": 5, "nodes": [
                {"id": "a", "task": "t.a"}, {"id": "plan", "task": "t.plan"},
                {"id": "work", "task": "t.work", "needs": ["plan"],
                 "concurrency": {"key": "${nodes.plan.output.region}", "limit": 1}}]}
    world.apply(ev.WorkflowSubmitted("r1", spec, {}, world.now, None))
    world.start_all()
    d = world.running.pop("r1/plan/1")
    world.apply(ev.TaskSucceeded("r1", "plan", None, 1, world.now, {"region": "eu"}))
    world.deliver()
    lim = world.run_limiter(limiter_id("concurrency", "eu"))
    assert [q[0] for q in lim["queue"]] == ["r1/work/1"]
    world.now += 60_000  # a's lease ends: the run restarts
    world.apply(ev.TimerFired("r1", "lease:a:1", world.now))
    state = world.states["r1"]
    assert state is not None and state.generation == 2
    returned = [e.body for e in world.history["r1"] if isinstance(e.body, ev.PermitsReturned)]
    assert [(b.node, b.limiters) for b in returned] == [("work", ("limit::concurrency:eu",))]
    world.deliver()
    lim = world.run_limiter(limiter_id("concurrency", "eu"))
    assert lim["queue"] == [] and list(lim["holders"]) == ["r0/call/1"]
    assert d.node == "plan"
    world.replays()


@pytest.mark.parametrize(("record", "fault"), [
    (ev.PermitRequested("limit::rate:k", "w/a/1", "concurrency", "k", 2, 0, 1, 5),
     "no limiter of kind 'concurrency'"),
    (ev.PermitRequested("wf-1", "w/a/1", "concurrency", "k", 2, 0, 1, 5), "no limiter"),
    (ev.PermitRequested("limit::concurrency:k", "w/a/1", "concurrency", "k", 0, 0, 1, 5),
     "limit 0"),
    (ev.PermitRequested("limit::rate:k", "w/a/1", "rate", "k", 5, 0, 1, 5), "window_ms 0"),
    (ev.PermitRequested("limit::rate:k", "w/a/1", "rate", "k", 5, 1000, -3, 5), "units -3"),
    (ev.PermitReleased("wf-1", "w/a/1", 5), "no limiter's id"),
    (ev.LimitDefined("limit::concurrency:k", "concurrency", "k", -1, 0, 5), "limit -1"),
    (ev.SignalSent("limit::concurrency:k", "go", 5), "limiters'"),
    (ev.CancelRequested("limit::concurrency:k", 5, "no"), "limiters'"),
    (ev.WorkflowSubmitted("limit::x", {"name": "n", "nodes": []}, None, 5, None),
     "limiters'"),
])
def test_a_limiters_input_a_coordinator_would_not_send_is_refused(record: object,
                                                                     fault: str) -> None:
    decision = decide(None, record, Context())  # type: ignore[arg-type]
    assert decision.step is None and fault in (decision.refused or ""), decision.refused


def test_a_limiter_node_in_a_submitted_spec_fails() -> None:
    spec = {"name": "sneaky", "nodes": [{"id": "limiter", "kind": "limiter"}]}
    state = decide(None, ev.WorkflowSubmitted("s1", spec, None, 5, None), Context()).step
    assert state is not None and state.state is not None
    assert state.state.status is WorkflowStatus.FAILED
