"""One attempt's reports, sent in the order they were made, one at a time.

An attempt's reports come from several places at once: the lifecycle (``TaskStarted``,
the outcome), the heartbeat loop, task code (progress, checkpoints) and the generator
driver (chunks). The coordinator must see them in the order they were made (a checkpoint
before the outcome, chunk 3 before chunk 4), and the outbox retries a record until it is
acknowledged, so the channel sends the next report only once the previous one is.
A report may be queued before it is made (a checkpoint whose blobs are being stored):
its place is kept, and it is sent once made.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable
from typing import Any

from headwater.core import events as ev

MAX_QUEUED = 256
"""Reports queued before :meth:`ReportChannel.put_wait` makes its caller wait (a generator
yielding faster than Kafka acknowledges)."""

Send = Callable[[ev.Report], Awaitable[bool]]
"""Sends one report and waits: True once acknowledged, False when dropped for good."""
Queued = ev.Report | asyncio.Future[ev.Report]
"""A report, or one still being made (sent once the future is done; its exception is
the put's)."""


def retrieve(future: asyncio.Future[Any]) -> None:
    """Done callback marking a future's exception as seen: nobody has to await it, and an
    unawaited failure must not log "exception was never retrieved"."""
    if not future.cancelled():
        future.exception()


class ReportChannel:
    """Sends one attempt's reports in order; use from the event loop's thread only.

    Args:
        send: sends one report (the outbox), True once acknowledged, False if dropped.
        max_queued: reports queued before :meth:`put_wait` waits.

    Attributes:
        last_activity: ``time.monotonic()`` of the last report queued or acknowledged.
    """

    def __init__(self, send: Send, max_queued: int = MAX_QUEUED) -> None:
        self._send = send
        self._max_queued = max_queued
        self._queue: collections.deque[tuple[Queued, asyncio.Future[bool]]] = (
            collections.deque())
        self._room = asyncio.Event()
        self._room.set()
        self._sender: asyncio.Task[None] | None = None
        self._in_flight = False
        self.closed = False
        self.last_activity = time.monotonic()

    @property
    def busy(self) -> bool:
        """Whether a report is queued or being sent."""
        return bool(self._queue) or self._in_flight

    def put(self, report: Queued) -> asyncio.Future[bool]:
        """Queue ``report`` (or a future of it) behind the ones already queued.

        Returns:
            A future: True once Kafka acknowledged the report (or what stands in for
            it), False if it was dropped or the channel was closed first; the send's
            exception if not even a stand-in could be sent. Awaiting it is optional.
        """
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        future.add_done_callback(retrieve)
        if isinstance(report, asyncio.Future):
            report.add_done_callback(retrieve)  # one dropped unsent is not awaited
        if self.closed:
            future.set_result(False)
            return future
        self._queue.append((report, future))
        self.last_activity = time.monotonic()
        if len(self._queue) >= self._max_queued:
            self._room.clear()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._drain())
        return future

    async def put_wait(self, report: Queued) -> asyncio.Future[bool]:
        """Like :meth:`put`, but first wait while ``max_queued`` reports are queued."""
        while not self._room.is_set() and not self.closed:
            await self._room.wait()
        return self.put(report)

    async def close(self) -> None:
        """Refuse further reports and wait until the queued ones are sent."""
        self.closed = True
        if self._sender is not None:
            await asyncio.wait([self._sender])

    def abort(self) -> None:
        """Refuse further reports, stop sending, and resolve what is queued as dropped."""
        self.closed = True
        if self._sender is not None:
            self._sender.cancel()
        self._drop_queued()

    async def _drain(self) -> None:
        try:
            while self._queue:
                report, future = self._queue.popleft()
                if len(self._queue) < self._max_queued:
                    self._room.set()
                self._in_flight = True
                try:
                    if isinstance(report, asyncio.Future):
                        report = await report
                    sent = await self._send(report)
                except asyncio.CancelledError:
                    if not future.done():
                        future.set_result(False)
                    raise
                except Exception as e:
                    if not future.done():
                        future.set_exception(e)
                else:
                    if not future.done():
                        future.set_result(sent)
                finally:
                    self._in_flight = False
                    self.last_activity = time.monotonic()
        finally:
            self._drop_queued()  # only left when cancelled (aborted)

    def _drop_queued(self) -> None:
        while self._queue:
            _, future = self._queue.popleft()
            if not future.done():
                future.set_result(False)
        self._room.set()
