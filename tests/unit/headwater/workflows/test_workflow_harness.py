"""Code workflows run in-process on the real core (``headwater.testing.Environment``):
what the function gets back from each kind of step, and that a run decides the same
way whether its instance is kept between activations or replayed every time."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Generator
from datetime import UTC, datetime
from typing import Any

import pytest

from headwater import StepFailed, WorkflowContext, task, workflow
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.reuse import code_steps
from headwater.core.state import WorkflowState
from headwater.errors import AttemptCancelled, WorkflowFailed
from headwater.testing import Environment
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import activate
from services.coordinator.snapshot import dump_state
from tests.unit.headwater.workflows import flows
from tests.unit.headwater.workflows.redecide import redecided

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


async def _main_run(cache: bool) -> tuple[Environment, str, Any]:
    env = Environment(now=START, definitions={"wt.spec": flows.SPEC_CHILD}, cache=cache)
    run = await env.start(flows.main, n=3)
    await env.signal(run, "approval", {"ok": True})
    return env, run, await env.result(run)


async def test_every_kind_of_step_gives_the_function_its_result() -> None:
    _, _, out = await _main_run(cache=True)
    assert out["first"] == 6 and out["loud"] == "HI"
    assert out["many"] == [2 * i for i in range(20)]  # in the order given, not of ending
    assert out["kid"] == 11  # the code child: double(5) + 1
    assert out["spec_kid"] == 2  # the spec child
    assert out["approval"] == {"ok": True}  # sent before its wait began: kept for it
    assert out["caught"] == "ValueError"  # the task's last attempt's error type


async def test_a_day_of_sleep_and_a_signal_take_no_time() -> None:
    began = time.perf_counter()
    _, _, out = await _main_run(cache=True)
    assert time.perf_counter() - began < 1.0
    # wf.now() is the last activation's time: a day of sleep later, on the test's clock
    assert datetime.fromisoformat(out["at"]) >= datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


async def test_replaying_every_activation_decides_as_the_kept_instance() -> None:
    """With the instance kept most activations are carried by the step's report before
    them (continued); replayed from the start every time, each goes to a worker. The
    same output; and every decision either history holds is what the function run
    afresh over that history decides (the two histories may differ: a continuation
    decides on one result, an activation on those that came meanwhile)."""
    kept, kept_run, kept_out = await _main_run(cache=True)
    replayed, replayed_run, replayed_out = await _main_run(cache=False)
    assert kept_out == replayed_out
    info = info_of(flows.main)
    assert info is not None
    for env, run in ((kept, kept_run), (replayed, replayed_run)):
        checked = await redecided(env.history(run), info, env._resolve)
        assert len(checked) >= 10
        assert all(recorded == fresh for _, recorded, fresh in checked), checked
    continued = [e.body for e in kept.history(kept_run) if isinstance(e.body, ev.TaskDispatched)
                 and isinstance(e.body.input, dict) and "continued" in e.body.input]
    assert len(continued) >= 5
    assert not any(isinstance(e.body, ev.TaskDispatched) and isinstance(e.body.input, dict)
                   and "continued" in e.body.input for e in replayed.history(replayed_run))


async def test_the_history_folds_to_the_state_the_core_built() -> None:
    env, run, _ = await _main_run(cache=True)
    state: WorkflowState | None = None
    for event in env.history(run):
        state = evolve(state, event)
    assert state is not None
    assert dump_state(state) == dump_state(env.state(run))


async def test_each_task_step_is_dispatched_once_per_attempt() -> None:
    env, run, _ = await _main_run(cache=False)
    seen: set[tuple[int | None, int]] = set()
    for e in env.history(run):
        if isinstance(e.body, ev.TaskDispatched):
            key = (e.body.index, e.body.attempt)
            assert key not in seen, key
            seen.add(key)


@task(name="wt.sum")
def add(a: int, b: int) -> int:
    return a + b


@workflow(name="wt.fanout")
async def fanout(wf: WorkflowContext, width: int, bound: int) -> list[int]:
    async def pair(i: int) -> int:
        first = await wf.run(add, a=i, b=1)
        return int(await wf.run(add, a=first, b=100))
    return await wf.gather(*(pair(i) for i in range(width)), max_concurrency=bound)


async def test_gather_of_coroutines_keeps_the_bound_and_the_order() -> None:
    env = Environment(now=START)
    run = await env.start(fanout, width=12, bound=3)
    assert await env.result(run) == [i + 101 for i in range(12)]
    live = 0
    most = 0
    for e in env.history(run):
        body = e.body
        if isinstance(body, ev.TaskDispatched) and body.task == "wt.sum":
            live += 1
            most = max(most, live)
        elif isinstance(body, ev.TaskSucceeded) and body.index is not None and body.index % 2:
            live -= 1
    assert most == 3


@task(name="wt.reason")
def reason(n: int) -> Generator[str, None, dict[str, int] | None]:
    yield "thinking "
    yield "aloud\n"
    return {"pick": n} if n else None


@task(name="wt.tokens")
async def tokens(text: str) -> AsyncGenerator[str, None]:
    for word in text.split():
        yield word


@workflow(name="wt.streams")
async def streams(wf: WorkflowContext) -> list[Any]:
    return [await wf.run(reason, n=3), await wf.run(reason, n=0),
            await wf.run(tokens, text="a b")]


async def test_a_generator_task_gives_what_it_returned_else_its_chunks() -> None:
    # as a worker does: a sync generator's return value, if not None, is its output
    env = Environment(now=START)
    assert await env.run(streams) == [{"pick": 3}, ["thinking ", "aloud\n"], ["a", "b"]]


@workflow(name="wt.progress")
async def reports(wf: WorkflowContext) -> str:
    await wf.run(add, a=1, b=1)
    wf.progress(0.5, "half way")
    return "done"


async def test_progress_goes_to_the_attempt_of_the_activation_that_reports_it() -> None:
    # A worker keeps the instance between activations: the second activation's
    # progress must go to its own attempt, not to the first one's (ended by then).
    heard: list[tuple[str, float, str]] = []

    def ended(fraction: float, message: str) -> None:
        raise AttemptCancelled("the attempt has ended")

    def sink(fraction: float, message: str) -> None:
        heard.append(("second", fraction, message))

    info = info_of(reports)
    assert info is not None
    first = await activate(info, {"workflow_id": "w-progress", "input": {}, "activation": 0,
                                  "times": [0], "through": [0], "steps": [], "results": []},
                           ended)
    assert [s["name"] for s in first["steps"]] == ["wt.sum"]
    second = await activate(info, {
        "workflow_id": "w-progress", "input": {}, "activation": 1, "times": [0, 5],
        "through": [0, 1], "steps": [{"op": "task", "name": "wt.sum", "act": 0}],
        "results": [[0, {"value": 2}]]}, sink)
    assert second == {"steps": [], "finish": "done"}
    assert heard == [("second", 0.5, "half way")]


@task(name="wt.count")
def count(items: list[int]) -> int:
    items.append(0)  # task code that changes its input changes nothing outside
    return len(items)


@task(name="wt.opaque")
def opaque() -> object:
    return object()


@workflow(name="wt.mutates")
async def mutates(wf: WorkflowContext) -> dict[str, Any]:
    seen: list[int] = []
    sizes = []
    for i in range(3):
        sizes.append(await wf.run(count, items=seen))
        seen.append(i)  # after the step was issued: its input stays as it was
    try:
        await wf.run(opaque)
        caught = ""
    except StepFailed as e:
        caught = f"{e.error_type} {e.attempts}"
    return {"sizes": sizes, "seen": seen, "caught": caught}


async def test_values_cross_to_and_from_task_code_as_json_as_over_kafka() -> None:
    env = Environment(now=START)
    run = await env.start(mutates)
    assert await env.result(run) == {"sizes": [1, 2, 3], "seen": [0, 1, 2],
                                     "caught": "TypeError 1"}  # not JSON: not retried
    inputs = [e.body.input for e in env.history(run)
              if isinstance(e.body, ev.TaskDispatched) and e.body.task == "wt.count"]
    assert inputs == [{"items": []}, {"items": [0]}, {"items": [0, 1]}]
    decided = [e.body.output["steps"] for e in env.history(run)
               if isinstance(e.body, ev.TaskSucceeded) and e.body.index in (0, 2, 4)]
    assert [d[0]["input"] for d in decided] == inputs  # the decisions as they were made


@workflow(name="wt.raises")
async def raises(wf: WorkflowContext) -> None:
    await wf.run(add, a=1, b=2)
    raise RuntimeError("the function gave up")


async def test_an_exception_in_the_function_fails_the_run_with_its_traceback() -> None:
    env = Environment(now=START)
    with pytest.raises(WorkflowFailed, match="RuntimeError: the function gave up"):
        await env.run(raises)


@workflow(name="wt.asyncio")
async def uses_asyncio(wf: WorkflowContext) -> None:
    import asyncio

    await asyncio.sleep(1)


async def test_awaiting_asyncio_names_the_durable_operation_to_use() -> None:
    env = Environment(now=START)
    with pytest.raises(WorkflowFailed, match=r"not durable: await only wf\.run"):
        await env.run(uses_asyncio)


@workflow(name="wt.timeout")
async def times_out(wf: WorkflowContext) -> str:
    try:
        await wf.signal("never", timeout=60)
    except StepFailed as e:
        return e.error_type
    return "signalled"


async def test_a_signal_wait_times_out_as_a_step_failure() -> None:
    env = Environment(now=START)
    assert await env.run(times_out) == "TimeoutError"


@workflow(name="wt.idle")
async def idle(wf: WorkflowContext) -> None:
    step = wf.run(add, a=1, b=1)  # made but never awaited: never issued
    del step
    await wf.gather()


async def test_a_function_that_issues_nothing_and_returns_succeeds() -> None:
    env = Environment(now=START)
    assert await env.run(idle) is None


@workflow(name="wt.loop", max_events=200)
async def counting(wf: WorkflowContext, n: int = 0, total: int = 1000) -> int:
    for _ in range(30):  # six events a step (an activation and a task, each started)
        if n >= total:
            return n
        n = int(await wf.run(add, a=n, b=1))
    wf.continue_as_new(n=n, total=total)


@workflow(name="wt.unbounded", max_events=200)
async def unbounded(wf: WorkflowContext, total: int = 1000) -> int:
    n = 0
    while n < total:
        n = int(await wf.run(add, a=n, b=1))
    return n


async def test_continue_as_new_keeps_each_generation_within_its_cap() -> None:
    env = Environment(now=START)
    run = await env.start(counting, total=1000)
    assert await env.result(run) == 1000
    state = env.state(run)
    assert state.generation == 34 and state.continued == 33
    starts = [e.seq for e in env.history(run) if isinstance(e.body, ev.WorkflowRestarted)]
    ends = [*starts[1:], len(env.history(run))]
    assert max(b - a for a, b in zip(starts, ends, strict=True)) <= 200


async def test_without_continue_as_new_the_cap_fails_the_run_by_name() -> None:
    env = Environment(now=START)
    with pytest.raises(WorkflowFailed, match=r"HistoryTooLong: the run recorded 20[0-9] events"):
        await env.run(unbounded, total=1000)


async def test_a_rerun_from_a_step_reuses_the_steps_before_it() -> None:
    env, source, out = await _main_run(cache=True)
    flows.CALLS.clear()
    # Steps 0-21 are first, loud and the 20 of the gather; rerun from step 22 (the child).
    doc = {"of": source, "reset": None, "steps": code_steps(env.state(source), before=22)}
    assert sorted(int(s) for s in doc["steps"]["main"]) == list(range(22))
    rerun = await env.start(flows.main, {"n": 3}, id="again", rerun=doc)
    await env.signal(rerun, "approval", {"ok": True})
    again = await env.result(rerun)
    own = ("at", "uuid")  # the rerun's own time and random draws (seeded by its id)
    assert {k: v for k, v in again.items() if k not in own} == {
        k: v for k, v in out.items() if k not in own}
    bodies = [e.body for e in env.history(rerun)]
    reused = [b.index for b in bodies if isinstance(b, ev.TaskReused)]
    assert reused == [2 * s + 1 for s in range(22)]
    ran = {b.task for b in bodies if isinstance(b, ev.TaskDispatched) and b.index % 2}
    assert "wt.shout" not in ran  # step 1, reused
    assert flows.CALLS.get("double") == 2  # only the two children ran theirs again


async def test_a_rerun_does_not_reuse_a_step_the_code_now_issues_differently() -> None:
    env = Environment(now=START)
    source = await env.start(fanout, width=2, bound=1)
    await env.result(source)
    doc = {"of": source, "steps": {"main": {"0": {"op": "task", "name": "wt.other",
                                                  "output": 99}}}}
    rerun = await env.start(fanout, {"width": 2, "bound": 1}, id="r2", rerun=doc)
    assert await env.result(rerun) == [101, 102]  # nothing reused: the name differs
    assert not [e for e in env.history(rerun) if isinstance(e.body, ev.TaskReused)]


@workflow(name="wt.stream")
async def streaming(wf: WorkflowContext, n: int) -> Any:
    for i in range(n):
        yield {"part": i, "value": await wf.run(add, a=i, b=i)}
        if i == 1:
            await wf.sleep(60)


async def test_a_streaming_function_yields_chunks_of_its_activations() -> None:
    env = Environment(now=START, cache=False)  # replays: old chunks are not sent again
    run = await env.start(streaming, n=3)
    out = await env.result(run)
    assert out == [{"part": i, "value": 2 * i} for i in range(3)]
    chunks = [e.body.chunk for e in env.history(run)
              if isinstance(e.body, ev.TaskOutputStreamed)]
    assert chunks == out
