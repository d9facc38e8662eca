"""Finish a unit of work even when the task awaiting it is cancelled.

A coordinator batch (publish, then write the snapshots) and a projector batch (write the
projection, then commit its offsets) must not be cut half-way by a stopping process:
``finish`` lets such work run to its end, for a bounded time, before the cancel goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class Unfinished(Exception):
    """Raised by :func:`finish` when the work was cancelled and did not end in time."""


async def finish(work: Awaitable[T], grace_s: float) -> T:
    """Await ``work`` to its end, even if the caller is cancelled meanwhile.

    Args:
        work: a coroutine or future; it runs in a task of its own.
        grace_s: how long to wait for it after a cancel, seconds.

    Returns:
        The work's result (when not cancelled).

    Raises:
        asyncio.CancelledError: the caller was cancelled and the work then ended.
        Unfinished: the caller was cancelled and the work did not end within
            ``grace_s`` (it is cancelled), failed, or was cancelled itself.
        Exception: what the work raised, when the caller was not cancelled.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        pass  # the caller's cancel, or the work's own (then it is done)
    deadline = time.monotonic() + grace_s
    while not task.done() and time.monotonic() < deadline:
        try:
            await asyncio.wait([task], timeout=deadline - time.monotonic())
        except asyncio.CancelledError:
            continue  # cancelled again (a loop shutting down): the work comes first
    if not task.done():
        task.cancel()
        raise Unfinished(f"cancelled, and not finished within {grace_s} s")
    if task.cancelled():
        raise Unfinished("cancelled itself")
    error = task.exception()
    if error is not None:
        raise Unfinished(f"failed after a cancel: {error!r}") from error
    raise asyncio.CancelledError
