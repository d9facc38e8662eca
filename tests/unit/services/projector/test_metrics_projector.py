"""The projector's metrics (``services/projector/metrics.py``): events projected and the
batch's time once ``Projector`` has written them, and the lag from what a fetch told."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import REGISTRY

from headwater.core import events as ev
from services.common.settings import CommonSettings
from services.projector import metrics, writer


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


@dataclass
class Consumer:
    """What the lag is read from: high watermarks and the assignment."""

    ends: dict[str, int]
    held: set[str] = field(default_factory=set)

    def highwater(self, tp: Any) -> int | None:
        return self.ends.get(tp)

    def assignment(self) -> set[Any]:
        return self.held or set(self.ends)


def at(*offsets: int) -> list[Any]:
    return [SimpleNamespace(offset=o) for o in offsets]


def test_the_lag_sums_what_each_partition_fetched_left_behind() -> None:
    consumer = Consumer({"p0": 10, "p1": 5})
    metrics.fetched(consumer, {"p0": at(3, 4), "p1": at(4)})
    assert sample("headwater_projector_lag_events") == 5 + 0
    metrics.fetched(consumer, {"p0": at(9)})  # p1 keeps what it had
    assert sample("headwater_projector_lag_events") == 0
    consumer.ends["p1"] = 8
    metrics.fetched(consumer, {"p1": at(5)})
    assert sample("headwater_projector_lag_events") == 2
    consumer.held = {"p0"}  # p1 moved to another projector
    metrics.fetched(consumer, {"p0": at(9)})
    assert sample("headwater_projector_lag_events") == 0


class Pool:
    """A pool whose connection is never used (``writer.project`` is replaced)."""

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[None]:
        yield None


async def test_a_batch_projected_is_counted_and_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    async def project(conn: Any, events: list[ev.HistoryEvent]) -> set[str]:
        return {e.workflow_id for e in events}

    monkeypatch.setattr(writer, "project", project)
    events = [ev.HistoryEvent("wf", s, ev.TaskStarted("wf", "a", None, 1, 0)) for s in (1, 2, 3)]
    before = sample("headwater_projector_events_total")
    batches = sample("headwater_projector_batch_seconds_count")
    pool: Any = Pool()
    await writer.Projector(CommonSettings(), pool)._project_with_retries(events)
    assert sample("headwater_projector_events_total") == before + 3
    assert sample("headwater_projector_batch_seconds_count") == batches + 1
