"""One attempt's log: the lines its task code logged and printed, bounded, numbered and
sent to the ``logs`` topic in batches.

Lines come from any thread (``capture``: the root logger's handler and the stdout and
stderr proxies); a batch goes out ``Limits.flush_s`` after the first line waiting, or at
once when ``Limits.batch_lines`` are waiting, always from the event loop, one batch at a
time, so lines arrive in order. :meth:`AttemptLog.close` sends what is left, and waits
until every line is acknowledged, before the attempt's outcome is reported
(``lifecycle.live``), so a reader that saw the outcome can read every line. The last
record says the log is whole: it goes with the last lines; when none are left to send,
it goes alone, and nothing can be missing for a reader of the outcome, so it is not
waited for before the outcome but before the attempt frees its slot
(:meth:`AttemptLog.sent`): one acknowledged round trip less before each outcome of an
attempt that logged nothing. Lines are numbered from 1; a batch sent twice writes the
same rows.

Bounds: a line longer than ``Limits.line_bytes`` (UTF-8) is cut, with a note of how much
was cut; past ``Limits.max_lines`` lines or ``Limits.max_bytes`` bytes in the attempt,
lines are dropped and counted, and one last line says how many.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from headwater.log_lines import LogLine, TaskLogLines
from services.common.clock import now_ms

log = logging.getLogger("headwater.worker")

AttemptKey = tuple[str, str, int | None, int]
Ship = Callable[[TaskLogLines], Awaitable[object]]
"""Sends one batch (the outbox's ``log_lines``); retried there while Kafka is away."""
STREAM_LEVELS = {"stdout": "INFO", "stderr": "ERROR"}
"""The level a printed line gets, by stream."""


@dataclass(frozen=True)
class Limits:
    """The bounds of an attempt's log (``HEADWATER_TASK_LOG_*``).

    Attributes:
        line_bytes: longest line kept whole, bytes of UTF-8; longer ones are cut.
        max_lines: most lines kept per attempt.
        max_bytes: most bytes of text kept per attempt.
        batch_lines: most lines in one record; this many waiting are sent at once.
        flush_s: how long a line waits for others before its batch is sent, seconds.
    """

    line_bytes: int = 4096
    max_lines: int = 2000
    max_bytes: int = 512 * 1024
    batch_lines: int = 200
    flush_s: float = 0.2


def cut(message: str, limit: int) -> str:
    """``message`` as a line is kept: a character UTF-8 cannot hold (a lone surrogate,
    as ``print`` of undecodable bytes gives) replaced by ``?``, so the batch it goes in
    can be encoded; if it is over ``limit`` bytes, its first ``limit`` bytes (at a
    character boundary) and a note of how many bytes were cut."""
    data = message.encode(errors="replace")
    if len(data) <= limit:
        return data.decode()
    kept = data[:limit].decode(errors="ignore")
    return f"{kept}… [cut: {len(data) - len(kept.encode())} more bytes]"


class AttemptLog:
    """The log of the attempt ``key``.

    Args:
        key: ``(workflow_id, node, index, attempt)``.
        limits: its bounds.
        ship: sends a batch.
    """

    def __init__(self, key: AttemptKey, limits: Limits, ship: Ship) -> None:
        self.key = key
        self.limits = limits
        self._ship = ship
        self._lock = threading.Lock()
        self._pending: list[LogLine] = []
        self._numbered = 0  # lines kept so far (the last one's number)
        self._shipped = 0  # lines handed to ``ship`` (or being so)
        self._bytes = 0
        self._dropped_lines = 0
        self._dropped_bytes = 0
        self._partial: dict[str, str] = {}
        self._spilled: set[str] = set()  # streams whose long line was kept without its end
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._sending = asyncio.Lock()
        self._end: asyncio.Task[object] | None = None  # the end record sent alone

    @property
    def lines(self) -> int:
        """How many lines were kept so far."""
        return self._numbered

    def start(self) -> None:
        """Send batches in the background from now on (call on the event loop)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._flusher = self._loop.create_task(self._flush_loop())

    def add(self, level: str, stream: str, logger: str, message: str,
            at_ms: int | None = None) -> None:
        """Keep one line (from any thread), within the bounds; nothing once closed."""
        with self._lock:
            if self._closed:
                return
            waiting = self._keep(level, stream, logger, message, at_ms)
        if waiting:
            self._poke()

    def write(self, stream: str, text: str) -> None:
        """Text written to ``stream`` (``stdout``, ``stderr``): each whole line is kept;
        the rest waits for its line end (or :meth:`close`), kept once it is over
        ``line_bytes`` characters long."""
        with self._lock:
            if self._closed:
                return
            spilled = stream in self._spilled
            self._spilled.discard(stream)
            *whole, rest = (self._partial.get(stream, "") + text).split("\n")
            if spilled and whole and not whole[0]:
                whole = whole[1:]  # the end of a long line kept already: no empty line
            elif spilled and not whole and not rest:
                self._spilled.add(stream)  # nothing written yet
            if len(rest) > self.limits.line_bytes:
                whole.append(rest)
                rest = ""
                self._spilled.add(stream)
            self._partial[stream] = rest
            waiting = False
            for line in whole:
                waiting = self._keep(STREAM_LEVELS[stream], stream, "", line.rstrip("\r"),
                                     None) or waiting
        if waiting:
            self._poke()

    async def close(self) -> None:
        """Keep what waits for a line end, add the line saying what was dropped, send
        every line not sent yet, and wait until each is acknowledged (call before the
        attempt's outcome is reported). The last record says the log is whole; when no
        line is left to send, it goes alone and is not waited for here: wait with
        :meth:`sent`. Lines that come later (a thread task code left running) are not
        kept."""
        with self._lock:
            if self._closed:
                return
            for stream, rest in self._partial.items():
                if rest:
                    self._keep(STREAM_LEVELS[stream], stream, "", rest, None)
            self._partial.clear()
            if self._dropped_lines:
                self._append(LogLine(now_ms(), "WARNING", "log", "headwater.worker", (
                    f"{self._dropped_lines} more lines ({self._dropped_bytes} bytes) "
                    f"dropped: the attempt's log keeps {self.limits.max_lines} lines and "
                    f"{self.limits.max_bytes} bytes at most (HEADWATER_TASK_LOG_MAX_LINES, "
                    "HEADWATER_TASK_LOG_MAX_BYTES)")))
            self._closed = True
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        async with self._sending:  # after a batch on its way is acknowledged
            batch, first = self._take()
            if batch:
                await self._send(batch, first, last=True)
                return
        self._end = asyncio.ensure_future(self._ship(TaskLogLines(*self.key, first, (), True)))

    async def sent(self) -> None:
        """Wait until the record saying the log is whole, if :meth:`close` sent it
        alone, is acknowledged (call before the attempt frees its slot, so that it is
        never dropped). Cancelling the wait does not stop the sending: a worker stopping
        at once still sends it as its producer closes.

        Raises:
            Exception: what sending it raised.
        """
        if self._end is not None:
            await asyncio.shield(self._end)

    async def flush(self) -> None:
        """Send the lines waiting, ``batch_lines`` a record, in order."""
        async with self._sending:
            batch, first = self._take()
            await self._send(batch, first, last=False)

    def _take(self) -> tuple[list[LogLine], int]:
        """The lines waiting, now counted as shipped, and the first one's number."""
        with self._lock:
            batch, first = self._pending, self._shipped + 1
            self._pending = []
            self._shipped += len(batch)
        return batch, first

    async def _send(self, batch: list[LogLine], first: int, last: bool) -> None:
        """Ship ``batch`` (its first line numbered ``first``), ``batch_lines`` a record,
        in order, each acknowledged before the next; with ``last``, the last record says
        the log is whole. Call holding ``_sending``."""
        size = self.limits.batch_lines
        starts = range(0, len(batch), size)
        for start in starts:
            await self._ship(TaskLogLines(*self.key, first + start,
                                          tuple(batch[start:start + size]),
                                          last and start == starts[-1]))

    def _keep(self, level: str, stream: str, logger: str, message: str,
              at_ms: int | None) -> bool:
        """Number and keep a line, or count it dropped (the lock held). Returns whether
        a batch should be sent soon."""
        kept = cut(message, self.limits.line_bytes)
        size = len(kept.encode(errors="replace"))
        if (self._numbered >= self.limits.max_lines
                or self._bytes + size > self.limits.max_bytes):
            self._dropped_lines += 1
            self._dropped_bytes += len(message.encode(errors="replace"))
            return False
        message = kept
        self._bytes += size
        self._append(LogLine(now_ms() if at_ms is None else at_ms, level, stream, logger,
                             message))
        return True

    def _append(self, line: LogLine) -> None:
        self._numbered += 1
        self._pending.append(line)

    def _poke(self) -> None:
        """Wake the flusher (from any thread)."""
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            wake.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(wake.set)

    async def _flush_loop(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            if len(self._pending) < self.limits.batch_lines:
                await asyncio.sleep(self.limits.flush_s)
            try:
                # Shielded: ``close`` cancels this loop, which must not stop a flush
                # between two of its records (the rest of its lines would be lost, yet
                # the last record would say the log is whole); ``close``'s own flush
                # waits for it on ``_sending``.
                await asyncio.shield(self.flush())
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("could not send log lines of %s/%s attempt %d: %s: %s",
                            self.key[0], self.key[1], self.key[3], type(e).__name__, e)
