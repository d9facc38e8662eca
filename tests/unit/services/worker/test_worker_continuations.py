"""A code workflow's steps run by the worker's own runner (``run_attempt``), their reports
carrying the function's next decision (a continuation), applied by the real core
(``machine.step``) on the coordinator's clock; the worker's wall clock is minutes off it,
as a machine's may be (docs/architecture.md, "Time")."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from worker_fakes import QUEUE, make_attempt

from headwater import WorkflowContext, task, workflow
from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import activation_dispatch, is_activation
from headwater.core.machine import step
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import CACHE
from services.worker import runner

C0 = 1_700_000_000_000
"""The coordinator's clock at the run's submission."""
SKEWS = [-300_000, 300_000]
"""How far the worker's wall clock is from the coordinator's, ms."""
POLL_FOR_MS = 1_000


@task(name="unit.cont.poll", queue=QUEUE)
def poll() -> str:
    return "not yet"


@workflow(name="unit.cont.polls", queue=QUEUE)
async def polls(wf: WorkflowContext) -> int:
    """Polls until a second has passed by its own clock (``wf.now()``)."""
    start, n = wf.now(), 0
    while (wf.now() - start).total_seconds() * 1000 < POLL_FOR_MS:
        await wf.run("unit.cont.poll")
        n += 1
    return n


async def _run(skew: int, monkeypatch: pytest.MonkeyPatch,
               most: int = 60) -> tuple[WorkflowState, list[ev.HistoryEvent]]:
    """The run: each dispatch is run by the worker 50 ms after it was dispatched (by the
    coordinator's clock; the worker's reads ``skew`` more), and its report applied 100
    ms after."""
    info = info_of(polls)
    assert info is not None
    clock = [C0]
    monkeypatch.setattr(runner, "now_ms", lambda: clock[0] + skew)
    CACHE.clear()
    result = step(None, ev.WorkflowSubmitted("wf-skew", info.spec(), None, C0))
    state, history = result.state, list(result.events)
    todo = [d for d in result.dispatches if not is_continued(d)]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(most):
            assert state is not None
            if state.status.terminal or not todo:
                break
            d = todo.pop(0)
            sent = activation_dispatch(state, d) if is_activation(d.index) else d
            clock[0] = d.at_ms + 50
            report = await runner.run_attempt(make_attempt(sent, pool))
            assert isinstance(report, ev.TaskSucceeded), report
            result = step(state, ev.TaskSucceeded(  # stamped with the coordinator's time
                report.workflow_id, report.node, report.index, report.attempt,
                d.at_ms + 100, report.output, report.continuation))
            state = result.state
            history += result.events
            todo += [d for d in result.dispatches if not is_continued(d)]
    assert state is not None
    return state, history


@pytest.mark.parametrize("skew", SKEWS)
async def test_a_continued_activation_keeps_the_coordinators_time(
        skew: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Continued activations are taken whatever the worker's clock says, and the time
    they give ``wf.now()`` goes on with the coordinator's: the poll ends after about a
    second of it (each step takes 100 ms), as it does without continuations."""
    state, history = await _run(skew, monkeypatch)
    assert state.status.terminal and state.output is not None, "the poll never ended"
    assert 5 <= state.output <= 12
    continued = [e.body for e in history if isinstance(e.body, ev.TaskDispatched)
                 and is_continued(e.body)]
    assert len(continued) == state.output
    times = [d.at_ms for d in continued]
    assert times == sorted(times) and times[-1] - times[0] >= 500


@workflow(name="unit.cont.interrupts", queue=QUEUE)
async def interrupts(wf: WorkflowContext) -> None:
    """Raises ``KeyboardInterrupt`` in the part after its step (what a continuation runs)."""
    await wf.run("unit.cont.poll")
    raise KeyboardInterrupt


async def test_a_function_raising_a_base_exception_in_a_continuation_leaves_the_worker_up(
        ) -> None:
    """The step's report goes without a continuation (the worker survives what the
    function raises, as it does in an activation), and the activation sent instead
    fails retryably naming it, as without the instance kept."""
    info = info_of(interrupts)
    assert info is not None
    CACHE.clear()
    result = step(None, ev.WorkflowSubmitted("wf-interrupts", info.spec(), None, C0))
    state = result.state
    assert state is not None
    with ThreadPoolExecutor(2) as pool:
        (act0,) = result.dispatches
        report = await runner.run_attempt(make_attempt(activation_dispatch(state, act0), pool))
        assert isinstance(report, ev.TaskSucceeded)
        (poll_step,) = step(state, report).dispatches
        done = await asyncio.wait_for(runner.run_attempt(make_attempt(poll_step, pool)), 5)
        assert isinstance(done, ev.TaskSucceeded) and done.continuation is None
        (act1,) = step(state, done).dispatches
        assert not is_continued(act1)
        failed = await runner.run_attempt(make_attempt(activation_dispatch(state, act1), pool))
    assert isinstance(failed, ev.TaskFailed)
    assert (failed.error_type, failed.retryable) == ("KeyboardInterrupt", True)
