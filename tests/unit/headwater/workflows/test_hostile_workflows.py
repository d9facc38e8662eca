"""Workflow code a careless user writes, and input a careless caller sends: each must end
the run with an error that names the fault, never leave its activation refused or
raising on every attempt (an activation is retried for as long as a run may live, so
such a run would stay ``running`` for years).

Each case runs one activation (``activation.activate``, what a worker runs) and reads
its decision; the harness cases run the whole run on the real core."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from headwater import WorkflowContext, blobs, task, workflow
from headwater.core import events as ev
from headwater.core.kinds.code.decision import MAX_STEPS_PER_ACTIVATION, decision_fault
from headwater.errors import WorkflowFailed
from headwater.testing import Environment
from headwater.workflows.decorator import forget, info_of, input_schema_of
from headwater.workflows.instances import CACHE, activate


@task(name="hw.echo", queue="cpu")
def echo(x: Any = None) -> Any:
    return x


class Custom(BaseException):
    """An exception that is not an ``Exception`` (``except Exception`` lets it by)."""


async def add(wf: WorkflowContext, a: int, b: int = 1) -> int:
    return a + b


async def sleeps_long(wf: WorkflowContext) -> str:
    await wf.sleep(10 ** 12)  # about 31,700 years: over what a step may ask
    return "woke"


async def sleeps_nan(wf: WorkflowContext) -> str:
    await wf.sleep(float("nan"))
    return "woke"


async def waits_for_control(wf: WorkflowContext) -> Any:
    return await wf.signal("go\nnow", timeout=5)


async def waits_for_long_name(wf: WorkflowContext) -> Any:
    return await wf.signal("s" * 201)


async def waits_for_a_path(wf: WorkflowContext) -> Any:
    return await wf.signal("team/approval")


async def runs_with_a_set(wf: WorkflowContext) -> Any:
    return await wf.run(echo, x={1, 2})


async def calls_with_nan(wf: WorkflowContext) -> Any:
    return await wf.call("hw.add", {"a": float("nan")})


async def returns_nan(wf: WorkflowContext) -> Any:
    return {"mean": float("nan")}


async def continues_with_a_set(wf: WorkflowContext) -> Any:
    wf.continue_as_new(seen={1, 2})


async def waits_negative(wf: WorkflowContext) -> Any:
    return await wf.signal("go", timeout=-1)


async def runs_for_ever(wf: WorkflowContext) -> Any:
    return await wf.run(echo, x=1, timeout=1e12)


async def catches_the_refusal(wf: WorkflowContext) -> str:
    try:
        await wf.sleep(10 ** 12)
    except ValueError as e:
        return f"caught: {e}"
    return "slept"


async def gathers_too_many(wf: WorkflowContext) -> int:
    got = await wf.gather(*(wf.run(echo, x=i) for i in range(MAX_STEPS_PER_ACTIVATION + 1)))
    return len(got)


async def exits(wf: WorkflowContext) -> None:
    await wf.run(echo, x=1)
    raise SystemExit(3)


async def raises_custom(wf: WorkflowContext) -> None:
    raise Custom("not an Exception")


async def raises_cancelled(wf: WorkflowContext) -> None:
    raise asyncio.CancelledError("the function's own")


async def calls_badly(wf: WorkflowContext) -> Any:
    return await wf.call("hw.add", {"zzz": 1})


async def calls_unknown(wf: WorkflowContext) -> Any:
    return await wf.call("no.such", {})


async def gathers(wf: WorkflowContext, n: int) -> int:
    return len(await wf.gather(*(wf.run(echo, x=i) for i in range(n))))


@task(name="hw.blob", queue="cpu")
def blob(kib: int) -> str:
    return "x" * (kib * 1024)


async def blob_of(wf: WorkflowContext, kib: int) -> int:
    return len(await wf.run(blob, kib=kib, retry={"max_attempts": 1}))


FLOWS = {f.__name__: f for f in (add, sleeps_long, sleeps_nan, waits_for_control,
                                 waits_for_long_name, waits_for_a_path, waits_negative,
                                 runs_for_ever, catches_the_refusal, gathers_too_many, exits,
                                 raises_custom, raises_cancelled, calls_badly, calls_unknown,
                                 gathers, blob_of, runs_with_a_set, calls_with_nan,
                                 returns_nan, continues_with_a_set)}


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    for name, fn in FLOWS.items():
        workflow(name=f"hw.{name}")(fn)
    yield
    for name in FLOWS:
        forget(f"hw.{name}")
    CACHE.clear()


async def first_decision(name: str, input: Any = None, run: str = "r-1") -> dict[str, Any]:
    """Activation 0 of ``hw.<name>`` as a worker runs it: its decision."""
    info = info_of(f"hw.{name}")
    assert info is not None
    payload = {"workflow_id": run, "input": input or {}, "activation": 0, "times": [0],
               "through": [0], "steps": [], "results": []}
    return await activate(info, payload, cache=False)


@pytest.mark.parametrize("input, says", [
    ({"a": 1, "bogus": 2}, "unexpected keyword argument 'bogus'"),
    ({"a": 1, "wf": 2}, "multiple values for argument 'wf'"),
    ({}, "missing 1 required positional argument: 'a'"),
    ([1, 2], "unexpected keyword argument 'input'"),
])
async def test_input_the_function_cannot_take_fails_the_function(input: Any, says: str) -> None:
    decision = await first_decision("add", input)
    assert decision_fault(decision) is None
    fail = decision["fail"]
    assert fail["type"] == "TypeError" and says in fail["message"], decision
    assert "cannot be called with its input" in fail["message"]


def capped(env: Environment, most: int) -> Environment:
    """``env``, made to stop with an ``AssertionError`` at its ``most + 1``-th attempt (a
    run retried for ever would otherwise spin a million activations)."""
    run_task = env._run_task

    async def run_capped(body: ev.TaskDispatched) -> ev.Input:
        if env.dispatched >= most:
            raise AssertionError(f"more than {most} attempts: {body.task} is retried")
        return await run_task(body)
    env._run_task = run_capped  # type: ignore[method-assign]
    return env


async def test_a_child_given_input_it_cannot_take_fails_its_parent_step() -> None:
    env = capped(Environment(), 5)
    with pytest.raises(WorkflowFailed, match="unexpected keyword argument 'zzz'"):
        await env.run("hw.calls_badly")


def test_the_input_schema_refuses_keys_the_function_has_no_parameter_for() -> None:
    assert input_schema_of(add)["additionalProperties"] is False

    async def open_ended(wf: WorkflowContext, a: int, **rest: Any) -> None:
        return None
    assert "additionalProperties" not in input_schema_of(open_ended)


@pytest.mark.parametrize("name, says", [
    ("sleeps_long", "seconds must be a number of seconds from 0 to under 1e+09"),
    ("sleeps_nan", "seconds must be a number of seconds from 0 to under 1e+09, not nan"),
    ("waits_for_control", "must not contain control characters (U+000A at 2)"),
    ("waits_for_long_name", "must be at most 200 characters, not 201"),
    ("waits_for_a_path", "a signal's name must not hold /"),
    ("waits_negative", "timeout must be a number of seconds"),
    ("runs_with_a_set", "the input of task hw.echo is not JSON: Type is not JSON serializable"),
    ("calls_with_nan", "the input of child hw.add is not JSON: NaN and Infinity are not JSON"),
    ("runs_for_ever", "task step hw.echo: timeout must be a number of seconds"),
    ("gathers_too_many", f"at most {MAX_STEPS_PER_ACTIVATION} steps at once"),
])
async def test_a_step_the_core_would_refuse_is_refused_where_it_is_issued(
        name: str, says: str) -> None:
    decision = await first_decision(name)
    assert decision_fault(decision) is None, decision_fault(decision)
    assert decision["fail"]["type"] == "ValueError" and says in decision["fail"]["message"]


@pytest.mark.parametrize("name, says", [
    ("returns_nan", "the workflow returned a value that is not JSON: NaN and Infinity"),
    ("continues_with_a_set", "the input of wf.continue_as_new is not JSON: Type is not"),
])
async def test_an_end_that_is_not_json_fails_the_function_naming_it(name: str,
                                                                     says: str) -> None:
    decision = await first_decision(name)
    assert decision["fail"]["type"] == "TypeError" and says in decision["fail"]["message"]


async def test_the_function_can_catch_a_refused_step() -> None:
    decision = await first_decision("catches_the_refusal")
    assert decision["finish"].startswith("caught: sleep step: seconds must be"), decision


@pytest.mark.parametrize("name, error_type", [
    ("raises_custom", "Custom"), ("raises_cancelled", "CancelledError")])
async def test_a_base_exception_the_function_raises_fails_it(name: str, error_type: str) -> None:
    decision = await first_decision(name)
    assert decision["fail"]["type"] == error_type, decision


async def test_sys_exit_in_a_workflow_fails_the_run_in_the_harness_too() -> None:
    env = Environment()
    with pytest.raises(WorkflowFailed, match="SystemExit: 3"):
        await env.run("hw.exits")


async def test_a_call_of_a_definition_the_harness_lacks_fails_at_once() -> None:
    env = capped(Environment(), 5)
    with pytest.raises(WorkflowFailed, match=re.escape("no definition 'no.such'")):
        await env.run("hw.calls_unknown")


async def test_the_harness_holds_a_decision_to_a_workers_output_limit() -> None:
    env = capped(Environment(), 5)  # 6,000 task steps of about 195 bytes each
    with pytest.raises(WorkflowFailed, match=r"OutputTooLargeError: output is 11[0-9]{5} "
                       r"bytes, over the limit of 1048576"):
        await env.run("hw.gathers", n=6000)


async def test_the_harness_holds_a_task_output_to_a_workers_output_limit() -> None:
    """With the claim check off (a threshold of 0), as a worker without it."""
    env = capped(Environment(blob_threshold_bytes=0), 5)
    with pytest.raises(WorkflowFailed,
                       match=r"StepFailed: step 0 \(task hw.blob, main\[1\]\): OutputTooLarge"):
        await env.run("hw.blob_of", kib=1100)


async def test_the_harness_passes_a_large_output_by_reference() -> None:
    """As a worker does: the history holds a reference, the function the value."""
    env = capped(Environment(), 5)
    run = await env.start("hw.blob_of", kib=1100)
    assert await env.result(run) == 1100 * 1024
    results = [e.body.output for e in env.history(run)
               if isinstance(e.body, ev.TaskSucceeded) and e.body.index == 1]
    assert results and blobs.is_ref(results[0])
    assert blobs.resolve(results[0], env.blobs) == "x" * (1100 * 1024)


async def sleeps_in_a_chain(wf: WorkflowContext, n: int) -> int:
    for _ in range(n):
        await wf.sleep(0)
    return n


def _replay_lines(k: int) -> int:
    """Lines of Python run by a replay of activation ``k`` of ``sleeps_in_a_chain`` from
    its start (a worker without the run's instance), each earlier activation having
    issued one sleep: a count of the work done, the same however loaded the machine."""
    from headwater.workflows.activation import Instance

    workflow(name="hw.sleeps_in_a_chain")(sleeps_in_a_chain)
    try:
        info = info_of("hw.sleeps_in_a_chain")
        assert info is not None
        payload = {"workflow_id": "r-1", "input": {"n": k + 1}, "activation": k,
                   "times": [0] * (k + 1), "through": list(range(k + 1)),
                   "steps": [{"op": "sleep", "name": "", "act": a} for a in range(k)],
                   "results": [[s, {"value": None}] for s in range(k)]}
        lines = 0

        def trace(frame: Any, event: str, arg: Any) -> Any:
            nonlocal lines
            lines += event == "line"
            return trace

        sys.settrace(trace)
        try:
            decision = Instance(info, payload, None).advance(payload)
        finally:
            sys.settrace(None)
        assert decision["steps"] == [{"op": "sleep", "seconds": 0.0, "step": k}]
        return lines
    finally:
        forget("hw.sleeps_in_a_chain")


def test_a_replay_takes_time_in_proportion_to_its_activations() -> None:
    """A worker without a run's instance replays every activation on its event loop: at
    3,000 activations a replay that grows with their square blocked it for 0.8 s. Four
    times the activations is about four times the lines run, not sixteen."""
    short, long = _replay_lines(750), _replay_lines(3000)
    assert long / short < 5, f"750 activations: {short} lines, 3,000: {long}"


async def steps_in_a_chain(wf: WorkflowContext, n: int) -> int:
    for i in range(n):
        await wf.run(echo, x=i)
    return n


async def test_the_harness_counts_events_toward_max_events_as_the_stack_does() -> None:
    """Each attempt's ``TaskStarted`` (a worker's report) is history: 6 events a step
    when every activation goes to a worker (no instance kept), 5 when the step's report
    carries it (a continuation: dispatched and decided, never started), as on the stack.
    Without the starts, 10 steps passed under ``max_events=40`` here and failed on the
    stack after 6."""
    workflow(name="hw.steps_in_a_chain", max_events=40)(steps_in_a_chain)
    try:
        env = Environment(cache=False)
        assert await env.run("hw.steps_in_a_chain", n=6) == 6
        names = [type(e.body).__name__ for e in env.history("test-1")]
        assert names[:4] == ["WorkflowAccepted", "TaskDispatched", "TaskStarted",
                             "TaskSucceeded"], names
        with pytest.raises(WorkflowFailed, match="HistoryTooLong: the run recorded 41 events"):
            await Environment(cache=False).run("hw.steps_in_a_chain", n=7)
        kept = Environment()
        assert await kept.run("hw.steps_in_a_chain", n=8) == 8
        names = [type(e.body).__name__ for e in kept.history("test-1")]
        assert names[5:10] == ["TaskStarted", "TaskSucceeded", "TaskDispatched",
                               "TaskSucceeded", "TaskDispatched"], names
        with pytest.raises(WorkflowFailed, match="HistoryTooLong: the run recorded 45 events"):
            await Environment().run("hw.steps_in_a_chain", n=9)
    finally:
        forget("hw.steps_in_a_chain")
