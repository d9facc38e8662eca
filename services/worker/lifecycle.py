"""The life of one attempt on a worker: started, run with heartbeats, reported, settled.

Lease model (as in Temporal): once the broker has acknowledged the attempt's
``TaskStarted``, its dispatch's offset may be committed, and keeping the attempt alive is
the coordinator's business. The worker heartbeats while the attempt runs; if the worker
dies, the coordinator fails the attempt after its heartbeat timeout and dispatches the
next attempt; Kafka never delivers the dispatch again. Before that acknowledgement,
Kafka's redelivery still covers a worker that dies.

A cancelled attempt (``TaskCancelled`` from the coordinator) ends without an outcome
report. A draining worker (``drain``) lets its attempts run to their end; when it stops
them (at the end of the drain window, or at once on a second signal), a started attempt
is reported as a retryable ``TaskFailed`` (``WorkerStopped``), best effort, so that it is
retried at once rather than after its heartbeat timeout.

The attempt's log (``task_logs``) is sent whole before its outcome: a reader that saw the
outcome finds every line. Only the record saying the log is whole, when it goes without
lines, is not waited for before the outcome, but before the attempt ends here (and frees
its slot). The worker's own log has one line as an attempt starts and one
as it ends (INFO: dispatch id, task, outcome, duration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from headwater.core import events as ev
from headwater.workflows.activation import REPLAYED
from headwater.workflows.decorator import WorkflowInfo
from services.common import faults
from services.common.clock import now_ms
from services.worker import metrics
from services.worker.attempt import Attempt
from services.worker.runner import run_attempt

log = logging.getLogger("headwater.worker")


def _replaying(info: WorkflowInfo, activation: int) -> None:
    """The fault point of a replay: an activation without the run's cached instance
    re-ran earlier activation ``activation`` of ``info``'s function."""
    faults.point("worker.replaying", info.name)


REPLAYED.append(_replaying)  # once, as the worker's modules are imported

STOP_GRACE_S = 3.0
"""How long a stopping worker waits for a cancelled body, and then for its
``WorkerStopped`` report, seconds each."""


async def live(attempt: Attempt, worker_id: str, committable: Callable[[], None]) -> None:
    """Run ``attempt`` from its ``TaskStarted`` until its last thread returned.

    Args:
        attempt: the attempt, not started yet.
        worker_id: this worker's name, in ``TaskStarted``.
        committable: called once the dispatch needs no redelivery: when ``TaskStarted``
            is acknowledged; failing that, when the outcome is, or when the attempt is
            cancelled.

    Raises:
        asyncio.CancelledError: the worker is stopping.
        Exception: the outcome could not be sent, not even a stand-in for it.
    """
    acked = ended = stopping = False
    if attempt.log is not None:
        attempt.log.start()
    try:
        acked = await attempt.start(worker_id)
        task = attempt.dispatch.task
        if acked:
            committable()
            faults.point("worker.after_start", task)
        outcome = None if attempt.stop_reason is not None else await _run(attempt)
        ended = True
        attempt.stop("the attempt has ended")  # task code still calling ctx gets told
        await close_log(attempt)  # every line acknowledged; perhaps not the log's end
        if attempt.cancelled or outcome is None:
            attempt.progress.close()
            if not acked:
                committable()
        else:
            faults.point("worker.before_outcome", task)
            await attempt.progress.drain()
            reported = await attempt.channel.put(outcome)
            if reported:
                faults.point("worker.after_outcome", task)
            if reported and not acked:
                committable()
        await attempt.channel.close()
        await attempt.settle()
    except asyncio.CancelledError:
        stopping = True
        await _worker_stopping(attempt, report=acked and not ended)
        raise
    finally:
        await log_sent(attempt, STOP_GRACE_S if stopping else None)


async def close_log(attempt: Attempt) -> None:
    """Send what is left of the attempt's log (best effort: a log that cannot be sent
    never holds the outcome back). Every line is acknowledged on return; the record
    saying the log is whole may still be on its way (:func:`log_sent`)."""
    if attempt.log is None:
        return
    try:
        await attempt.log.close()
    except Exception as e:
        log.warning("could not send the last log lines of %s: %s: %s",
                    attempt.dispatch.dispatch_id, type(e).__name__, e)


async def log_sent(attempt: Attempt, timeout_s: float | None = None) -> None:
    """Wait until the record saying the attempt's log is whole is acknowledged, if it
    went alone after the lines (best effort: logged if it fails, or is not acknowledged
    within ``timeout_s``)."""
    if attempt.log is None:
        return
    try:
        async with asyncio.timeout(timeout_s):
            await attempt.log.sent()
    except Exception as e:
        log.warning("could not send the end of the log of %s: %s: %s",
                    attempt.dispatch.dispatch_id, type(e).__name__, e)


def _ended(attempt: Attempt, outcome: ev.TaskSucceeded | ev.TaskFailed | None,
           seconds: float) -> None:
    """The worker's line saying how an attempt ended."""
    d = attempt.dispatch
    if outcome is None:
        how = "cancelled"
    elif isinstance(outcome, ev.TaskSucceeded):
        how = "succeeded"
    else:
        how = f"failed ({outcome.error_type})"
    lines = f", {attempt.log.lines} log lines" if attempt.log is not None else ""
    log.info("ended %s (%s): %s after %.3f s%s", d.dispatch_id, d.task, how, seconds, lines)


async def _run(attempt: Attempt) -> ev.TaskSucceeded | ev.TaskFailed | None:
    """Run the task code in its own asyncio task (``attempt.body``, which ``cancel``
    cancels) while heartbeating; None if the attempt was cancelled."""
    began_s = time.monotonic()
    d = attempt.dispatch
    log.info("started %s (%s)", d.dispatch_id, d.task)
    body = asyncio.create_task(run_attempt(attempt))
    attempt.body = body
    beats = asyncio.create_task(attempt.heartbeat())
    try:
        await asyncio.wait([body])
    finally:
        beats.cancel()
    outcome = None if body.cancelled() else body.result()
    seconds = time.monotonic() - began_s
    metrics.attempt_ran(attempt.dispatch.queue, attempt.dispatch.task, outcome, seconds)
    _ended(attempt, outcome, seconds)
    return outcome


async def _worker_stopping(attempt: Attempt, report: bool) -> None:
    """Stop the attempt's task code; with ``report`` (it started and has no outcome yet),
    report it as failed, best effort."""
    attempt.stop("the worker is stopping")
    attempt.progress.close()
    body = attempt.body
    if body is not None and not body.done():
        body.cancel()
        await asyncio.wait([body], timeout=STOP_GRACE_S)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(STOP_GRACE_S):
            await close_log(attempt)
    if report and not attempt.cancelled:
        d = attempt.dispatch
        failed = ev.TaskFailed(d.workflow_id, d.node, d.index, d.attempt, now_ms(),
                               "the worker running the attempt stopped", "WorkerStopped",
                               True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(attempt.channel.put(failed), STOP_GRACE_S)
    attempt.channel.abort()
    log.info("%s (%s) stopped with the worker", attempt.dispatch.dispatch_id,
             attempt.dispatch.task)
