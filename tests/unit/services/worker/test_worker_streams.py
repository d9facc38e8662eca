"""Generator tasks (``calls``): each yielded value goes out at once as a numbered
``TaskOutputStreamed``; the output is every chunk (or a sync generator's return value);
bad chunks fail the attempt for good; timeouts stop generators too."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from worker_fakes import QUEUE, Sent, dispatch, make_attempt, wait_until

from headwater import TaskContext, task
from headwater.core import events as ev
from headwater.sdk import REGISTRY
from services.worker.lifecycle import live

HOLD = threading.Event()
CLOSED: list[str] = []


@task(name="unit.gen.words", queue=QUEUE)
def words(ctx: TaskContext, text: str) -> Iterator[str]:
    for word in text.split():
        ctx.progress(0.5)
        yield word


@task(name="unit.gen.returns", queue=QUEUE)
def returns(n: int) -> Iterator[int]:
    yield from range(n)
    return {"total": n}  # type: ignore[return-value]


@task(name="unit.gen.awords", queue=QUEUE)
async def awords(text: str) -> AsyncIterator[str]:
    for word in text.split():
        await asyncio.sleep(0)
        yield word


@task(name="unit.gen.held", queue=QUEUE)
def held() -> Iterator[str]:
    yield "first"
    HOLD.wait(5)  # the first chunk must be out before this returns
    yield "second"


@task(name="unit.gen.bad", queue=QUEUE)
def bad(kind: str) -> Iterator[Any]:
    yield "fine"
    yield {"set": {1}, "big": "x" * 200, "nan": {"v": None, "n": float("nan")}}[kind]
    yield "never"


@task(name="unit.gen.raises", queue=QUEUE)
def raises() -> Iterator[int]:
    yield 1
    raise RuntimeError("broke after one")


@task(name="unit.gen.endless", queue=QUEUE)
def endless() -> Iterator[int]:
    i = 0
    try:
        while True:
            time.sleep(0.01)
            yield i
            i += 1
    finally:
        CLOSED.append(threading.current_thread().name)


@task(name="unit.gen.aendless", queue=QUEUE)
async def aendless() -> AsyncIterator[int]:
    i = 0
    try:
        while True:
            await asyncio.sleep(0.01)
            yield i
            i += 1
    finally:
        CLOSED.append("async")


async def run(d: ev.TaskDispatched, sent: Sent, max_output_bytes: int = 1024 * 1024) -> None:
    with ThreadPoolExecutor(2, thread_name_prefix="task") as pool:
        await live(make_attempt(d, pool, sent, max_output_bytes), "w1", lambda: None)


def chunks(sent: Sent) -> list[tuple[int, Any]]:
    return [(c.chunk_seq, c.chunk) for c in sent.of(ev.TaskOutputStreamed)]


def test_task_records_generator_kinds() -> None:
    assert REGISTRY["unit.gen.words"].is_generator
    assert not REGISTRY["unit.gen.words"].is_async_generator
    assert REGISTRY["unit.gen.awords"].is_async_generator
    assert not REGISTRY["unit.gen.awords"].is_async


@pytest.mark.parametrize("name", ["unit.gen.words", "unit.gen.awords"])
async def test_each_yield_is_a_numbered_chunk_and_the_output_is_all_of_them(name: str) -> None:
    sent = Sent()
    await run(dispatch(name, {"text": "the quick brown fox"}), sent)
    assert chunks(sent) == [(0, "the"), (1, "quick"), (2, "brown"), (3, "fox")]
    outcome = sent[-1]
    assert isinstance(outcome, ev.TaskSucceeded)
    assert outcome.output == ["the", "quick", "brown", "fox"]
    assert [type(r).__name__ for r in sent].index("TaskSucceeded") == len(sent) - 1


async def test_a_sync_generators_return_value_is_the_output() -> None:
    sent = Sent()
    await run(dispatch("unit.gen.returns", {"n": 3}), sent)
    assert [c for _, c in chunks(sent)] == [0, 1, 2]
    assert isinstance(sent[-1], ev.TaskSucceeded) and sent[-1].output == {"total": 3}


async def test_a_chunk_is_sent_as_soon_as_it_is_yielded() -> None:
    HOLD.clear()
    sent = Sent()
    running = asyncio.create_task(run(dispatch("unit.gen.held"), sent))
    try:
        await wait_until(lambda: chunks(sent) == [(0, "first")])
    finally:
        HOLD.set()
    await running
    assert chunks(sent) == [(0, "first"), (1, "second")]


@pytest.mark.parametrize(("kind", "error_type", "says"), [
    ("set", "TypeError", "chunk 1 is not JSON"),
    ("nan", "TypeError", "chunk 1 is not JSON: NaN and Infinity are not JSON"),
    ("big", "OutputTooLargeError",
     "chunk 1 is 202 bytes, over the limit of 100 (HEADWATER_MAX_OUTPUT_BYTES)"),
])
async def test_a_chunk_that_cannot_be_sent_fails_the_attempt_for_good(
        kind: str, error_type: str, says: str) -> None:
    sent = Sent()
    await run(dispatch("unit.gen.bad", {"kind": kind}), sent, max_output_bytes=100)
    failed = sent[-1]
    assert isinstance(failed, ev.TaskFailed), sent
    assert (failed.error_type, failed.retryable) == (error_type, False)
    assert failed.error.startswith(says), failed.error
    assert chunks(sent) == [(0, "fine")]


async def test_a_generator_that_raises_fails_retryably_after_its_chunks() -> None:
    sent = Sent()
    await run(dispatch("unit.gen.raises"), sent)
    assert chunks(sent) == [(0, 1)]
    failed = sent[-1]
    assert isinstance(failed, ev.TaskFailed)
    assert (failed.error, failed.error_type, failed.retryable) == (
        "broke after one", "RuntimeError", True)


@pytest.mark.parametrize("name", ["unit.gen.endless", "unit.gen.aendless"])
async def test_a_timeout_stops_and_closes_a_generator(name: str) -> None:
    CLOSED.clear()
    sent = Sent()
    await asyncio.wait_for(run(dispatch(name, timeout_s=0.3), sent), 5)
    failed = sent[-1]
    assert isinstance(failed, ev.TaskFailed) and failed.error_type == "TimeoutError"
    assert 5 <= len(chunks(sent)) <= 40
    assert [seq for seq, _ in chunks(sent)] == list(range(len(chunks(sent))))
    assert len(CLOSED) == 1  # its finally ran (a sync one in a pool thread)
    assert CLOSED[0] == "async" or CLOSED[0].startswith("task")
