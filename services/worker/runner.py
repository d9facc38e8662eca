"""Run one attempt of a registered task and say how it ended, as a report.

Whatever task code does (raise any exception, ``SystemExit`` or ``KeyboardInterrupt``
included, return something that is not JSON) ends as a ``TaskSucceeded`` or a
``TaskFailed``: the worker must survive its tasks. Only the worker's own cancellation
(it is stopping) goes through.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import orjson

from headwater import events as ev
from headwater.errors import NonRetryableError, TaskNotFoundError
from headwater.sdk import REGISTRY, TaskContext, TaskInfo

log = logging.getLogger("headwater.worker")


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (workers stamp their reports)."""
    return int(time.time() * 1000)


class _Raised(Exception):
    """Carries what a sync task function raised in its thread back to the loop.

    Re-raising there directly would not do: ``StopIteration`` cannot be set on an asyncio
    future (the attempt would hang), and ``SystemExit`` should not travel as itself.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


async def run_attempt(
    dispatch: ev.TaskDispatched,
    progress: Callable[[float, str], None],
    executor: Executor | None = None,
) -> ev.TaskSucceeded | ev.TaskFailed:
    """Run ``dispatch`` and return its outcome; never raises for what task code does.

    Every failed attempt is logged once, as a warning with the traceback if there is one.

    Args:
        dispatch: the attempt to run.
        progress: called (from any thread) with ``(fraction, message)``.
        executor: where sync task functions run (the loop's default pool if None).

    Returns:
        ``TaskSucceeded`` with the output, or ``TaskFailed``: non-retryable for an
        unknown task, input that does not fit the function's parameters, a non-JSON
        output or ``NonRetryableError``; retryable for anything else task code raises,
        ``BaseException`` included (``error_type`` is its class name), and for a timeout.

    Raises:
        asyncio.CancelledError: the worker is stopping (this task was cancelled).
    """
    info = REGISTRY.get(dispatch.task)
    if info is None:
        return _failed(dispatch, f"no task {dispatch.task!r} is registered on this worker "
                       f"(queue {dispatch.queue}); every worker of a queue must import the "
                       "same task modules", TaskNotFoundError.__name__, False)
    if info.queue != dispatch.queue:
        return _failed(dispatch, f"task {dispatch.task!r} is declared for queue "
                       f"{info.queue!r} but node {dispatch.node!r} sent it to queue "
                       f"{dispatch.queue!r}; set `queue: {info.queue}` on the node",
                       TaskNotFoundError.__name__, False)
    if not isinstance(dispatch.input, dict | None):
        return _failed(dispatch, "task input must be a mapping of keyword arguments, got "
                       f"{type(dispatch.input).__name__}", "TypeError", False)
    kwargs = dict(dispatch.input or {})
    if info.wants_ctx:
        kwargs["ctx"] = TaskContext(dispatch.workflow_id, dispatch.node, dispatch.index,
                                    dispatch.attempt, dispatch.dispatch_id, progress)
    bad = bad_arguments(info, kwargs)
    if bad is not None:
        return _failed(dispatch, bad, "TypeError", False)
    timer = asyncio.timeout(dispatch.timeout_s or None)
    try:
        async with timer:
            output = await _call(info, kwargs, executor)
    except asyncio.CancelledError as e:
        if _stopping():
            raise
        return _raised(dispatch, e)  # task code's own CancelledError: a failed attempt
    except TimeoutError as e:
        if timer.expired():
            return _failed(dispatch, f"timed out after {dispatch.timeout_s} s",
                           "TimeoutError", True)
        return _raised(dispatch, e)
    except _Raised as e:
        return _raised(dispatch, e.error)
    except BaseException as e:  # the worker outlives its tasks: SystemExit included
        return _raised(dispatch, e)
    try:
        orjson.dumps(output)  # outside the try above: task code's TypeErrors are not this
    except orjson.JSONEncodeError as e:
        return _failed(dispatch, f"output is not JSON: {e}", "TypeError", False)
    return ev.TaskSucceeded(dispatch.workflow_id, dispatch.node, dispatch.index,
                            dispatch.attempt, now_ms(), output)


def bad_arguments(info: TaskInfo, kwargs: dict[str, Any]) -> str | None:
    """Why ``info.fn`` cannot be called with ``kwargs``, or None if it can.

    Checked with ``inspect.signature(...).bind`` before the call, so that a ``TypeError``
    raised inside task code is never mistaken for bad input.

    Returns:
        A message naming the task, the function with its parameters, and what is
        missing or unexpected; None when the call fits (or the function has no signature).
    """
    signature = _signature(info.fn)
    if signature is None:
        return None  # e.g. some builtins: let the call itself tell
    try:
        signature.bind(**kwargs)
    except TypeError as e:
        given = ", ".join(sorted(k for k in kwargs if k != "ctx")) or "none"
        return (f"task {info.name!r} cannot be called with its input: {e} (function "
                f"{info.fn.__module__}.{info.fn.__qualname__}{signature}; input keys: "
                f"{given})")
    return None


@functools.cache
def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


async def _call(info: TaskInfo, kwargs: dict[str, Any], executor: Executor | None) -> Any:
    """Call the task function: ``async`` ones on this loop, sync ones in ``executor``.

    Raises:
        _Raised: a sync function raised (anything, ``BaseException`` included).
        BaseException: whatever an async function raised.
    """
    if info.is_async:
        return await info.fn(**kwargs)
    loop = asyncio.get_running_loop()
    ok, value = await loop.run_in_executor(executor, _guarded, info.fn, kwargs)
    if not ok:
        raise _Raised(value)
    return value


def _guarded(fn: Callable[..., Any], kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """Run ``fn`` in a pool thread: ``(True, result)`` or ``(False, what it raised)``."""
    try:
        return True, fn(**kwargs)
    except BaseException as e:
        return False, e


def _stopping() -> bool:
    """Whether the current task was asked to cancel (the worker is stopping)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _raised(dispatch: ev.TaskDispatched, error: BaseException) -> ev.TaskFailed:
    retryable = not isinstance(error, NonRetryableError)
    return _failed(dispatch, _describe(error), type(error).__name__, retryable, error)


def _describe(error: BaseException) -> str:
    """The exception's message, else its repr, else its class name (``str`` may raise)."""
    try:
        return str(error) or repr(error)
    except Exception:
        return type(error).__name__


def _failed(dispatch: ev.TaskDispatched, error: str, error_type: str, retryable: bool,
            exc: BaseException | None = None) -> ev.TaskFailed:
    """A ``TaskFailed`` for ``dispatch``, logged as one warning (with ``exc``'s traceback)."""
    log.warning("%s (%s) failed%s: %s: %s", dispatch.dispatch_id, dispatch.task,
                "" if retryable else " without retry", error_type, error, exc_info=exc)
    return ev.TaskFailed(dispatch.workflow_id, dispatch.node, dispatch.index,
                         dispatch.attempt, now_ms(), error, error_type, retryable)
