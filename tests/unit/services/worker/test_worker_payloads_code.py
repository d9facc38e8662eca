"""A code workflow whose values go by reference, run by the worker's runner over the
real core (``machine.step``): the journal and the run's table hold references only, and
the function sees real values whether it goes on in the instance the worker kept (a
continuation) or is replayed from its start by a worker without it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from test_worker_payloads import MemoryStore, attempt_with, claims_of
from worker_fakes import QUEUE

from headwater import WorkflowContext, blobs, task, workflow
from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import activation_dispatch, is_activation, journal
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import CACHE
from services.worker import runner

SIZE = 5000
SEEN: list[Any] = []
"""What the function saw of its step's result, each time it ran past it."""


@task(name="unit.claims.code.make", queue=QUEUE)
def make(n: int) -> str:
    return "z" * n


@task(name="unit.claims.code.measure", queue=QUEUE)
def measure(doc: str) -> int:
    return len(doc)


@workflow(name="unit.claims.code.flow", queue=QUEUE)
async def flow(wf: WorkflowContext, n: int) -> dict[str, Any]:
    doc = await wf.run("unit.claims.code.make", n=n)
    SEEN.append(len(doc) if isinstance(doc, str) else doc)
    length = await wf.run("unit.claims.code.measure", doc=doc)  # a large step input
    return {"length": length, "doc": doc}  # a large finish output


async def _run(replay: bool) -> tuple[WorkflowState, list[ev.HistoryEvent], MemoryStore]:
    info = info_of(flow)
    assert info is not None
    store = MemoryStore()
    claims = claims_of(store)
    CACHE.clear()
    SEEN.clear()
    result = step(None, ev.WorkflowSubmitted("wf-code-big", info.spec(), {"n": SIZE}, 1))
    state, history = result.state, list(result.events)
    todo = [d for d in result.dispatches if not is_continued(d)]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(20):
            assert state is not None
            if state.status.terminal or not todo:
                break
            d = todo.pop(0)
            if replay:
                CACHE.clear()  # every activation on a worker without the instance
            sent = activation_dispatch(state, d) if is_activation(d.index) else d
            report = await runner.run_attempt(attempt_with(sent, pool, claims))
            assert isinstance(report, ev.TaskSucceeded), report
            result = step(state, report)
            state = result.state
            history += result.events
            todo += [d for d in result.dispatches if not is_continued(d)]
    assert state is not None
    return state, history, store


@pytest.mark.parametrize("replay", [False, True], ids=["continued", "replayed"])
async def test_the_function_sees_real_values_and_the_run_holds_references(
        replay: bool) -> None:
    state, history, store = await _run(replay)
    assert state.status.value == "succeeded", state.error
    assert set(SEEN) == {SIZE}, SEEN  # never the reference
    output = state.output
    assert output["length"] == SIZE and blobs.is_ref(output["doc"])
    assert blobs.resolve(output, store.data)["doc"] == "z" * SIZE
    (node,) = state.nodes
    results = [s.get("result") for s in journal(state, node)["steps"]]
    assert blobs.is_ref(results[0]["value"])
    measured = [e.body for e in history if isinstance(e.body, ev.TaskDispatched)
                and e.body.task == "unit.claims.code.measure"]
    assert measured and blobs.is_ref(measured[0].input["doc"])
    continued = [e for e in history if isinstance(e.body, ev.TaskDispatched)
                 and is_continued(e.body)]
    assert bool(continued) is not replay
