"""Run one attempt of a registered task and say how it ended, as a report.

Whatever task code does (raise any exception, ``SystemExit`` or ``KeyboardInterrupt``
included, return or yield something that is not JSON) ends as a ``TaskSucceeded`` or a
``TaskFailed``: the worker must survive its tasks. Only the cancellation of the attempt's
asyncio task goes through (the coordinator cancelled the attempt, or the worker is
stopping); the caller tells which.

The attempt times out ``timeout_s`` after this worker took its dispatch, by the worker's
monotonic clock (``Attempt.remaining_s``). The coordinator's deadline, counted from the
dispatch on its own clock (time on the queue included), is the one that fails the
attempt; the worker never compares that time with its own wall clock, which may be
minutes off.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from headwater import codec
from headwater.core import events as ev
from headwater.errors import NonRetryableError, TaskNotFoundError
from headwater.sdk import REGISTRY, TaskInfo
from headwater.workflows.instances import ACTIVATION_MARK, continued
from services.common.clock import now_ms
from services.worker import payloads
from services.worker.attempt import Attempt, BadChunk
from services.worker.calls import Raised, call
from services.worker.tracebacks import format_traceback

__all__ = ["bad_arguments", "continuation_ms", "run_attempt"]

log = logging.getLogger("headwater.worker")


async def run_attempt(attempt: Attempt) -> ev.TaskSucceeded | ev.TaskFailed:
    """Run ``attempt`` and return its outcome; never raises for what task code does.

    Every failed attempt is logged once, as a warning with the traceback if there is one.

    Args:
        attempt: the attempt to run (its dispatch, threads and reports).

    Returns:
        ``TaskSucceeded`` with the output, or ``TaskFailed``: non-retryable for an
        unknown task, input that does not fit the function's parameters, a non-JSON
        output or chunk, a chunk over the size limit and ``NonRetryableError``;
        retryable for anything else task code raises, ``BaseException`` included
        (``error_type`` is its class name), and for a timeout (``TimeoutError``).

    Raises:
        asyncio.CancelledError: this asyncio task was cancelled (the attempt was
            cancelled, or the worker is stopping).
    """
    prepared = await _prepare(attempt)
    if isinstance(prepared, ev.TaskFailed):
        return prepared
    info, kwargs = prepared
    return await _call(attempt, info, kwargs)


async def _prepare(attempt: Attempt) -> tuple[TaskInfo, dict[str, Any]] | ev.TaskFailed:
    """The registered task and the keyword arguments to call it with (``ctx`` included
    when it wants one), its input and the checkpoint it resumes from with every value
    passed by reference resolved (``payloads``); or the ``TaskFailed`` saying why it
    cannot run (retryable for a blob that could not be fetched, else not: a path a
    blob's value has not among them)."""
    dispatch = attempt.dispatch
    info = REGISTRY.get(dispatch.task)
    if info is None:
        return _failed(dispatch, f"no task {dispatch.task!r} is registered on this worker "
                       f"(queue {dispatch.queue}); every worker of a queue must import the "
                       "same task modules, and a node without `queue:` runs on "
                       f"{dispatch.queue!r} unless the gateway placed it (a submission "
                       "produced to Kafka is not placed: name the node's queue)",
                       TaskNotFoundError.__name__, False)
    if info.queue != dispatch.queue:
        return _failed(dispatch, f"task {dispatch.task!r} is declared for queue "
                       f"{info.queue!r} but node {dispatch.node!r} sent it to queue "
                       f"{dispatch.queue!r}; set `queue: {info.queue}` on the node",
                       TaskNotFoundError.__name__, False)
    try:
        given = await payloads.resolve(attempt.claims, dispatch.input)
        attempt.last_checkpoint = await payloads.resolve(attempt.claims, dispatch.checkpoint)
    except (payloads.BlobStoreError, payloads.PathMissingError) as e:
        gone = isinstance(e, payloads.PathMissingError)  # a path: for good, as inline
        return _failed(dispatch, f"the task's input could not be resolved: {e}",
                       payloads.PathMissingError.error_type if gone else type(e).__name__,
                       not gone)
    if not isinstance(given, dict | None):
        return _failed(dispatch, "task input must be a mapping of keyword arguments, got "
                       f"{type(given).__name__}", "TypeError", False)
    kwargs = dict(given or {})
    if info.wants_ctx:
        kwargs["ctx"] = attempt.context()
    bad = bad_arguments(info, kwargs)
    if bad is not None:
        return _failed(dispatch, bad, "TypeError", False)
    return info, kwargs


async def _call(attempt: Attempt, info: TaskInfo,
                kwargs: dict[str, Any]) -> ev.TaskSucceeded | ev.TaskFailed:
    """Call the task code until its timeout (``Attempt.remaining_s``) and turn how it
    ended into a report (see ``run_attempt``).

    Raises:
        asyncio.CancelledError: this asyncio task was cancelled.
    """
    dispatch = attempt.dispatch
    timer = asyncio.timeout(attempt.remaining_s())
    try:
        async with timer:
            output = await call(info, kwargs, attempt)
    except asyncio.CancelledError as e:
        if _stopping():
            raise
        return _raised(dispatch, e)  # task code's own CancelledError: a failed attempt
    except TimeoutError as e:  # the deadline's, or one task code raised
        return _timed_out(attempt) if timer.expired() else _raised(dispatch, e)
    except Raised as e:
        return _raised(dispatch, e.error)
    except BadChunk as e:
        return _failed(dispatch, e.message, e.error_type, e.retryable)
    except BaseException as e:  # the worker outlives its tasks: SystemExit included
        return _raised(dispatch, e)
    return await _succeeded(attempt, info, output)


def _timed_out(attempt: Attempt) -> ev.TaskFailed:
    """Stop the attempt at its deadline; the retryable ``TaskFailed`` that says so."""
    dispatch = attempt.dispatch
    attempt.stop(f"timed out after {dispatch.timeout_s} s")
    return _failed(dispatch, f"timed out after {dispatch.timeout_s} s", "TimeoutError", True)


async def _succeeded(attempt: Attempt, info: TaskInfo,
                     output: Any) -> ev.TaskSucceeded | ev.TaskFailed:
    """``TaskSucceeded`` with ``output``, or a non-retryable ``TaskFailed`` if it is not
    JSON (checked apart from the call: task code's own ``TypeError`` is not this). A
    step of a code workflow whose instance this worker keeps carries the function's
    next decision (``headwater.workflows.instances.continued``), at
    ``continuation_ms``: the function is given the real output, as a replay would be.

    The output's large parts (an activation's: its decision's values) and the
    continuation's go by reference (``payloads``), stored before the report is made;
    a store that fails makes the attempt a retryable ``TaskFailed``."""
    dispatch = attempt.dispatch
    try:
        data = codec.json_text(output)
    except TypeError as e:  # orjson's JSONEncodeError is one
        return _failed(dispatch, f"output is not JSON: {e}", "TypeError", False)
    following = continued(dispatch.workflow_id, dispatch.node, dispatch.index, output,
                          continuation_ms(attempt))
    try:
        if getattr(info.fn, ACTIVATION_MARK, False):
            output = await payloads.offload_decision(attempt.claims, output, data,
                                                     dispatch.workflow_id)
        else:
            output = await payloads.offload(attempt.claims, output, data,
                                             dispatch.workflow_id)
        if following is not None:
            following["decision"] = await payloads.offload_decision(
                attempt.claims, following["decision"], None, dispatch.workflow_id)
    except payloads.BlobStoreError as e:
        return _failed(dispatch, f"the output could not be stored by reference: {e}",
                       type(e).__name__, True)
    return ev.TaskSucceeded(dispatch.workflow_id, dispatch.node, dispatch.index,
                            dispatch.attempt, now_ms(), output, following, attempt.units)


def continuation_ms(attempt: Attempt) -> int:
    """The time of the activation a continuation runs (what ``wf.now()`` returns in it,
    recorded as its dispatch's): the step's dispatch time, on the coordinator's clock,
    plus how long this worker has held the dispatch, on its monotonic one. Not this
    machine's wall clock: the coordinator takes the continuation only at a time not
    after its own, and a clock minutes ahead would have every continuation ignored
    (and the instance, gone ahead, replayed at each activation), one minutes behind
    would give each continued activation the time of the one before it (``wf.now()``
    standing still while steps go on)."""
    held_ms = max(0, round((time.monotonic() - attempt.taken_at_s) * 1000))
    return attempt.dispatch.at_ms + held_ms


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


def _stopping() -> bool:
    """Whether the current asyncio task was asked to cancel (the attempt was cancelled or
    the worker is stopping), rather than task code raising ``CancelledError`` itself."""
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
    """A ``TaskFailed`` for ``dispatch``, logged as one warning (with ``exc``'s traceback).

    The report carries ``exc``'s traceback as ``tracebacks.format_traceback`` gives it
    (task code's frames first, bounded); "" for a failure the worker decided itself
    (no such task, bad input, a timeout, an output or chunk it cannot send).
    """
    log.warning("%s (%s) failed%s: %s: %s", dispatch.dispatch_id, dispatch.task,
                "" if retryable else " without retry", error_type, error, exc_info=exc)
    return ev.TaskFailed(dispatch.workflow_id, dispatch.node, dispatch.index,
                         dispatch.attempt, now_ms(), error, error_type, retryable,
                         format_traceback(exc) if exc is not None else "")
