"""A worker's metrics (``services/worker/metrics.py``): each attempt's task code is timed by
its outcome and task (names capped) as it runs through ``lifecycle.live``; an
undecodable dispatch counts as a dead letter of the queue's topic."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client import REGISTRY
from worker_fakes import (
    QUEUE,
    TOPIC,
    TP0,
    FakeConsumer,
    FakeProducer,
    Record,
    dispatch,
    make_attempt,
    serving,
    settings,
    wait_until,
)

from headwater import task
from services.common.metrics import OTHER, BoundedLabels
from services.worker import metrics as worker_metrics
from services.worker.app import Worker
from services.worker.lifecycle import live

RUN = "headwater_task_run_seconds"


@task(name="unit.metrics.nap", queue=QUEUE)
async def nap(seconds: float) -> float:
    await asyncio.sleep(seconds)
    return seconds


@task(name="unit.metrics.boom", queue=QUEUE)
def boom() -> None:
    raise RuntimeError("boom")


def runs(outcome: str, task: str = "unit.metrics.nap") -> tuple[float, float]:
    """``(count, sum)`` of the queue's run time histogram for ``outcome`` and ``task``
    now."""
    labels = {"queue": QUEUE, "outcome": outcome, "task": task}
    return (REGISTRY.get_sample_value(f"{RUN}_count", labels) or 0.0,
            REGISTRY.get_sample_value(f"{RUN}_sum", labels) or 0.0)


@pytest.mark.parametrize(("name", "arguments", "outcome", "least_s"), [
    ("unit.metrics.nap", {"seconds": 0.05}, "succeeded", 0.05),
    ("unit.metrics.boom", {}, "failed", 0.0),
])
async def test_an_attempt_is_timed_by_the_outcome_it_reported(
        name: str, arguments: dict[str, float], outcome: str, least_s: float) -> None:
    count, total = runs(outcome, name)
    with ThreadPoolExecutor(2) as pool:
        await live(make_attempt(dispatch(name, arguments), pool), "w1", lambda: None)
    after_count, after_total = runs(outcome, name)
    assert after_count == count + 1
    assert least_s <= after_total - total < least_s + 2.0


async def test_an_attempt_the_coordinator_cancelled_is_timed_as_cancelled() -> None:
    count, _ = runs("cancelled")
    with ThreadPoolExecutor(2) as pool:
        attempt = make_attempt(dispatch("unit.metrics.nap", {"seconds": 10.0}), pool)
        running = asyncio.create_task(live(attempt, "w1", lambda: None))
        await wait_until(lambda: attempt.body is not None)
        attempt.cancel("the workflow ended")
        await asyncio.wait_for(running, 5)
    assert runs("cancelled")[0] == count + 1


async def test_an_undecodable_dispatch_counts_as_a_dead_letter_of_its_topic() -> None:
    before = REGISTRY.get_sample_value("headwater_dead_letters_total", {"topic": TOPIC}) or 0.0
    consumer = FakeConsumer({TP0: [Record(0, b"\x00garbage", b"k")]})
    async with serving(Worker(settings()), consumer, FakeProducer()):
        await wait_until(lambda: consumer.committed.get(TP0) == 1)
    assert REGISTRY.get_sample_value("headwater_dead_letters_total",
                                     {"topic": TOPIC}) == before + 1


def test_task_names_past_the_cap_count_as_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_metrics, "_TASK_LABELS", BoundedLabels(1))
    first, other = runs("cancelled", "unit.junk-0")[0], runs("cancelled", OTHER)[0]
    for i in range(4):
        worker_metrics.attempt_ran(QUEUE, f"unit.junk-{i}", None, 0.01)
    assert runs("cancelled", "unit.junk-0")[0] == first + 1
    assert runs("cancelled", OTHER)[0] == other + 3
