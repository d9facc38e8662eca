"""How one attempt ends (``run_attempt``): whatever task code does, an outcome comes back."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from worker_fakes import QUEUE, dispatch, make_attempt

from headwater import NonRetryableError, TaskContext, task
from headwater.core import events as ev
from services.worker.runner import run_attempt


@task(name="unit.runner.add", queue=QUEUE)
def add(a: int, b: int = 1) -> int:
    return a + b


@task(name="unit.runner.typo", queue=QUEUE)
def typo(text: str) -> int:
    return len(text) + text  # type: ignore[operator]  # a TypeError inside task code


@task(name="unit.runner.raise", queue=QUEUE)
def raise_(kind: str) -> None:
    errors: dict[str, BaseException] = {
        "exit": SystemExit(3), "interrupt": KeyboardInterrupt(), "stop": StopIteration(),
        "fatal": NonRetryableError("never"), "surrogate": RuntimeError("bad \ud800 byte"),
    }
    raise errors[kind]


@task(name="unit.runner.araise", queue=QUEUE)
async def araise(kind: str) -> None:
    await asyncio.sleep(0)
    if kind == "exit":
        raise SystemExit(4)
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "cancelled":
        raise asyncio.CancelledError  # task code's own, not the worker stopping
    raise TypeError("unsupported operand")


@task(name="unit.runner.returns", queue=QUEUE)
def returns(kind: str) -> Any:
    return {"set": {1, 2}, "surrogate": "\ud800", "ok": {"a": [1, 2.5, None]},
            "nan": {"n": [None, float("nan")]}, "inf": [float("-inf")]}[kind]


@task(name="unit.runner.nap", queue=QUEUE)
async def nap(ctx: TaskContext, seconds: float) -> float:
    await asyncio.sleep(seconds)
    return seconds


async def run(d: ev.TaskDispatched) -> ev.TaskSucceeded | ev.TaskFailed:
    with ThreadPoolExecutor(2) as pool:
        return await run_attempt(make_attempt(d, pool))


def failed(outcome: ev.TaskSucceeded | ev.TaskFailed) -> ev.TaskFailed:
    assert isinstance(outcome, ev.TaskFailed), outcome
    return outcome


async def test_a_typeerror_inside_task_code_is_retryable() -> None:
    outcome = failed(await run(dispatch("unit.runner.typo", {"text": "x"})))
    assert (outcome.error_type, outcome.retryable) == ("TypeError", True)
    assert "not JSON" not in outcome.error
    assert "can only concatenate" in outcome.error or "unsupported operand" in outcome.error


async def test_an_async_typeerror_is_retryable_too() -> None:
    outcome = failed(await run(dispatch("unit.runner.araise", {"kind": "type"})))
    assert (outcome.error_type, outcome.retryable) == ("TypeError", True)


@pytest.mark.parametrize(("given", "says"), [
    ({"b": 2}, "missing a required argument: 'a'"),
    ({"a": 1, "c": 3}, "got an unexpected keyword argument 'c'"),
])
async def test_input_that_does_not_fit_the_function_fails_without_retry(
        given: dict[str, int], says: str) -> None:
    outcome = failed(await run(dispatch("unit.runner.add", given)))
    assert (outcome.error_type, outcome.retryable) == ("TypeError", False)
    assert says in outcome.error
    assert "unit.runner.add" in outcome.error
    assert "test_worker_runner.add(a: 'int', b: 'int' = 1)" in outcome.error


async def test_fitting_input_runs() -> None:
    outcome = await run(dispatch("unit.runner.add", {"a": 1}))
    assert isinstance(outcome, ev.TaskSucceeded) and outcome.output == 2


@pytest.mark.parametrize(("task_name", "kind", "error_type"), [
    ("unit.runner.raise", "exit", "SystemExit"),
    ("unit.runner.raise", "interrupt", "KeyboardInterrupt"),
    ("unit.runner.raise", "stop", "StopIteration"),
    ("unit.runner.araise", "exit", "SystemExit"),
    ("unit.runner.araise", "interrupt", "KeyboardInterrupt"),
    ("unit.runner.araise", "cancelled", "CancelledError"),
])
async def test_base_exceptions_from_task_code_are_retryable_failures(
        task_name: str, kind: str, error_type: str) -> None:
    outcome = failed(await asyncio.wait_for(run(dispatch(task_name, {"kind": kind})), 5))
    assert (outcome.error_type, outcome.retryable) == (error_type, True)


async def test_non_retryable_error_stays_non_retryable() -> None:
    outcome = failed(await run(dispatch("unit.runner.raise", {"kind": "fatal"})))
    assert (outcome.error, outcome.error_type, outcome.retryable) == (
        "never", "NonRetryableError", False)


@pytest.mark.parametrize("kind", ["set", "surrogate", "nan", "inf"])
async def test_output_that_is_not_json_fails_without_retry(kind: str) -> None:
    """NaN and Infinity too: orjson would write them as null, a changed output."""
    outcome = failed(await run(dispatch("unit.runner.returns", {"kind": kind})))
    assert outcome.error.startswith("output is not JSON")
    assert not outcome.retryable


async def test_timeout_is_retryable_and_named() -> None:
    outcome = failed(await run(dispatch("unit.runner.nap", {"seconds": 5}, timeout_s=0.05)))
    assert (outcome.error, outcome.error_type, outcome.retryable) == (
        "timed out after 0.05 s", "TimeoutError", True)


async def test_cancelling_the_worker_cancels_the_attempt() -> None:
    attempt = asyncio.create_task(run(dispatch("unit.runner.nap", {"seconds": 5})))
    await asyncio.sleep(0.05)
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt


@pytest.mark.parametrize(("task_name", "input"), [
    ("unit.runner.typo", {"text": "x"}),
    ("unit.runner.raise", {"kind": "exit"}),
    ("unit.runner.araise", {"kind": "interrupt"}),
    ("unit.runner.raise", {"kind": "fatal"}),
])
async def test_each_failed_attempt_logs_one_warning_with_its_traceback(
        task_name: str, input: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="headwater.worker"):
        failed(await run(dispatch(task_name, input)))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "wf/n/1" in warnings[0].getMessage()
    assert warnings[0].exc_info is not None and warnings[0].exc_info[2] is not None


async def test_the_failure_message_keeps_a_lone_surrogate_for_the_outbox_to_clean() -> None:
    outcome = failed(await run(dispatch("unit.runner.raise", {"kind": "surrogate"})))
    assert outcome.error == "bad \ud800 byte"


async def test_an_exception_whose_str_raises_is_still_reported() -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    @task(name="unit.runner.weird", queue=QUEUE)
    def weird() -> None:
        raise Weird

    outcome = failed(await run(dispatch("unit.runner.weird")))
    assert (outcome.error, outcome.error_type) == ("Weird", "Weird")
