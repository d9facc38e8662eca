"""Calling a task function: ``async`` ones on the loop, sync ones in the attempt's pool
threads, generators streamed chunk by chunk.

A sync generator is pulled one item per pool job (``next`` in a thread, the chunk handed
back to the loop and sent at once), so that between items it holds no thread and a
timeout or a cancel stops it at the next item; it is closed in a thread once no pull
runs. An ``async`` generator is iterated on the loop and closed when it stops early.

While task code runs, ``task_logs.capture.CURRENT`` names the attempt's log, in the
body's context and in the threads it runs in: what it logs and prints is the attempt's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from headwater.sdk import TaskInfo
from services.worker.attempt import Attempt
from services.worker.task_logs.capture import CURRENT


class Raised(Exception):
    """Carries what sync task code raised in its thread back to the loop.

    Re-raising there directly would not do: ``StopIteration`` cannot be set on an asyncio
    future (the attempt would hang), and ``SystemExit`` should not travel as itself.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


async def call(info: TaskInfo, kwargs: dict[str, Any], attempt: Attempt) -> Any:
    """Call the task function and return its output.

    Returns:
        What the function returned; for a generator, the list of the chunks it yielded
        (or what a sync generator returned, if not None).

    Raises:
        Raised: sync task code raised (anything, ``BaseException`` included).
        BadChunk: a generator yielded a value that cannot be streamed.
        BaseException: whatever ``async`` task code raised.
    """
    token = CURRENT.set(attempt.log)
    try:
        return await _call(info, kwargs, attempt)
    finally:
        CURRENT.reset(token)


async def _call(info: TaskInfo, kwargs: dict[str, Any], attempt: Attempt) -> Any:
    if info.is_async_generator:
        return await _stream_async(info.fn(**kwargs), attempt)
    if info.is_async:
        return await info.fn(**kwargs)
    if info.is_generator:
        return await _stream_sync(info.fn(**kwargs), attempt)
    ok, value = await attempt.in_thread(_guarded, info.fn, kwargs)
    if not ok:
        raise Raised(value)
    return value


async def _stream_async(generator: AsyncGenerator[Any, None], attempt: Attempt) -> list[Any]:
    async with contextlib.aclosing(generator):
        async for chunk in generator:
            await attempt.emit(chunk)
    return list(attempt.chunks)


async def _stream_sync(generator: Generator[Any, None, Any], attempt: Attempt) -> Any:
    finished = False
    try:
        while True:
            ok, done, value = await attempt.in_thread(_guarded_next, generator)
            if not ok:
                finished = True  # a generator that raised is closed
                raise Raised(value)
            if done:
                finished = True
                return list(attempt.chunks) if value is None else value
            await attempt.emit(value)
    finally:
        if not finished:
            attempt.after_threads(generator.close)


def _guarded(fn: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """Run ``fn`` in a pool thread: ``(True, result)`` or ``(False, what it raised)``."""
    try:
        return True, fn(**kwargs)
    except BaseException as e:
        return False, e


def _guarded_next(generator: Generator[Any, None, Any]) -> tuple[bool, bool, Any]:
    """Pull one item in a pool thread: ``(True, False, item)``, ``(True, True, returned
    value)`` when the generator is exhausted, ``(False, False, what it raised)``."""
    try:
        return True, False, next(generator)
    except StopIteration as stop:
        return True, True, stop.value
    except BaseException as e:
        return False, False, e
