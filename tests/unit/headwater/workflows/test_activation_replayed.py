"""The replay hook (``activation.REPLAYED``): called after each earlier activation a
replay re-ran, before the activation asked for runs; never for an activation a cached
instance takes on from. The worker's fault point ``worker.replaying`` hangs there."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from headwater import WorkflowContext, workflow
from headwater.workflows import activation, instances
from headwater.workflows.decorator import WorkflowInfo, info_of


@workflow(name="tests.replayed.three")
async def three(wf: WorkflowContext) -> list[Any]:
    return [await wf.run("t.a", i=i) for i in range(3)]


def _payload(k: int) -> dict[str, Any]:
    """Activation ``k``'s input once steps 0..k-1 (one per activation) have results."""
    return {"workflow_id": "wf-replayed", "input": {}, "activation": k,
            "times": [1_000 * a for a in range(k + 1)], "through": list(range(k + 1)),
            "steps": [{"op": "task", "name": "t.a", "act": a} for a in range(k)],
            "results": [[s, {"value": s * 10}] for s in range(k)]}


@pytest.fixture
def calls() -> Iterator[list[tuple[str, int]]]:
    seen: list[tuple[str, int]] = []

    def hook(info: WorkflowInfo, a: int) -> None:
        seen.append((info.name, a))

    activation.REPLAYED.append(hook)
    try:
        yield seen
    finally:
        activation.REPLAYED.remove(hook)


def _activate(k: int, cache: bool) -> dict[str, Any]:
    info = info_of(three)
    assert info is not None
    return asyncio.run(instances.activate(info, _payload(k), cache=cache))


def test_a_replay_calls_the_hook_after_each_earlier_activation(
        calls: list[tuple[str, int]]) -> None:
    decision = _activate(3, cache=False)
    assert decision["finish"] == [0, 10, 20]
    assert calls == [("tests.replayed.three", 0), ("tests.replayed.three", 1),
                     ("tests.replayed.three", 2)]


def test_a_cached_instance_replays_nothing(calls: list[tuple[str, int]]) -> None:
    instances.CACHE.pop("wf-replayed", None)
    assert _activate(0, cache=True)["steps"][0]["input"] == {"i": 0}
    assert _activate(1, cache=True)["steps"][0]["input"] == {"i": 1}
    assert calls == []  # activation 1 went on from the instance activation 0 left
    instances.CACHE.pop("wf-replayed", None)
    _activate(2, cache=True)  # the instance is gone (as after a crash): a replay
    assert calls == [("tests.replayed.three", 0), ("tests.replayed.three", 1)]
    instances.CACHE.pop("wf-replayed", None)


def test_the_worker_kills_itself_mid_replay_there() -> None:
    from services.worker import lifecycle

    assert lifecycle._replaying in activation.REPLAYED
