"""A limiter's bound on the requests it keeps waiting (``MAX_QUEUED``, made small here):
one more is refused (``PermitRefused``), routed to the attempt as ``PermitDenied``, and
the attempt fails retryable (``LimitQueueFull``) to ask again after its backoff; its
release records nothing; copies of the request or of the refusal change nothing that
the attempt's end does not give back (``permit_world``: the core's ``decide`` and the
coordinator's routing through the codec)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from faultsuite.limits import LEFT_BEHIND, limiter_faults
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.kinds.limiter import rules
from headwater.core.limits import limiter_id
from headwater.core.machine import Context, decide
from headwater.core.machine.holds import LIMIT_QUEUE_FULL
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus, WorkflowStatus
from tests.unit.services.coordinator.permit_world import World

LID = limiter_id("concurrency", "k")


@pytest.fixture(autouse=True)
def _small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "MAX_QUEUED", 2)


def _spec(attempts: int = 3) -> dict[str, Any]:
    return {"name": "limited", "nodes": [{"id": "call", "task": "t.call", "input": "${input}",
                                          "retry": {"max_attempts": attempts},
                                          "concurrency": {"key": "k", "limit": 1}}]}


def _four(world: World, attempts: int = 3) -> None:
    """r0 holds the permit, r1 and r2 wait (the bound), r3 is refused."""
    for i in range(4):
        world.apply(ev.WorkflowSubmitted(f"r{i}", _spec(attempts), {"i": i}, world.now, None))
        world.deliver()
    world.start_all()


def _limiter_bodies(world: World, kind: type[Any]) -> list[Any]:
    return [e.body for e in world.history[LID] if isinstance(e.body, kind)]


def _fire(world: World, wid: str) -> None:
    world.now += 60_000
    state = world.states[wid]
    assert state is not None
    for timer_id in list(state.timers):
        world.apply(ev.TimerFired(wid, timer_id, world.now))


def test_a_request_over_the_bound_is_refused_and_its_attempt_asks_again() -> None:
    world = World(random.Random(1))
    _four(world)
    assert list(world.running) == ["r0/call/1"]
    lim = world.run_limiter(LID)
    assert [q[0] for q in lim["queue"]] == ["r1/call/1", "r2/call/1"]
    (refused,) = _limiter_bodies(world, ev.PermitRefused)
    assert (refused.holder, refused.bound, refused.holding, refused.queued) == (
        "r3/call/1", 2, 1, 2)
    r3 = world.states["r3"]
    assert r3 is not None and r3.status is WorkflowStatus.RUNNING
    task = r3.tasks["call"]
    assert task.status is TaskStatus.RETRY_WAIT and task.error_type == LIMIT_QUEUE_FULL
    assert LID in (task.error or "") and "2 requests wait" in (task.error or "")
    assert task.limiters is None and task.waiting_for == ""
    assert any(t.startswith("retry") for t in r3.timers), r3.timers
    # its release reached the limiter and recorded nothing: it was never queued
    released = [b.holder for b in _limiter_bodies(world, ev.PermitReleased)]
    assert "r3/call/1" not in released
    returned = [e.body for e in world.history["r3"] if isinstance(e.body, ev.PermitsReturned)]
    assert [(b.attempt, b.limiters) for b in returned] == [(1, (LID,))]
    world.finish("r0/call/1")
    world.deliver()
    _fire(world, "r3")  # attempt 2: a new holder id, queued behind r2
    world.deliver()
    assert [q[0] for q in world.run_limiter(LID)["queue"]] == ["r2/call/1", "r3/call/2"]
    while True:
        world.start_all()
        if not world.running:
            break
        world.finish(sorted(world.running)[0])
        world.deliver()
    for i in range(4):
        state = world.states[f"r{i}"]
        assert state is not None and state.status is WorkflowStatus.SUCCEEDED, i
    lim = world.run_limiter(LID)
    assert lim["holders"] == {} and lim["queue"] == []
    world.replays()


def test_a_refused_attempt_with_no_attempts_left_fails_its_node() -> None:
    world = World(random.Random(2))
    _four(world, attempts=1)
    r3 = world.states["r3"]
    assert r3 is not None and r3.status is WorkflowStatus.FAILED
    failure = r3.nodes["call"].failure
    assert failure is not None and failure["type"] == LIMIT_QUEUE_FULL
    assert LID in failure["message"]
    assert not r3.timers
    world.replays()


def test_a_refusal_the_attempt_does_not_wait_for_changes_nothing() -> None:
    """A copy of the refusal, one for an attempt already retried, or one from a limiter
    the attempt does not wait for: no step."""
    world = World(random.Random(3))
    _four(world)
    denial = ev.PermitDenied("r3", "call", None, 1, LID, 2, world.now)
    assert _nothing(world.states["r3"], denial)  # failed already
    world.finish("r0/call/1")
    world.deliver()
    _fire(world, "r3")
    world.deliver()
    r3 = world.states["r3"]
    assert r3 is not None and r3.tasks["call"].status is TaskStatus.HELD
    assert r3.tasks["call"].attempt == 2
    assert _nothing(r3, denial)  # attempt 1's, and attempt 2 waits
    other = ev.PermitDenied("r3", "call", None, 2, limiter_id("concurrency", "z"), 2,
                            world.now)
    assert _nothing(r3, other)  # not the limiter it waits for
    world.replays()


@pytest.mark.parametrize("duplicates", [0.3, 0.6])
def test_copies_of_every_record_leave_nothing_behind(duplicates: float) -> None:
    """Requests, refusals, grants and releases delivered twice at random: every run
    succeeds, nothing is held or queued at the end, the audit finds nothing."""
    for seed in range(4):
        world = World(random.Random(seed), duplicates=duplicates)
        for i in range(8):
            world.apply(ev.WorkflowSubmitted(f"r{i}", _spec(attempts=50), {"i": i},
                                             world.now, None))
        while True:
            world.deliver()
            world.start_all()
            if world.running:
                world.finish(world.rng.choice(sorted(world.running)))
                continue
            waiting = [w for w, s in world.states.items() if s is not None and s.timers
                       and w != LID]
            if not waiting:
                break
            for wid in waiting:
                _fire(world, wid)
        for i in range(8):
            state = world.states[f"r{i}"]
            assert state is not None and state.status is WorkflowStatus.SUCCEEDED, (seed, i)
        lim = world.run_limiter(LID)
        assert lim["holders"] == {} and lim["queue"] == []
        assert _limiter_bodies(world, ev.PermitRefused), seed  # the bound was met
        records = [Record(0, n, LID, e, b"") for n, e in enumerate(world.history[LID])]
        faults, figures = limiter_faults(records)
        assert faults == [] and figures["most_held"][LID] == 1
        assert figures["refused"] == len(_limiter_bodies(world, ev.PermitRefused))
        world.replays()


def test_a_copy_of_a_refused_request_queued_once_the_queue_shrank_is_released() -> None:
    """The copy comes before the attempt's release (both go to the limiter's partition
    of ``control``, in the order they were produced): it is queued once there is room,
    and granted; the grant finds the attempt failed, and its release frees the permit."""
    world = World(random.Random(4))
    for i in range(3):
        world.apply(ev.WorkflowSubmitted(f"r{i}", _spec(), {"i": i}, world.now, None))
        world.deliver()
    world.start_all()
    world.apply(ev.WorkflowSubmitted("r3", _spec(), {"i": 3}, world.now, None))
    (request,) = world.inbox[LID]
    world.deliver(at_most=2)  # refused; r3's attempt 1 fails and sends its release
    (release,) = world.inbox[LID]
    assert isinstance(release, ev.PermitReleased) and release.holder == "r3/call/1"
    world.inbox[LID].clear()  # held back: the copy of the request comes first
    world.finish("r0/call/1")
    world.apply(ev.CancelRequested("r1", world.now, "no longer"))
    world.deliver()
    world.start_all()
    assert list(world.running) == ["r2/call/1"]
    world.apply(request)  # the copy: there is room now, so it queues
    assert [q[0] for q in world.run_limiter(LID)["queue"]] == ["r3/call/1"]
    world.finish("r2/call/1")
    world.deliver()  # the limiter grants the copy; r3 is not waiting for it
    assert world.run_limiter(LID)["holders"] == {"r3/call/1": 1}
    world.start_all()
    assert world.running == {}  # the grant dispatched nothing
    r3 = world.states["r3"]
    assert r3 is not None and r3.tasks["call"].status is TaskStatus.RETRY_WAIT
    world.apply(release)  # the failed attempt's release frees what its copy got
    lim = world.run_limiter(LID)
    assert lim["holders"] == {} and lim["queue"] == []
    _fire(world, "r3")
    world.deliver()
    world.start_all()
    assert list(world.running) == ["r3/call/2"]
    world.finish("r3/call/2")
    world.deliver()
    r3 = world.states["r3"]
    assert r3 is not None and r3.status is WorkflowStatus.SUCCEEDED
    world.replays()


def test_the_audit_names_a_refusal_while_the_queue_had_room() -> None:
    world = World(random.Random(5))
    _four(world)
    history = world.history[LID]  # r3 refused with 2 waiting: no fault
    found = limiter_faults([Record(0, n, LID, e, b"") for n, e in enumerate(history)])[0]
    assert all(LEFT_BEHIND in f for f in found), found  # the runs go on
    forged = ev.HistoryEvent(LID, history[-1].seq + 1,
                             ev.PermitRefused(LID, "r9/call/1", 1, 3, world.now))
    records = [Record(0, n, LID, e, b"") for n, e in enumerate([*history, forged])]
    faults = [f for f in limiter_faults(records)[0] if LEFT_BEHIND not in f]
    assert faults == [f"{LID}: seq {forged.seq} refused r9/call/1 with 2 waiting, under its "
                      f"bound of 3"]


def _nothing(state: WorkflowState | None, event: Any) -> bool:
    """Whether ``event`` records nothing in ``state``."""
    step = decide(state, event, Context()).step
    return step is None or step.events == []
