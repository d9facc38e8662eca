"""Progress reports from task code (any thread) to the attempt's report channel, at most
one per interval."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from headwater.core import events as ev
from services.common.clock import now_ms
from services.worker.reports import clean_text

MIN_INTERVAL_S = 0.1

log = logging.getLogger("headwater.worker")


class ProgressReporter:
    """Coalesces ``ctx.progress`` calls: the first goes out at once, then at most one per
    ``MIN_INTERVAL_S``, and the last one is never dropped.

    Args:
        loop: the worker's event loop (reports are sent from it).
        base: ``(workflow_id, node, index, attempt)`` of the attempt.
        send: sends one report (into the attempt's channel); a progress report that
            cannot be sent is dropped (logged).
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, base: tuple[str, str, int | None, int],
        send: Callable[[ev.TaskProgressed], Awaitable[None]],
    ) -> None:
        self.loop = loop
        self.base = base
        self.send = send
        self._pending: tuple[float, str] | None = None
        self._last_sent = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False

    def report(self, fraction: float, message: str) -> None:
        """Called by task code, from the loop thread or a worker thread.

        Args:
            fraction: done so far, in [0, 1].
            message: any string; made valid UTF-8 and cut to a few KiB here, since a
                lone surrogate (``"\\ud800"``) cannot be encoded into a report.
        """
        self.loop.call_soon_threadsafe(self._queue, fraction, clean_text(str(message)))

    def _queue(self, fraction: float, message: str) -> None:
        if self._closed:
            return
        self._pending = (fraction, message)
        if self._flusher is None or self._flusher.done():
            self._flusher = self.loop.create_task(self._flush())

    async def _flush(self) -> None:
        while self._pending is not None:
            wait = self._last_sent + MIN_INTERVAL_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            fraction, message = self._pending
            self._pending = None
            self._last_sent = time.monotonic()
            try:
                await self.send(ev.TaskProgressed(*self.base, now_ms(),
                                                  fraction, message))
            except Exception:  # progress only informs: never fail the attempt for it
                log.warning("dropped a progress report of %s", self.base, exc_info=True)

    async def drain(self) -> None:
        """Wait until the last progress report is sent (before the outcome report)."""
        await asyncio.sleep(0)  # let call_soon_threadsafe callbacks run
        if self._flusher is not None:
            await self._flusher

    def close(self) -> None:
        """Drop what is pending and stop sending (the attempt was cancelled or stopped)."""
        self._closed = True
        self._pending = None
        if self._flusher is not None:
            self._flusher.cancel()
