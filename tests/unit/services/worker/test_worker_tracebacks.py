"""A failed attempt's traceback (``services/worker/tracebacks.py``, carried by the
runner's ``TaskFailed``): task code's frames first, chained causes kept, bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from worker_fakes import QUEUE, dispatch, make_attempt

from headwater import task
from headwater.core import events as ev
from services.worker import reports, tracebacks
from services.worker.runner import run_attempt
from services.worker.tracebacks import MAX_TRACEBACK_CHARS, bounded, format_traceback

HERE = Path(__file__).name
WORKER = str(Path(tracebacks.__file__).parent)


def split_it(value: object) -> list[str]:
    return value.split(",")  # type: ignore[attr-defined]  # an AttributeError for an int


@task(name="unit.tb.sync", queue=QUEUE)
def sync_task(value: object) -> list[str]:
    return split_it(value)


@task(name="unit.tb.async", queue=QUEUE)
async def async_task(value: object) -> list[str]:
    await asyncio.sleep(0)
    return split_it(value)


@task(name="unit.tb.generator", queue=QUEUE)
def generator_task(value: object) -> Iterator[str]:
    yield "first"
    yield from split_it(value)


@task(name="unit.tb.chained", queue=QUEUE)
def chained_task(value: object) -> list[str]:
    try:
        return split_it(value)
    except AttributeError as e:
        raise ValueError(f"cannot read {value!r}") from e


def deep(n: int, value: object) -> list[str]:
    return deep(n - 1, value) if n else split_it(value)


@task(name="unit.tb.deep", queue=QUEUE)
def deep_task(value: object) -> list[str]:
    try:
        return deep(300, value)
    except AttributeError as e:
        raise RuntimeError("x" * 50_000) from e


@task(name="unit.tb.nap", queue=QUEUE)
async def nap() -> None:
    await asyncio.sleep(5)


async def outcome_of(name: str, input: dict[str, object] | None = None,
                     timeout_s: float | None = None) -> ev.TaskFailed:
    with ThreadPoolExecutor(2) as pool:
        got = await run_attempt(make_attempt(dispatch(name, input, timeout_s=timeout_s), pool))
    assert isinstance(got, ev.TaskFailed), got
    return got


def frame_names(text: str) -> list[str]:
    return [line.rsplit(" in ", 1)[1] for line in text.splitlines()
            if line.startswith("  File ")]


async def test_a_sync_tasks_traceback_starts_at_the_task_and_names_the_helper() -> None:
    failed = await outcome_of("unit.tb.sync", {"value": 3})
    assert failed.traceback.startswith("Traceback (most recent call last):\n")
    assert frame_names(failed.traceback) == ["sync_task", "split_it"]
    assert 'return value.split(",")' in failed.traceback and HERE in failed.traceback
    assert WORKER not in failed.traceback
    assert failed.traceback.endswith(
        "AttributeError: 'int' object has no attribute 'split'\n")


async def test_an_async_tasks_traceback_leaves_out_the_loop_and_the_runner() -> None:
    failed = await outcome_of("unit.tb.async", {"value": 3})
    assert frame_names(failed.traceback) == ["async_task", "split_it"]
    assert "asyncio" not in failed.traceback and WORKER not in failed.traceback


async def test_a_generators_traceback_starts_at_the_generator() -> None:
    failed = await outcome_of("unit.tb.generator", {"value": 3})
    assert frame_names(failed.traceback) == ["generator_task", "split_it"]


async def test_a_chained_cause_is_kept_before_the_error_it_caused() -> None:
    failed = await outcome_of("unit.tb.chained", {"value": 3})
    text = failed.traceback
    assert "AttributeError: 'int' object has no attribute 'split'" in text
    assert "The above exception was the direct cause of the following exception" in text
    assert text.endswith("ValueError: cannot read 3\n")
    assert frame_names(text) == ["chained_task", "split_it", "chained_task"]
    assert WORKER not in text


async def test_a_long_message_is_cut_and_the_frames_stay() -> None:
    failed = await outcome_of("unit.tb.deep", {"value": 3})
    text = failed.traceback
    assert len(text) <= MAX_TRACEBACK_CHARS
    assert text.startswith("Traceback (most recent call last):\n  File ")
    assert frame_names(text) == ["deep_task", "deep", "deep", "deep", "split_it", "deep_task"]
    assert "[Previous line repeated 298 more times]" in text
    assert text.endswith(" more characters)\n") and "RuntimeError: xxxx" in text


def test_a_long_traceback_keeps_the_innermost_frames_and_the_exception_line() -> None:
    def level() -> None:
        raise KeyError("innermost")

    try:  # 201 distinct functions: frames Python does not fold as repeated
        exec("\n".join(f"def f{i}(): f{i + 1}()" for i in range(200))
             + "\ndef f200(): level()\nf0()", {"level": level})
    except KeyError as e:
        text = format_traceback(e, 3000)
    assert len(text) <= 3000
    assert text.startswith("Traceback (most recent call last):\n  [... ")
    assert "outer frames and earlier exceptions" in text.splitlines()[1]
    assert frame_names(text)[-1] == "level" and text.endswith("KeyError: 'innermost'\n")


async def test_failures_the_worker_decides_itself_carry_no_traceback() -> None:
    timed_out = await outcome_of("unit.tb.nap", timeout_s=0.05)
    unknown = await outcome_of("unit.tb.nobody")
    bad_input = await outcome_of("unit.tb.sync", {"nope": 1})
    assert (timed_out.traceback, unknown.traceback, bad_input.traceback) == ("", "", "")


def test_machinery_frames_are_left_out_only_above_the_task() -> None:
    assert tracebacks.is_machinery(tracebacks.__file__)
    assert tracebacks.is_machinery(asyncio.__file__)
    assert not tracebacks.is_machinery(__file__)
    assert not tracebacks.is_machinery("<string>")


def test_a_bound_holds_whatever_the_chunks() -> None:
    chunks = ["Traceback (most recent call last):\n",
              *[f'  File "f.py", line {i}, in g\n    g()\n' for i in range(1000)],
              "E: " + "m" * 9000 + "\n"]
    text = bounded(chunks, 2000)
    assert len(text) <= 2000
    assert 'line 999, in g' in text and "line 0, in g" not in text
    assert "E: mmm" in text
    assert bounded(["short\n"], 2000) == "short\n"


def test_an_exception_without_a_traceback_formats_as_its_line() -> None:
    assert format_traceback(KeyError("k")) == "KeyError: 'k'\n"


def test_a_report_cuts_a_long_traceback_to_its_tail() -> None:
    long = "Traceback (most recent call last):\n" + "x\n" * 10_000 + "KeyError: 'k'\n"
    report = ev.TaskFailed("wf", "n", None, 1, 5, "boom", "KeyError", True, long)
    cut = reports.cleaned(report)
    assert isinstance(cut, ev.TaskFailed)
    assert len(cut.traceback) <= MAX_TRACEBACK_CHARS
    assert cut.traceback.startswith("[... ") and cut.traceback.endswith("KeyError: 'k'\n")
    assert reports.cleaned(ev.TaskFailed("wf", "n", None, 1, 5, traceback="ok\n")).traceback \
        == "ok\n"
