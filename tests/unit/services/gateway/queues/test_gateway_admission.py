"""Admission of submissions (``services.gateway.queues.admission``): queue placement, 400 for a
task no live worker serves (nor one did within the horizon), 429 for a full queue; and
the worker registry's liveness and horizon."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any

import pytest
from aiokafka import ConsumerRecord

from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.gateway.edge.problems import Problem
from services.gateway.queues.admission import (
    Admission,
    choose_queue,
    parse_maxdepth,
    place,
    unserved,
)
from services.gateway.queues.figures import Lag, QueueState, TimedCache, queue_state
from services.gateway.queues.workers import WorkerRegistry
from services.worker.announce import WorkerAnnounced, encode_announcement

SERVING = {"cpu": {"a", "shared"}, "gpu": {"embed", "shared"}, "io": {"fetch"}}


def _spec(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"name": "s", "nodes": list(nodes)}


def test_a_node_without_queue_goes_where_its_task_is_served() -> None:
    spec = _spec({"id": "e", "task": "embed"}, {"id": "s", "task": "shared"},
                 {"id": "x", "task": "nobody"}, {"id": "g", "task": "fetch", "queue": "gpu"})
    placed, needs = place(spec, SERVING)
    assert [n.get("queue") for n in placed["nodes"]] == ["gpu", None, None, "gpu"]
    assert spec["nodes"][0] == {"id": "e", "task": "embed"}  # the spec given is unchanged
    assert [(n.task, n.queue) for n in needs] == [
        ("embed", "gpu"), ("shared", "cpu"), ("nobody", "cpu"), ("fetch", "gpu")]


def test_a_schedules_runs_are_placed_but_not_admitted() -> None:
    runs = _spec({"id": "in", "task": "fetch"}, {"id": "x", "task": "nobody"})
    spec = _spec({"id": "fire", "kind": "schedule", "cron": "* * * * *", "workflow": runs})
    placed, needs = place(spec, SERVING)
    assert [n.get("queue") for n in placed["nodes"][0]["workflow"]["nodes"]] == ["io", None]
    assert needs == []  # nothing is refused now for what runs later


def test_placement_reaches_maps_loops_and_inline_children() -> None:
    child = _spec({"id": "in", "task": "fetch"})
    spec = _spec(
        {"id": "m", "kind": "map", "over": [1], "task": "embed"},
        {"id": "l", "kind": "loop", "decide": "fetch", "tools": ["embed", {"name": "t",
                                                                            "queue": "cpu"}]},
        {"id": "c", "kind": "workflow", "workflow": child},
        {"id": "w", "kind": "wait", "signal": "go"})
    placed, needs = place(spec, SERVING)
    assert placed["nodes"][0]["queue"] == "gpu"
    assert placed["nodes"][1]["queue"] == "io"
    assert placed["nodes"][2]["workflow"]["nodes"][0]["queue"] == "io"
    assert [(n.where, n.task, n.queue) for n in needs] == [
        ("node 'm'", "embed", "gpu"), ("node 'l'", "fetch", "io"),
        ("node 'l' tool 'embed'", "embed", "io"), ("node 'l' tool 't'", "t", "cpu"),
        ("node 'c' (child workflow): node 'in'", "fetch", "io")]


def test_choose_queue_prefers_the_default_then_the_first_by_name() -> None:
    assert choose_queue(SERVING, "shared") == "cpu"
    assert choose_queue({"b": {"t"}, "a": {"t"}}, "t") == "a"
    assert choose_queue(SERVING, "nobody") == "cpu"


def test_the_400_names_the_node_the_task_and_the_queue() -> None:
    _, needs = place(_spec({"id": "ok", "task": "a"}, {"id": "n", "task": "embed",
                                                      "queue": "cpu"}), SERVING)
    problem = unserved(needs, SERVING)
    assert problem is not None and problem.status == 400
    assert problem.extra["task"] == "embed" and problem.extra["queue"] == "cpu"
    assert "node 'n'" in problem.detail and "served on gpu" in problem.detail
    _, needs = place(_spec({"id": "n", "task": "t", "queue": "nobody-here"}), SERVING)
    problem = unserved(needs, SERVING)
    assert problem is not None and "has no live worker" in problem.detail
    assert unserved(place(_spec({"id": "n", "task": "a"}), SERVING)[1], SERVING) is None


def test_parse_maxdepth() -> None:
    assert parse_maxdepth(" gpu=100, cpu=0 ,*=7,") == (("gpu", 100), ("cpu", 0), ("*", 7))
    assert parse_maxdepth("") == ()
    for bad in ("gpu", "gpu=-1", "gpu=x", "g p=1", "=3"):
        with pytest.raises(ValueError, match="HEADWATER_QUEUE_MAXDEPTH"):
            parse_maxdepth(bad)


def test_queue_state() -> None:
    assert queue_state(0, 500, 10) is QueueState.NO_LIVE_WORKERS
    assert queue_state(1, 10, 10) is QueueState.FULL
    assert queue_state(1, 9, 10) is QueueState.OK
    assert queue_state(1, 10**6, 0) is QueueState.OK


# -- the registry ------------------------------------------------------------------------


def _record(worker: str, queue: str, tasks: tuple[str, ...], **kw: Any) -> WorkerAnnounced:
    base = WorkerAnnounced(worker, queue, tasks, 2, 0, "0.1.0", "h", 1, now_ms(), now_ms(), 200)
    return replace(base, **kw)


def _consumed(key: str, value: bytes | None, offset: int = 0) -> ConsumerRecord:
    return ConsumerRecord("p.workers", 0, offset, 0, 0, key.encode(), value, None, 0, 0, [])


def _registry(*records: WorkerAnnounced, grace_s: float = 0.0) -> WorkerRegistry:
    registry = WorkerRegistry(CommonSettings(), grace_s)
    registry.started_at_s = time.monotonic()
    for r in records:
        registry.take(_consumed(r.worker_id, encode_announcement(r)), following=True)
    registry.caught_up = True
    registry._mark_fresh()
    return registry


def test_registry_live_workers_stopping_tombstones_and_silence() -> None:
    registry = _registry(_record("w1", "gpu", ("embed",)), _record("w2", "cpu", ("a",)))
    assert registry.serving() == {"gpu": {"embed"}, "cpu": {"a"}}
    registry.take(_consumed("w2", encode_announcement(
        _record("w2", "cpu", ("a",), stopping=True))), following=True)
    assert registry.serving() == {"gpu": {"embed"}}
    assert registry.queues() == {"gpu", "cpu"}  # a stopping worker's queue stays known
    registry.take(_consumed("w2", None), following=True)
    assert registry.queues() == {"gpu"}
    registry.take(_consumed("junk", b"not avro"), following=True)  # skipped
    assert registry.serving(now_ms() + 3 * 200) == {}  # silent for 3 intervals: not live


def test_a_record_read_while_catching_up_is_as_old_as_it_says() -> None:
    registry = WorkerRegistry(CommonSettings(), 0.0)
    dead = _record("dead", "gpu", ("embed",), at_ms=now_ms() - 60_000)
    registry.take(_consumed("dead", encode_announcement(dead)), following=False)
    assert registry.serving() == {}
    registry.take(_consumed("dead", encode_announcement(dead)), following=True)
    assert registry.serving() == {"gpu": {"embed"}}  # heard now: alive again


def test_registry_is_trusted_once_caught_up_and_past_its_grace() -> None:
    registry = _registry(grace_s=60.0)
    assert not registry.trusted
    registry.started_at_s -= 61
    assert registry.trusted
    registry.caught_up = False
    assert not registry.trusted


def test_a_registry_that_lost_kafka_trusts_nothing_and_keeps_its_last_view() -> None:
    registry = _registry(_record("w1", "gpu", ("embed",)))
    registry.started_at_s -= 1
    assert registry.trusted
    registry.fresh_at_s -= 10  # the reader has not caught up with the broker for 10 s
    assert not registry.trusted
    assert registry.serving(now_ms() + 60_000) == {"gpu": {"embed"}}  # as of then
    registry._mark_fresh()
    assert registry.serving(now_ms() + 60_000) == {}


# -- the horizon: a task lately served is not refused ---------------------------------------


def _age(registry: WorkerRegistry, ms: int) -> None:
    """Move everything the registry heard ``ms`` into the past (time passes)."""
    registry.heard = {k: replace(h, heard_at_ms=h.heard_at_ms - ms)
                      for k, h in registry.heard.items()}
    registry.last_served = {k: at - ms for k, at in registry.last_served.items()}


def _stop(registry: WorkerRegistry, record: WorkerAnnounced) -> None:
    """What a worker stopped with SIGTERM sends: a stopping record, then a tombstone."""
    registry.take(_consumed(record.worker_id, encode_announcement(
        replace(record, stopping=True))), following=True)
    registry.take(_consumed(record.worker_id, None), following=True)


def test_a_task_counts_as_served_for_the_horizon_after_its_last_worker_went() -> None:
    gpu = _record("w1", "gpu", ("embed",))
    registry = _registry(gpu, _record("w2", "cpu", ("a",)))
    registry.unserved_after_s = 60.0
    assert registry.serving_lately() == {"gpu": {"embed"}, "cpu": {"a"}}  # served: live
    registry.take(_consumed("w1", encode_announcement(replace(gpu, stopping=True))),
                  following=True)
    assert registry.serving() == {"cpu": {"a"}}  # stopping: not live at once
    assert registry.serving_lately() == {"gpu": {"embed"}, "cpu": {"a"}}
    registry.take(_consumed("w1", None), following=True)  # the tombstone
    assert registry.queues() == {"cpu"}
    assert registry.serving_lately() == {"gpu": {"embed"}, "cpu": {"a"}}
    _age(registry, 59_000)
    assert registry.serving_lately() == {"gpu": {"embed"}, "cpu": {"a"}}
    _age(registry, 1_000)  # the horizon passed (w2 went silent too)
    assert registry.serving_lately() == {} and registry.last_served == {}


def test_a_silent_worker_counts_until_the_horizon_from_when_it_was_last_heard() -> None:
    registry = _registry(_record("w1", "gpu", ("embed",)))  # then SIGKILLed: silence
    registry.unserved_after_s = 5.0
    assert registry.serving(now_ms() + 3 * 200) == {}  # not live after 3 intervals
    assert registry.serving_lately(now_ms() + 4_900) == {"gpu": {"embed"}}
    assert registry.serving_lately(now_ms() + 5_100) == {}


def test_a_record_of_the_catch_up_was_served_when_it_says() -> None:
    registry = _registry()
    old = _record("dead", "gpu", ("embed",), at_ms=now_ms() - 61_000)
    registry.take(_consumed("dead", encode_announcement(old)), following=False)
    assert registry.serving_lately() == {}
    recent = _record("gone", "io", ("fetch",), at_ms=now_ms() - 30_000, stopping=True)
    registry.take(_consumed("gone", encode_announcement(recent)), following=False)
    assert registry.serving_lately() == {"io": {"fetch"}}


async def test_admission_waits_for_the_horizon_before_refusing_a_restarting_queue() -> None:
    gpu = _record("w1", "gpu", ("embed",))
    registry = _registry(gpu, _record("w2", "cpu", ("a",)))
    admission = Admission(registry, FakeFigures({}), {})  # type: ignore[arg-type]
    pinned = _spec({"id": "e", "task": "embed", "queue": "gpu"})
    free = _spec({"id": "e", "task": "embed"})
    _stop(registry, gpu)  # a rolling restart: the only gpu worker stopped
    assert await admission.admit(pinned, False) == pinned
    assert (await admission.admit(free, False))["nodes"][0]["queue"] == "gpu"
    _age(registry, 61_000)  # no worker came back within the horizon
    for spec in (pinned, free):
        with pytest.raises(Problem) as refused:
            await admission.admit(spec, False)
        assert refused.value.status == 400 and "no live worker" in refused.value.detail
    registry.take(_consumed("w3", encode_announcement(_record("w3", "gpu", ("embed",)))),
                  following=True)  # the new one announces
    assert await admission.admit(pinned, False) == pinned


def test_the_horizon_is_a_gateway_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.gateway.settings import Settings

    assert WorkerRegistry(CommonSettings(), 0.0).unserved_after_s == 60.0
    assert Settings.from_env().unserved_after_s == 60.0
    monkeypatch.setenv("HEADWATER_UNSERVED_AFTER_S", "2.5")
    assert Settings.from_env().unserved_after_s == 2.5
    assert WorkerRegistry(CommonSettings(), 0.0, 7.0).unserved_after_s == 7.0


# -- admission -----------------------------------------------------------------------------


@dataclass
class FakeFigures:
    backlog: dict[str, int]
    fail: bool = False

    async def lag(self, queue: str, oldest: bool = False) -> Lag:
        if self.fail:
            raise TimeoutError("no answer")
        return Lag(self.backlog.get(queue, 0))


def _admission(backlog: dict[str, int], maxdepth: dict[str, int], grace_s: float = 0.0,
               fail: bool = False) -> Admission:
    registry = _registry(_record("w1", "gpu", ("embed",)), _record("w2", "cpu", ("a",)),
                         grace_s=grace_s)
    return Admission(registry, FakeFigures(backlog, fail), maxdepth)  # type: ignore[arg-type]


async def test_admit_places_refuses_unserved_and_full_queues() -> None:
    spec = _spec({"id": "e", "task": "embed"}, {"id": "x", "task": "a"})
    admission = _admission({"gpu": 5}, {"gpu": 5, "cpu": 0})
    with pytest.raises(Problem) as full:
        await admission.admit(spec, False)
    assert full.value.status == 429 and full.value.headers["Retry-After"].isdigit()
    assert full.value.extra == {"queue": "gpu", "backlog": 5, "maxdepth": 5}
    placed = await _admission({"gpu": 4, "cpu": 10**6}, {"gpu": 5}).admit(spec, False)
    assert placed["nodes"][0]["queue"] == "gpu"
    unknown = _spec({"id": "u", "task": "nobody"})
    with pytest.raises(Problem) as refused:
        await _admission({}, {}).admit(unknown, False)
    assert refused.value.status == 400
    assert await _admission({}, {}).admit(unknown, True) == unknown  # queue_anyway
    # Queue anyway does not pass a full queue.
    with pytest.raises(Problem, match="maxdepth"):
        await _admission({"cpu": 3}, {"*": 3}).admit(unknown, True)


async def test_admit_refuses_nothing_during_the_grace_or_without_figures() -> None:
    unknown = _spec({"id": "u", "task": "nobody"})
    assert await _admission({}, {}, grace_s=60).admit(unknown, False) == unknown
    spec = _spec({"id": "e", "task": "embed"})
    placed = await _admission({}, {"gpu": 1}, fail=True).admit(spec, False)
    assert placed["nodes"][0]["queue"] == "gpu"


async def test_timed_cache_shares_one_computation_and_forgets_failures() -> None:
    cache = TimedCache(60.0)
    calls = 0

    async def compute() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return calls

    assert await asyncio.gather(*(cache.get("k", compute) for _ in range(5))) == [1] * 5
    assert await cache.get("k", compute) == 1

    async def fail() -> int:
        raise TimeoutError("down")

    with pytest.raises(TimeoutError):
        await cache.get("f", fail)
    await asyncio.sleep(0)
    assert await cache.get("f", compute) == 2


def test_a_task_served_nowhere_names_the_closest_served_tasks() -> None:
    serving = {"cpu": {"my.count", "my.other"}, "io": {"fetch"}}
    _, needs = place(_spec({"id": "n", "task": "my.cuont"}), serving,
                     {**serving, "gpu": {"my.counts"}})
    problem = unserved(needs, serving, {**serving, "gpu": {"my.counts"}})
    assert problem is not None
    assert problem.extra["did_you_mean"] == ["my.count", "my.counts"]
    assert problem.detail == (
        "node 'n': task 'my.cuont' on queue 'cpu', which has live workers, none of which "
        "serves it; no worker serves it anywhere (did you mean 'my.count' or 'my.counts'?): "
        "start a worker of queue cpu with the task's module, or submit with queue_anyway: "
        "true to queue it anyway")
    _, needs = place(_spec({"id": "n", "task": "zzz"}), serving)
    problem = unserved(needs, serving)
    assert problem is not None and "did_you_mean" not in problem.extra  # nothing close
    assert "anywhere: start a worker" in problem.detail
    _, needs = place(_spec({"id": "n", "task": "fetch", "queue": "cpu"}), serving)
    problem = unserved(needs, serving)  # served elsewhere: where, not a guess
    assert problem is not None and "did_you_mean" not in problem.extra
    assert "served on io" in problem.detail


def test_placed_puts_tasks_on_their_workers_queue_and_refuses_nothing() -> None:
    """What a trigger submits (``Admission.placed``): a node without a queue goes to
    the queue whose workers serve its task, as an admitted submission; a task no
    worker serves, or a queue over its depth, is no refusal."""
    registry = _registry(_record("w1", "text", ("my.words",)))
    admission = Admission(registry, FakeFigures({"text": 10**6}), {"text": 1})  # type: ignore[arg-type]
    free = _spec({"id": "count", "task": "my.words"})
    assert admission.placed(free)["nodes"][0]["queue"] == "text"
    unserved = _spec({"id": "x", "task": "nobody.serves"})
    assert admission.placed(unserved) == unserved
