"""Code deployed while runs are in flight: a change that decides differently from the
history is caught (the run waits, not failed) and the fixed code resumes it; a change
behind ``wf.patched`` keeps old and new runs correct."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from headwater import NondeterminismError, WorkflowContext, task, workflow
from headwater.core import events as ev
from headwater.core.status import WorkflowStatus
from headwater.testing import Environment
from headwater.workflows.decorator import forget
from headwater.workflows.instances import CACHE

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
NAME = "wt.deployed"


@task(name="wt.step_a")
def step_a() -> str:
    return "a"


@task(name="wt.step_b")
def step_b() -> str:
    return "b"


@task(name="wt.step_c")
def step_c() -> str:
    return "c"


async def original(wf: WorkflowContext) -> list[Any]:
    first = await wf.run(step_a)
    second = await wf.run(step_b)
    return [first, second, await wf.signal("go")]


async def changed(wf: WorkflowContext) -> list[Any]:  # step_b became step_c
    first = await wf.run(step_a)
    second = await wf.run(step_c)
    return [first, second, await wf.signal("go")]


async def reordered(wf: WorkflowContext) -> list[Any]:  # the signal now comes first
    approval = await wf.signal("go")
    first = await wf.run(step_a)
    return [first, await wf.run(step_b), approval]


async def patched(wf: WorkflowContext) -> list[Any]:
    first = await wf.run(step_a)
    second = await wf.run(step_c) if wf.patched("use-c") else await wf.run(step_b)
    return [first, second, await wf.signal("go")]


async def later(wf: WorkflowContext) -> list[Any]:  # changed after where runs wait
    first = await wf.run(step_a)
    second = await wf.run(step_b)
    approval = await wf.signal("go")
    return [first, second, approval, await wf.run(step_c)]


@pytest.fixture
def deploy() -> Iterator[Callable[[Callable[..., Any]], None]]:
    """Register ``fn`` as the workflow ``NAME``, as a deploy of new code does (the
    workers' kept instances are gone with their old processes)."""
    def put(fn: Callable[..., Any]) -> None:
        forget(NAME)
        CACHE.clear()
        workflow(name=NAME)(fn)
    yield put
    forget(NAME)


async def test_a_changed_step_is_caught_and_the_run_waits(deploy: Any) -> None:
    deploy(original)
    env = Environment(now=START)
    run = await env.start(NAME)  # ran step_a and step_b; waits for the signal
    deploy(changed)
    await env.signal(run, "go", {"ok": 1})
    with pytest.raises(NondeterminismError) as caught:
        await env.result(run)
    assert (caught.value.step, caught.value.new) == (1, "task wt.step_c")
    assert caught.value.recorded.startswith("task wt.step_b")
    assert env.state(run).status is WorkflowStatus.RUNNING  # not failed
    failed = [e.body for e in env.history(run) if isinstance(e.body, ev.TaskFailed)]
    assert failed[-1].error_type == "NondeterminismError"
    assert "step 1" in failed[-1].error and "wt.step_c" in failed[-1].error


async def test_a_change_past_where_a_run_waits_is_no_fault(deploy: Any) -> None:
    deploy(original)
    env = Environment(now=START)
    run = await env.start(NAME)
    deploy(later)  # the history has not reached the new step: the run takes it
    await env.signal(run, "go", {"ok": 1})
    assert await env.result(run) == ["a", "b", {"ok": 1}, "c"]


async def test_a_reordered_function_names_the_step_and_both_operations(deploy: Any) -> None:
    deploy(original)
    env = Environment(now=START)
    run = await env.start(NAME)
    deploy(reordered)
    await env.signal(run, "go", {"ok": 1})
    with pytest.raises(NondeterminismError) as caught:
        await env.result(run)
    assert (caught.value.step, caught.value.new) == (0, "signal go")
    assert caught.value.recorded.startswith("task wt.step_a")


async def test_deploying_the_fixed_code_lets_the_run_go_on(deploy: Any) -> None:
    deploy(original)
    env = Environment(now=START)
    run = await env.start(NAME)
    deploy(reordered)
    await env.signal(run, "go", {"ok": 1})
    with pytest.raises(NondeterminismError):
        await env.result(run)
    deploy(original)
    await env.resume(run)
    assert await env.result(run) == ["a", "b", {"ok": 1}]


async def test_a_patched_branch_keeps_old_and_new_runs_correct(deploy: Any) -> None:
    deploy(original)
    env = Environment(now=START)
    old_run = await env.start(NAME, id="old")
    deploy(patched)
    new_run = await env.start(NAME, id="new")
    await env.signal(old_run, "go", {"n": "old"})
    await env.signal(new_run, "go", {"n": "new"})
    assert await env.result(old_run) == ["a", "b", {"n": "old"}]  # began before the change
    assert await env.result(new_run) == ["a", "c", {"n": "new"}]
    marks = [e.body for e in env.history(new_run) if isinstance(e.body, ev.TaskSucceeded)
             and e.body.index is not None and e.body.index % 2 == 0
             and any(s.get("op") == "patch" for s in (e.body.output or {}).get("steps", []))]
    assert len(marks) == 1


async def test_a_patched_run_replays_its_marker(deploy: Any) -> None:
    deploy(patched)
    env = Environment(now=START, cache=False)  # every activation replays from the start
    run = await env.start(NAME)
    await env.signal(run, "go", {"n": 1})
    assert await env.result(run) == ["a", "c", {"n": 1}]
