"""A queue's lanes belong to it in ``GET /v1/queues`` (``QueueFigures.task_topics``):
they name no queue of their own, and a queue's topics are its tasks topic and its
lanes."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from headwater.topics import Topics
from services.common.settings import CommonSettings
from services.gateway.queues.figures import QueueFigures


async def test_lanes_are_counted_with_their_queue() -> None:
    topics = Topics("unit-q")
    settings = replace(CommonSettings(), prefix="unit-q")
    figures = QueueFigures(settings)
    lanes = [topics.lane("cpu", "wf.a", "v1"), topics.lane("cpu", "wf.a", "v2"),
             topics.lane("gpu", "x", "v")]
    listed = [topics.tasks("cpu"), *lanes, topics.events, "unit-q.tasks.cpu.junk",
              "other.tasks.cpu"]

    async def list_topics() -> list[str]:
        return listed

    figures.offsets = SimpleNamespace(admin=SimpleNamespace(  # type: ignore[assignment]
        list_topics=list_topics))
    assert await figures.task_topics() == {
        "cpu": sorted([topics.tasks("cpu"), lanes[0], lanes[1]]), "gpu": [lanes[2]]}
    assert await figures.task_queues() == {"cpu", "gpu"}
