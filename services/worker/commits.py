"""A worker's offset commits, off its poll loop: coalesced, one in flight at a time, and
at most one every ``COMMIT_INTERVAL_S``.

A record that needs no redelivery any more (``Intake.committable``) only asks for a commit
(:meth:`Committer.soon`); a background task commits whatever is committable by then, in
one ``OffsetCommit`` request, and waits out the interval before the next. The poll loop
never waits for a commit. Which offsets may be committed does not change (``intake``,
``offsets``): only what follows records whose ``TaskStarted`` was acknowledged, or that
were skipped or dead-lettered.

The worker still commits at once, and waits for it, where it must: before its partitions
are revoked (``intake._Rebalance``), before it leaves its group (``Intake.leave``) and as
it stops (``Worker.serve``). Those commits and the background ones are serialized
(``Intake.commit``), so a commit never overtakes a later one.

The cost: a worker that dies may have acknowledged starts whose offsets wait for the next
commit, up to ``COMMIT_INTERVAL_S`` longer than before; their dispatches are delivered again
to the partitions' next owners (at least once, as for a start not acknowledged yet).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

log = logging.getLogger("headwater.worker")

COMMIT_INTERVAL_S = 0.1
"""Least time between the starts of two background commits, seconds. The poll loop used
to commit after each poll, every ``POLL_MS`` (100 ms) while idle, so an idle worker's
redelivery window is unchanged; under load, where it committed once per freed slot, a
worker now sends at most 10 ``OffsetCommit`` requests a second, and a crash delivers
again at most 0.1 s more of started dispatches."""


class Committer:
    """Runs ``commit`` in the background when asked, coalescing the asks.

    Args:
        commit: commits what is committable; never raises a Kafka error
            (``Intake.commit``).
        interval_s: least time between the starts of two commits, seconds (default:
            ``COMMIT_INTERVAL_S``).
    """

    def __init__(self, commit: Callable[[], Awaitable[None]],
                 interval_s: float | None = None) -> None:
        self.commit = commit
        self.interval_s = COMMIT_INTERVAL_S if interval_s is None else interval_s
        self.started = 0
        """Commits started in the background so far."""
        self._due = asyncio.Event()
        self._closing = asyncio.Event()

    def soon(self) -> None:
        """Ask for a commit: the next background one, within ``interval_s`` of the last
        one's start (one commit answers every ask made before it began)."""
        self._due.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Commit in the background meanwhile. On leaving, a commit under way ends (it is
        not cancelled, unless leaving is); asks not answered yet are left to the caller's
        own last commit."""
        self._closing.clear()
        task = asyncio.create_task(self._run())
        try:
            yield
        finally:
            self._closing.set()
            self._due.set()
            try:
                await task
            finally:
                task.cancel()  # only if leaving was cancelled meanwhile

    async def _run(self) -> None:
        while True:
            await self._due.wait()
            if self._closing.is_set():
                return
            self._due.clear()  # asks from now on need another commit
            began = time.monotonic()
            self.started += 1
            try:
                await self.commit()
            except Exception:
                log.exception("committing offsets failed; they are committed later, "
                              "or delivered again")
            rest = self.interval_s - (time.monotonic() - began)
            if rest > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(rest):
                        await self._closing.wait()
