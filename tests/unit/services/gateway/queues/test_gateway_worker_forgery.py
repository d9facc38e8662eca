"""Announcements are trusted input, but a forged one steers admission less: its interval
counts for at most 60 s of liveness, a record keyed by another worker than its own is
ignored, and one naming more than 10,000 tasks is ignored (each with a log line)."""

from __future__ import annotations

import logging
import time

import pytest
from aiokafka import ConsumerRecord

from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.gateway.queues.workers import MAX_TASKS, WorkerRegistry
from services.worker.announce import MAX_LIVE_INTERVAL_MS, WorkerAnnounced, encode_announcement


def announced(worker_id: str = "w1", interval_ms: int = 5000, tasks: int = 1,
              at_ms: int | None = None) -> WorkerAnnounced:
    at = now_ms() if at_ms is None else at_ms
    return WorkerAnnounced(worker_id, "cpu", tuple(f"t{i}" for i in range(tasks)), 1, 0,
                           "0", "h", 1, at, at, interval_ms)


def take(registry: WorkerRegistry, record: WorkerAnnounced, key: str | None = None,
         following: bool = True) -> None:
    registry.take(ConsumerRecord("p.workers", 0, 0, 0, 0, (key or record.worker_id).encode(),
                                 encode_announcement(record), None, 0, 0, []),
                  following=following)


def registry() -> WorkerRegistry:
    r = WorkerRegistry(CommonSettings(), 0.0)
    r.started_at_s = time.monotonic()
    r.caught_up = True
    r._mark_fresh()
    return r


def test_a_huge_interval_counts_for_at_most_60_seconds() -> None:
    assert MAX_LIVE_INTERVAL_MS == 60_000
    reg = registry()
    take(reg, announced(interval_ms=2**31 - 1))
    now = now_ms()
    assert [w.worker_id for w in reg.live(now + 3 * 60_000 - 1000)] == ["w1"]
    assert reg.live(now + 3 * 60_000 + 1000) == [], "dead 3 capped intervals later"


def test_a_record_keyed_by_another_worker_is_ignored_and_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    reg = registry()
    with caplog.at_level(logging.WARNING, logger="headwater.gateway"):
        for _ in range(3):
            take(reg, announced("victim"), key="forger")
    assert reg.heard == {} and reg.last_served == {}
    lines = [r.getMessage() for r in caplog.records if "forger" in r.getMessage()]
    assert len(lines) == 1 and "victim" in lines[0], lines


def test_an_announcement_of_too_many_tasks_is_ignored_with_a_log_line(
        caplog: pytest.LogCaptureFixture) -> None:
    assert MAX_TASKS == 10_000
    reg = registry()
    with caplog.at_level(logging.WARNING, logger="headwater.gateway"):
        take(reg, announced(tasks=MAX_TASKS + 1))
    assert reg.heard == {} and reg.last_served == {}
    assert any(f"{MAX_TASKS + 1} tasks" in r.getMessage() for r in caplog.records)
    take(reg, announced(tasks=MAX_TASKS))
    assert len(reg.serving()["cpu"]) == MAX_TASKS


def test_a_record_dated_in_the_future_counts_from_now_when_caught_up() -> None:
    reg = registry()
    now = now_ms()
    take(reg, announced(at_ms=now + 10**9), following=False)
    assert reg.heard["w1"].heard_at_ms <= now_ms()
    assert reg.live(now + 20_000) == []
