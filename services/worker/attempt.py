"""One attempt running on this worker: its ordered reports, its heartbeats, its stop flag
and the pool threads its task code runs in.

The :class:`Attempt` is also what the attempt's ``TaskContext`` calls into (it is the
SDK's ``AttemptRuntime``): checkpoints, progress and the stop flag. Task code may call it
from the event loop (``async`` tasks) or from a pool thread (sync tasks); everything that
touches the loop's objects from a thread goes through ``call_soon_threadsafe`` or
``run_coroutine_threadsafe``.

Times: the worker measures only durations, on its monotonic clock (heartbeat intervals,
the attempt's timeout from when it took the dispatch). The ``at_ms`` of its reports
(its wall clock) is not kept: the coordinator replaces it with its own time as it
applies the report, and measures leases and deadlines on that one clock
(docs/architecture.md, "Time").
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

import orjson
from opentelemetry import trace

from headwater import blobs, codec
from headwater.client.http import default_url
from headwater.context import AlreadyDone, AttemptInfo, TaskContext, checkpoint_json
from headwater.core import events as ev
from headwater.errors import AttemptCancelled
from services.common.blobs.claims import Claims
from services.common.clock import now_ms
from services.worker import payloads
from services.worker.channel import ReportChannel, Send, retrieve
from services.worker.progress import ProgressReporter
from services.worker.task_logs.attempt_log import AttemptLog
from services.worker.traced_attempt import reporting_in, traced_attempt

log = logging.getLogger("headwater.worker")

T = TypeVar("T")
AttemptKey = tuple[str, str, int | None, int]
"""``(workflow_id, node, index, attempt)``: one attempt, as dispatches and cancels name it."""

MIN_HEARTBEAT_S = 0.2
"""The shortest interval between heartbeats, seconds."""
STOP_POLL_S = 0.2
"""How often a thread waiting for a checkpoint's acknowledgement checks the stop flag, s."""


def attempt_key(record: ev.TaskDispatched | ev.TaskCancelled) -> AttemptKey:
    """The attempt a dispatch or a cancel names."""
    return record.workflow_id, record.node, record.index, record.attempt


_BY_REFERENCE = (" even with its parts over HEADWATER_BLOB_THRESHOLD_BYTES stored by "
                 "reference")


class BadChunk(Exception):
    """A generator task yielded a value that cannot be streamed: not JSON or too large
    (the attempt fails without retry, since another attempt would yield the same), or
    its blob could not be stored (``retryable``)."""

    def __init__(self, message: str, error_type: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type
        self.retryable = retryable


class Attempt:
    """One attempt of a dispatch, from its ``TaskStarted`` until its threads returned.

    Args:
        dispatch: the attempt.
        send: sends one report (the outbox's ``report``).
        executor: where sync task code runs.
        max_output_bytes: largest checkpoint and chunk (JSON), bytes.
        taken_at_s: ``time.monotonic()`` when this worker took the dispatch (None: now);
            the attempt's own timeout counts from then.
        gateway_url: where the task's ``ctx.call`` submits child runs (None: the
            worker's ``HEADWATER_GATEWAY_URL``, ``headwater.client.http.default_url``).

    Attributes:
        key: ``(workflow_id, node, index, attempt)``.
        channel: the attempt's reports, in order.
        progress: coalesces ``ctx.progress`` calls into the channel.
        chunks: the values a generator task yielded so far (as sent).
        units: what task code reported it used of its rate limits
            (``ctx.report_units``), or None.
        cancelled: the coordinator cancelled the attempt (no outcome is reported).
        body: the asyncio task running the task code, once started.
        log: what its task code logs and prints (None: not captured).
        claims: where checkpoints, chunks and the output over the blob threshold go
            (``payloads``; None, the default: nothing goes by reference).
        last_checkpoint: the checkpoint the attempt resumes from, its references
            resolved once ``runner`` has prepared the attempt (what ``ctx`` gives).
    """

    def __init__(self, dispatch: ev.TaskDispatched, send: Send, executor: Executor,
                 max_output_bytes: int, taken_at_s: float | None = None, *,
                 gateway_url: str | None = None) -> None:
        self.dispatch = dispatch
        self.span: trace.Span | None = None
        self._send = send
        self.taken_at_s = time.monotonic() if taken_at_s is None else taken_at_s
        self.key = attempt_key(dispatch)
        self.loop = asyncio.get_running_loop()
        self.channel = ReportChannel(self._report)
        self.progress = ProgressReporter(self.loop, self.key, self._send_progress)
        self.executor = executor
        self.max_output_bytes = max_output_bytes
        self.gateway_url = gateway_url or default_url()
        self.claims: Claims | None = None
        self.last_checkpoint: Any = dispatch.checkpoint
        self.chunks: list[Any] = []
        self.units: int | None = None
        self.cancelled = False
        self.body: asyncio.Task[Any] | None = None
        self.log: AttemptLog | None = None
        self._stop_reason: str | None = None
        self._threads: set[Future[Any]] = set()
        self._after_threads: list[Callable[[], object]] = []

    def trace(self, headers: Sequence[tuple[str, bytes]] | None, topic: str) -> None:
        """Start the attempt's trace span (``span``; nothing while tracing is off), call
        before ``start``: a ``CONSUMER`` span ``process <topic>``, child of the context
        the dispatch record's ``traceparent`` header carries (the coordinator's apply
        that dispatched it); the attempt's reports carry the span's context, and it
        ends with ``settle`` (``traced_attempt``).

        Args:
            headers: the dispatch record's Kafka headers.
            topic: the dispatch record's topic.
        """
        self.span = traced_attempt(self.dispatch, headers, topic)
        if self.span is not None:
            self._send = reporting_in(self.span, self._send)

    async def _report(self, report: ev.Report) -> bool:
        return await self._send(report)

    # What task code sees (``headwater.context.AttemptRuntime``).

    @property
    def stop_reason(self) -> str | None:
        """Why the attempt must stop, or None while it may go on (read from any thread)."""
        return self._stop_reason

    def context(self) -> TaskContext:
        """The ``ctx`` passed to task code."""
        d = self.dispatch
        return TaskContext(AttemptInfo(d.workflow_id, d.node, d.index, d.attempt),
                           self.progress.report, last_checkpoint=self.last_checkpoint,
                           runtime=self,
                           gateway_url=self.gateway_url, span=self.span)

    def report_units(self, units: int) -> None:
        """Keep the units task code says it used of its rate limits, for its success
        (``TaskSucceeded.units``; read from any thread)."""
        self.units = units

    def checkpoint(self, state: Any) -> Awaitable[None]:
        """Send ``TaskCheckpointed(state)`` in order with the attempt's other reports.

        From the loop's thread, return at once with a future of the acknowledgement;
        from any other thread, block until it (or a stop) comes. A state over the blob
        threshold goes by reference: its blobs are stored as it waits for its turn
        among the reports, and before it is sent (a store that fails fails the
        acknowledgement, with ``payloads.BlobStoreError``).

        Raises:
            TypeError: ``state`` is not JSON.
            ValueError: its JSON is over ``max_output_bytes`` (after its large parts
                went by reference).
            AttemptCancelled: the attempt was stopped while a thread waited.
            RuntimeError: the checkpoint could not be saved (from a thread only).
        """
        data = checkpoint_json(state)
        found: dict[str, bytes] = {}
        if payloads.over(self.claims, data):
            assert self.claims is not None
            value, found = blobs.offload(orjson.loads(data), self.claims.threshold)
            data = orjson.dumps(value)
        if len(data) > self.max_output_bytes:
            raise ValueError(f"the checkpoint is {len(data)} bytes, over the limit of "
                             f"{self.max_output_bytes} (HEADWATER_MAX_OUTPUT_BYTES)"
                             + (_BY_REFERENCE if found else ""))
        # A copy: task code may change ``state`` before the report is encoded.
        report = ev.TaskCheckpointed(*self.key, now_ms(), orjson.loads(data))
        if _running_loop() is self.loop:
            return self._acknowledged(self._put_stored(report, found))
        saved = asyncio.run_coroutine_threadsafe(self._save(report, found), self.loop)
        while True:
            try:
                saved.result(STOP_POLL_S)
                return AlreadyDone()
            except TimeoutError:
                if self._stop_reason is not None:
                    raise self._cancelled_error() from None

    # Control, from the loop.

    def stop(self, reason: str) -> None:
        """Ask task code to stop (``ctx.stop_requested``); the first reason stays."""
        if self._stop_reason is None:
            self._stop_reason = reason

    def cancel(self, reason: str) -> bool:
        """Stop at the coordinator's request: cancel ``async`` task code where it awaits,
        flag sync task code. Returns False if it was already cancelled."""
        if self.cancelled:
            return False
        self.cancelled = True
        self.stop(f"cancelled ({reason})" if reason else "cancelled")
        if self.body is not None and not self.body.done():
            self.body.cancel()
        return True

    def remaining_s(self) -> float | None:
        """Seconds left of the dispatch's ``timeout_s``, counted on this worker's
        monotonic clock from when it took the dispatch (negative once spent), or None
        without a timeout.

        The dispatch's ``deadline_ms`` is the coordinator's clock, which this machine's
        may differ from by minutes: it is never compared with this one's. The
        coordinator's deadline (time on the queue included) is the one that counts;
        this timer stops the task code at the latest ``timeout_s`` after it was taken.
        """
        timeout = self.dispatch.timeout_s
        return None if timeout is None else timeout - (time.monotonic() - self.taken_at_s)

    # Threads.

    def in_thread(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``fn(*args)`` in the executor, in a copy of the caller's context (so the
        attempt's log, ``task_logs.capture.CURRENT``, follows it); :meth:`settle` waits
        for it."""
        future = self.executor.submit(contextvars.copy_context().run, fn, *args)
        self._threads.add(future)
        future.add_done_callback(self._threads.discard)
        return asyncio.wrap_future(future)

    def after_threads(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` in the executor once no thread of this attempt runs (e.g. closing a
        sync generator, which cannot happen while it runs)."""
        self._after_threads.append(fn)

    async def settle(self) -> None:
        """Wait until every thread of the attempt returned (task code that ignores a stop
        keeps its slot until then), then run what :meth:`after_threads` deferred."""
        await self._threads_done()
        if self.span is not None:
            self.span.end()
        for fn in self._after_threads:
            self.in_thread(_quietly, fn, self.dispatch.dispatch_id)
        self._after_threads.clear()
        await self._threads_done()

    # Reports.

    async def start(self, worker_id: str) -> bool:
        """Send ``TaskStarted``; True once acknowledged, False if it was dropped."""
        return await self.channel.put(ev.TaskStarted(*self.key, now_ms(), worker_id))

    async def emit(self, chunk: Any) -> None:
        """Stream one value a generator yielded, as chunk ``len(chunks)``; waits only
        while too many reports are queued.

        Raises:
            BadChunk: the value is not JSON, or its JSON is over ``max_output_bytes``.
        """
        seq = len(self.chunks)
        try:
            data = codec.json_text(chunk)
        except TypeError as e:  # orjson's JSONEncodeError is one
            raise BadChunk(f"chunk {seq} is not JSON: {e}", "TypeError") from e
        large = payloads.over(self.claims, data)
        if large:  # stored before its report is queued
            try:
                chunk = await payloads.offload(self.claims, chunk, data,
                                               self.dispatch.workflow_id)
            except payloads.BlobStoreError as e:
                raise BadChunk(f"chunk {seq}: {e}", type(e).__name__, True) from e
            data = orjson.dumps(chunk)
        if len(data) > self.max_output_bytes:
            raise BadChunk(f"chunk {seq} is {len(data)} bytes, over the limit of "
                           f"{self.max_output_bytes} (HEADWATER_MAX_OUTPUT_BYTES)"
                           + (_BY_REFERENCE if large else ""), "OutputTooLargeError")
        value = orjson.loads(data)  # a copy, as sent
        self.chunks.append(value)
        await self.channel.put_wait(ev.TaskOutputStreamed(*self.key, now_ms(), seq, value))

    async def heartbeat(self) -> None:
        """Send ``TaskHeartbeated`` whenever no report was queued or acknowledged for a
        third of the heartbeat timeout (at least ``MIN_HEARTBEAT_S``), until cancelled.
        Returns at once when the dispatch has no heartbeat timeout."""
        timeout = self.dispatch.heartbeat_timeout_s
        if timeout is None or timeout <= 0:
            return
        interval = max(MIN_HEARTBEAT_S, timeout / 3)
        while True:
            due = self.channel.last_activity + interval - time.monotonic()
            if due > 0:
                await asyncio.sleep(due)
            elif self.channel.busy:
                await asyncio.sleep(MIN_HEARTBEAT_S)  # a queued report will do as one
            else:
                self.channel.put(ev.TaskHeartbeated(*self.key, now_ms()))

    async def _send_progress(self, report: ev.TaskProgressed) -> None:
        await self.channel.put(report)

    async def _save(self, report: ev.TaskCheckpointed, found: dict[str, bytes]) -> None:
        if not await self._put_stored(report, found):
            raise self._not_saved()

    def _put_stored(self, report: ev.TaskCheckpointed,
                    found: dict[str, bytes]) -> asyncio.Future[bool]:
        """Queue ``report``; with blobs, its turn comes once they are stored (started
        now, while the reports before it are sent)."""
        if not found or self.claims is None:
            return self.channel.put(report)
        claims, wid = self.claims, self.dispatch.workflow_id

        async def stored() -> ev.Report:
            await payloads.store(claims, found, wid)
            return report

        return self.channel.put(asyncio.ensure_future(stored()))

    def _acknowledged(self, sent: asyncio.Future[bool]) -> asyncio.Future[None]:
        ack: asyncio.Future[None] = self.loop.create_future()
        ack.add_done_callback(retrieve)

        def done(f: asyncio.Future[bool]) -> None:
            if ack.done():
                return
            if f.cancelled():
                ack.cancel()
            elif f.exception() is not None:
                ack.set_exception(f.exception())  # type: ignore[arg-type]
            elif not f.result():
                ack.set_exception(self._not_saved())
            else:
                ack.set_result(None)

        sent.add_done_callback(done)
        return ack

    def _not_saved(self) -> Exception:
        if self._stop_reason is not None:
            return self._cancelled_error()
        return RuntimeError(f"the checkpoint of {self.dispatch.dispatch_id} could not be "
                            "saved (see the worker's log)")

    def _cancelled_error(self) -> AttemptCancelled:
        return AttemptCancelled(f"{self.dispatch.dispatch_id} must stop: {self._stop_reason}")

    async def _threads_done(self) -> None:
        pending = [f for f in list(self._threads) if not f.done()]
        if pending:
            await asyncio.wait([asyncio.wrap_future(f) for f in pending])


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _quietly(fn: Callable[[], object], dispatch_id: str) -> None:
    """Call ``fn`` in a pool thread; log what it raises (cleanup must not fail anything)."""
    try:
        fn()
    except BaseException:
        log.warning("cleaning up after %s failed", dispatch_id, exc_info=True)
