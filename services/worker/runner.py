"""Run one attempt of a registered task and say how it ended, as a report."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import orjson

from headwater import events as ev
from headwater.errors import NonRetryableError
from headwater.sdk import REGISTRY, TaskContext

log = logging.getLogger("headwater.worker")


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (workers stamp their reports)."""
    return int(time.time() * 1000)


async def run_attempt(
    dispatch: ev.TaskDispatched,
    progress: Callable[[float, str], None],
    executor: Executor | None = None,
) -> ev.TaskSucceeded | ev.TaskFailed:
    """Run ``dispatch`` and return its outcome; never raises for task errors.

    Args:
        dispatch: the attempt to run.
        progress: called (from any thread) with ``(fraction, message)``.
        executor: where sync task functions run (the loop's default pool if None).

    Returns:
        ``TaskSucceeded`` with the JSON output, or ``TaskFailed``: non-retryable for an
        unknown task, bad input keywords, a non-JSON output or ``NonRetryableError``.
    """
    base = (dispatch.workflow_id, dispatch.node, dispatch.index, dispatch.attempt)
    info = REGISTRY.get(dispatch.task)
    if info is None:
        return ev.TaskFailed(*base, now_ms(), f"no task {dispatch.task!r} is registered on this "
                             f"worker (queue {dispatch.queue}); every worker of a queue must "
                             "import the same task modules", "TaskNotFoundError", False)
    if info.queue != dispatch.queue:
        return ev.TaskFailed(*base, now_ms(), f"task {dispatch.task!r} is declared for queue "
                             f"{info.queue!r} but node {dispatch.node!r} sent it to queue "
                             f"{dispatch.queue!r}; set `queue: {info.queue}` on the node",
                             "TaskNotFoundError", False)
    kwargs = dict(dispatch.input) if isinstance(dispatch.input, dict) else {}
    if not isinstance(dispatch.input, dict | None):
        return ev.TaskFailed(*base, now_ms(), "task input must be a mapping of keyword "
                             f"arguments, got {type(dispatch.input).__name__}",
                             "TypeError", False)
    if info.wants_ctx:
        kwargs["ctx"] = TaskContext(*base[:4], dispatch.dispatch_id, progress)
    try:
        if info.is_async:
            call: Any = info.fn(**kwargs)
        else:
            loop = asyncio.get_running_loop()
            call = loop.run_in_executor(executor, functools.partial(info.fn, **kwargs))
        output = await asyncio.wait_for(call, dispatch.timeout_s) if dispatch.timeout_s \
            else await call
        orjson.dumps(output)
    except NonRetryableError as e:
        return ev.TaskFailed(*base, now_ms(), str(e), type(e).__name__, False)
    except TimeoutError:
        return ev.TaskFailed(*base, now_ms(), f"timed out after {dispatch.timeout_s} s",
                             "TimeoutError", True)
    except orjson.JSONEncodeError as e:
        return ev.TaskFailed(*base, now_ms(), f"output is not JSON: {e}", "TypeError", False)
    except Exception as e:
        log.warning("%s (%s) raised", dispatch.dispatch_id, dispatch.task, exc_info=True)
        return ev.TaskFailed(*base, now_ms(), str(e) or repr(e), type(e).__name__,
                             not _bad_call(e, info.fn))
    return ev.TaskSucceeded(*base, now_ms(), output)


def _bad_call(error: Exception, fn: Callable[..., Any]) -> bool:
    """Whether a TypeError came from calling ``fn`` with the wrong keywords (no retry helps)."""
    return isinstance(error, TypeError) and error.__traceback__ is not None and \
        error.__traceback__.tb_next is None and fn.__name__ in str(error)
