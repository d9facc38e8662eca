"""A code workflow's signal is taken once: the wait that takes it removes it from the
signals kept for the run, so a later wait for the same name waits for the next one.

A code workflow's signals are kept by name alone (they have no index), while its
``SignalConsumed`` names the wait's task index; the removal must look under the name.
"""

from __future__ import annotations

import asyncio
from typing import Any

from headwater import StepFailed, WorkflowContext, workflow
from headwater.core.evolve import evolve
from headwater.testing import Environment


@workflow(name="tests.code_signal.twice")
async def twice(wf: WorkflowContext) -> list[Any]:
    first = await wf.signal("go")
    await wf.sleep(10)
    try:
        second = await wf.signal("go", timeout=60)
    except StepFailed as e:
        second = e.error_type
    return [first, second]


def _run(*signals: tuple[str, dict[str, Any]]) -> tuple[Any, Environment, str]:
    async def go() -> tuple[Any, Environment, str]:
        env = Environment()
        run = await env.start(twice)
        for signal_id, fields in signals:
            await env.signal(run, "go", fields, signal_id=signal_id)
        return await env.result(run), env, run
    return asyncio.run(go())


def test_a_signal_taken_by_one_wait_is_not_given_to_the_next() -> None:
    output, env, run = _run(("s-1", {"n": 1}))
    assert output == [{"n": 1}, "TimeoutError"]
    assert env.state(run).signals == {}


def test_two_signals_go_to_two_waits_in_the_order_sent() -> None:
    output, env, run = _run(("s-1", {"n": 1}), ("s-2", {"n": 2}))
    assert output == [{"n": 1}, {"n": 2}]
    assert env.state(run).signals == {}
    assert env.state(run).signal_ids == ["s-1", "s-2"]


def test_the_history_folds_to_no_signal_kept() -> None:
    _, env, run = _run(("s-1", {"n": 1}))
    state = None
    for event in env.history(run):
        state = evolve(state, event)
    assert state is not None and state.signals == {} and state == env.state(run)
