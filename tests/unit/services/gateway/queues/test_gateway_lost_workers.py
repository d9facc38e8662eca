"""A worker that stops announcing itself without a word is lost at once: the registry
says so (``lost``, ``lost_workers``) within ``LIVE_INTERVALS`` of its intervals, the
run's document marks the attempts it ran (``worker_state``, ``worker_last_heard_at``, a
line in ``warnings``), ``GET /v1/queues`` lists it apart from the live ones, and a
submission admitted while a queue it needs has no live worker is told so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from aiokafka import ConsumerRecord
from gateway_harness import FakePool, FakeProducer, Gateway

from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.gateway.queues import workers
from services.gateway.queues.admission import needed_queues
from services.gateway.queues.figures import lost_view
from services.gateway.queues.marks import (
    attempt_marks,
    attempt_warnings,
    requires_of,
    submission_warnings,
    worker_state,
)
from services.gateway.queues.workers import MAX_GONE, WorkerRegistry
from services.worker.announce import LIVE_INTERVALS, WorkerAnnounced, encode_announcement
from services.worker.settings import ANNOUNCE_S

INTERVAL_MS = 1500


def announced(worker_id: str = "w1", at_ms: int | None = None, stopping: bool = False,
              in_flight: int = 4) -> WorkerAnnounced:
    at = now_ms() if at_ms is None else at_ms
    return WorkerAnnounced(worker_id, "cpu", ("t.a",), 4, in_flight, "0", "h", 7, at, at,
                           INTERVAL_MS, stopping)


def take(reg: WorkerRegistry, record: WorkerAnnounced | None, key: str = "w1",
         following: bool = True, timestamp: int = 0) -> None:
    value = None if record is None else encode_announcement(record)
    reg.take(ConsumerRecord("p.workers", 0, 0, timestamp, 0, key.encode(), value, None, 0,
                            0, []), following=following)


def registry(trusted: bool = True) -> WorkerRegistry:
    reg = WorkerRegistry(CommonSettings(), 0.0 if trusted else 3600.0)
    reg.started_at_s = time.monotonic()
    reg.caught_up = True
    reg._mark_fresh()
    return reg


@pytest.fixture
def installed() -> Iterator[WorkerRegistry]:
    reg = registry()
    workers.install(reg)
    yield reg
    workers.install(None)


def row(status: str = "running", worker: str = "w1", queue: str = "cpu") -> dict[str, Any]:
    return {"task_key": "a", "node": "a", "attempt": 1, "status": status, "worker": worker,
            "queue": queue, "task": "t.a"}


def test_the_default_interval_drops_a_killed_worker_within_five_seconds() -> None:
    assert ANNOUNCE_S * LIVE_INTERVALS <= 5.0


def test_a_silent_worker_is_lost_after_its_live_window_and_not_before() -> None:
    reg = registry()
    take(reg, announced())
    heard = reg.heard["w1"].heard_at_ms
    window = LIVE_INTERVALS * INTERVAL_MS
    assert not reg.lost("w1", heard + window - 1)
    assert reg.lost("w1", heard + window)
    assert reg.last_heard("w1") == heard
    assert [h.record.worker_id for h in reg.lost_workers(heard + window)] == ["w1"]
    assert reg.lost_workers(heard + window - 1) == []
    assert not reg.lost("never-heard", heard + window)  # a child's id, say


def test_a_draining_worker_is_not_lost_while_it_announces_and_is_once_it_left() -> None:
    reg = registry()
    take(reg, announced(stopping=True))
    now = reg.heard["w1"].heard_at_ms
    assert reg.live(now) == [] and not reg.lost("w1", now)
    assert reg.lost_workers(now + LIVE_INTERVALS * INTERVAL_MS) == []  # it said it stops
    take(reg, None)  # its tombstone
    assert reg.lost("w1") and reg.last_heard("w1") is not None
    assert "w1" in reg.gone and "w1" not in reg.heard
    take(reg, announced())  # back under the same id
    assert not reg.lost("w1") and "w1" not in reg.gone


def test_the_gone_workers_remembered_are_bounded() -> None:
    reg = registry()
    for i in range(MAX_GONE + 5):
        take(reg, announced(f"w{i}"), key=f"w{i}")
        take(reg, None, key=f"w{i}")
    assert len(reg.gone) == MAX_GONE and "w0" not in reg.gone


def test_a_caught_up_tombstone_is_dated_by_its_record() -> None:
    reg = registry()
    take(reg, announced(at_ms=now_ms() - 60_000), following=False)
    take(reg, None, following=False, timestamp=now_ms() - 50_000)
    assert reg.last_heard("w1") is not None and reg.last_heard("w1") < now_ms() - 40_000


def test_nothing_is_lost_before_the_registry_is_trusted() -> None:
    reg = registry(trusted=False)
    take(reg, announced(at_ms=now_ms() - 60_000), following=False)
    assert not reg.lost("w1")


def test_a_running_attempt_of_a_lost_worker_is_marked_with_when_it_was_heard(
        installed: WorkerRegistry) -> None:
    take(installed, announced(at_ms=now_ms() - 10_000), following=False)
    marks = worker_state("running", "w1")
    assert marks["worker_state"] == "lost"
    heard = datetime.fromisoformat(marks["worker_last_heard_at"]).timestamp() * 1000
    assert abs(heard - installed.heard["w1"].heard_at_ms) < 1
    assert worker_state("succeeded", "w1") == {}
    assert worker_state("running", "") == {}
    warnings = attempt_warnings([row()])["warnings"]
    assert len(warnings) == 1 and "worker 'w1', which is lost" in warnings[0]
    assert attempt_marks(row(status="dispatched"))["queue_state"] == "no_live_workers"


def test_a_live_worker_marks_nothing(installed: WorkerRegistry) -> None:
    take(installed, announced())
    assert attempt_marks(row()) == {} and attempt_warnings([row()]) == {}


def test_queues_list_a_lost_worker_with_its_last_in_flight(installed: WorkerRegistry) -> None:
    take(installed, announced(at_ms=now_ms() - 10_000, in_flight=4), following=False)
    lost = installed.lost_workers()
    assert [lost_view(h)["in_flight"] for h in lost] == [4]
    assert set(lost_view(lost[0])) == {"worker_id", "host", "pid", "in_flight",
                                       "last_heard_at"}
    assert installed.lost_workers(now_ms() + 3_600_000) == []  # past the horizon


def test_a_submission_is_told_which_needed_queue_has_no_live_worker(
        installed: WorkerRegistry) -> None:
    spec = {"name": "s", "nodes": [{"id": "a", "task": "t.a"},
                                   {"id": "b", "task": "t.b", "queue": "gpu"}]}
    assert needed_queues(spec) == ["cpu", "gpu"]
    take(installed, announced())
    found = submission_warnings(needed_queues(spec))["warnings"]
    assert found == ["queue 'gpu' has no live worker now: the run waits until one serves it"]
    take(installed, replace(announced("g"), queue="gpu"), key="g")
    assert submission_warnings(needed_queues(spec)) == {}


def test_no_submission_warning_without_a_registry_that_read_the_topic() -> None:
    assert submission_warnings(["cpu"]) == {}
    reg = registry()
    reg.caught_up = False
    workers.install(reg)
    try:
        assert submission_warnings(["cpu"]) == {}
    finally:
        workers.install(None)


def test_the_submissions_answer_carries_the_warnings(gw: Gateway,
                                                     installed: WorkerRegistry) -> None:
    """``POST /v1/workflows``'s 202 names the queue without a live worker; none once one
    serves it."""
    gw.connect(FakePool(), FakeProducer())
    spec = {"name": "s", "nodes": [{"id": "a", "task": "t.a"}]}
    answer = gw.client.post("/v1/workflows", json={"workflow": spec})
    assert answer.status_code == 202, answer.text
    assert answer.json()["warnings"] == [
        "queue 'cpu' has no live worker now: the run waits until one serves it"]
    take(installed, announced())
    again = gw.client.post("/v1/workflows", json={"workflow": spec})
    assert again.status_code == 202 and "warnings" not in again.json()


def test_an_attempt_whose_required_tags_no_live_worker_announces_is_marked_unmatched(
        installed: WorkerRegistry) -> None:
    take(installed, replace(announced(), tags=("gpu",)))
    spec = {"nodes": [{"id": "a", "task": "t.a", "requires": ["gpu", "a100"]},
                      {"id": "b", "task": "t.a"}]}
    requires = requires_of(spec)
    assert requires == {"a": ("a100", "gpu")}
    waiting = row(status="dispatched", worker="")
    assert attempt_marks(waiting, requires["a"]) == {"queue_state": "unmatched"}
    warning = attempt_warnings([waiting], requires)["warnings"]
    assert warning == ["a (attempt 1) waits on queue 'cpu' for a worker announcing the tags "
                       "[a100, gpu]: none of its live workers does"]
    assert attempt_marks(waiting) == {}  # a node that requires nothing
    take(installed, replace(announced("w2"), tags=("a100", "gpu", "x")), key="w2")
    assert attempt_marks(waiting, requires["a"]) == {}
    assert attempt_warnings([waiting], requires) == {}
