"""Admission of nodes that require tags (``services.gateway.queues.admission``): a node
whose ``requires`` no live worker of its queue announces all of (nor one did within the
horizon) is refused with a 400 naming the node, the queue, the tags required and
missing and the tags the live workers have, unless ``queue_anyway``; a node without a
queue goes where a matching worker serves its task; ``GET /v1/queues`` shows workers'
tags and the selector topics' backlog."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import pytest
from aiokafka import ConsumerRecord

from headwater.topics import Topics
from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.gateway.edge.problems import Problem
from services.gateway.queues.admission import Admission, Need, place, unmatched
from services.gateway.queues.figures import Lag, selector_views, worker_view
from services.gateway.queues.workers import WorkerRegistry
from services.worker.announce import WorkerAnnounced, encode_announcement


def _record(worker: str, queue: str, tasks: tuple[str, ...], tags: tuple[str, ...] = (),
            **kw: Any) -> WorkerAnnounced:
    base = WorkerAnnounced(worker, queue, tasks, 2, 0, "0.1.0", "h", 1, now_ms(), now_ms(), 200,
                           tags=tags)
    return replace(base, **kw)


def _consumed(key: str, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("p.workers", 0, 0, 0, 0, key.encode(), value, None, 0, 0, [])


def _registry(*records: WorkerAnnounced) -> WorkerRegistry:
    registry = WorkerRegistry(CommonSettings(), 0.0)
    registry.started_at_s = time.monotonic()
    for r in records:
        registry.take(_consumed(r.worker_id, encode_announcement(r)), following=True)
    registry.caught_up = True
    registry._mark_fresh()
    return registry


@dataclass
class NoBacklog:
    async def lag(self, queue: str, stale_ok: bool = False) -> Lag:
        return Lag(0)


def _admission(*records: WorkerAnnounced) -> Admission:
    return Admission(_registry(*records), NoBacklog(), {})  # type: ignore[arg-type]


def _spec(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"name": "s", "nodes": list(nodes)}


GPU = _record("w-gpu", "cpu", ("embed",), ("a100", "gpu"))
PLAIN = _record("w-plain", "cpu", ("embed",))


async def test_a_satisfiable_selector_is_admitted() -> None:
    spec = _spec({"id": "e", "task": "embed", "requires": ["gpu"]},
                 {"id": "f", "task": "embed", "requires": ["gpu", "a100"]},
                 {"id": "p", "task": "embed"})
    assert await _admission(GPU, PLAIN).admit(spec, False) == spec


async def test_an_unsatisfiable_selector_is_refused_naming_it() -> None:
    spec = _spec({"id": "e", "task": "embed", "requires": ["tpu", "gpu"]})
    with pytest.raises(Problem) as refused:
        await _admission(GPU, PLAIN).admit(spec, False)
    p = refused.value
    assert p.status == 400 and p.title == "No worker matches the selector"
    assert "node 'e'" in p.detail and "queue 'cpu'" in p.detail
    assert "[gpu, tpu]" in p.detail and "no worker announces tpu" in p.detail
    assert "no tags, [a100, gpu]" in p.detail and "HEADWATER_WORKER_TAGS=gpu,tpu" in p.detail
    assert p.extra["requires"] == ["gpu", "tpu"] and p.extra["missing"] == ["tpu"]
    assert p.extra["worker_tags"] == [[], ["a100", "gpu"]]
    assert await _admission(GPU, PLAIN).admit(spec, True) == spec  # queue_anyway


async def test_tags_spread_over_workers_do_not_satisfy() -> None:
    a, b = _record("a", "cpu", ("t",), ("gpu",)), _record("b", "cpu", ("t",), ("a100",))
    with pytest.raises(Problem, match="no one worker announces them all"):
        await _admission(a, b).admit(_spec({"id": "x", "task": "t",
                                            "requires": ["gpu", "a100"]}), False)


async def test_a_map_and_an_inline_childs_node_are_judged_too() -> None:
    child = _spec({"id": "in", "task": "embed", "requires": ["tpu"]})
    for spec in (_spec({"id": "m", "kind": "map", "task": "embed", "over": "${input.x}",
                        "requires": ["tpu"]}),
                 _spec({"id": "c", "kind": "workflow", "workflow": child})):
        with pytest.raises(Problem, match="requires the tags \\[tpu\\]"):
            await _admission(GPU).admit(spec, False)


async def test_a_tagged_worker_counts_for_the_horizon_after_it_went() -> None:
    admission = _admission(GPU)
    admission.registry.take(_consumed("w-gpu", None), following=True)  # a restart
    assert admission.registry.live() == []
    spec = _spec({"id": "e", "task": "embed", "requires": ["gpu"]})
    assert await admission.admit(spec, False) == spec
    admission.registry.last_tagged = {k: 0 for k in admission.registry.last_tagged}
    admission.registry.last_served = {k: now_ms() for k in admission.registry.last_served}
    with pytest.raises(Problem, match="has no live worker"):
        await admission.admit(spec, False)


def test_a_node_without_queue_goes_where_a_matching_worker_serves_it() -> None:
    serving = {"cpu": {"embed"}, "gpu": {"embed"}}
    tagged = {"cpu": {()}, "gpu": {("a100",), ("gpu",)}}
    spec = _spec({"id": "e", "task": "embed", "requires": ["gpu"]}, {"id": "p", "task": "embed"},
                 {"id": "x", "task": "embed", "requires": ["tpu"]})
    placed, needs = place(spec, serving, None, tagged)
    assert [n.get("queue") for n in placed["nodes"]] == ["gpu", None, None]
    assert [(n.queue, n.requires) for n in needs] == [
        ("gpu", ("gpu",)), ("cpu", ()), ("cpu", ("tpu",))]


def test_a_queue_without_live_workers_says_so() -> None:
    problem = unmatched([Need("node 'e'", "embed", "ml", ("gpu",))], {}, {})
    assert problem is not None and "the queue has no live worker" in problem.detail
    assert unmatched([Need("node 'e'", "embed", "ml")], {}, {}) is None


def test_the_registry_ignores_a_forged_announcement_of_bad_tags() -> None:
    bad = replace(GPU, worker_id="forged", tags=("a b",))
    registry = _registry(bad, PLAIN)
    assert [r.worker_id for r in registry.live()] == ["w-plain"]


def test_queues_show_workers_tags_and_selector_backlogs() -> None:
    topics = Topics("p")
    assert worker_view(GPU, now_ms())["tags"] == ["a100", "gpu"]
    long = [f"{'x' * 60}{i}" for i in range(4)]
    lag = Lag(7, None, ((topics.tasks("cpu"), 1), (topics.needs("cpu", ["gpu"]), 4),
                        (topics.needs("cpu", long), 2)))
    assert selector_views(topics, lag) == [
        {"requires": ["gpu"], "topic": "p.needs.cpu.gpu", "backlog": 4},
        {"requires": None, "topic": topics.needs("cpu", long), "backlog": 2}]
