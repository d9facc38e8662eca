"""Tasks of ``test_shutdown``, on the queue ``drain`` (only that test starts its workers)."""

from __future__ import annotations

import asyncio
import os

from headwater import TaskContext, task


@task(name="e2e.drain_sleep", queue="drain")
async def drain_sleep(ctx: TaskContext, seconds: float) -> dict[str, object]:
    """Sleep ``seconds``, then say which process ran the attempt."""
    await asyncio.sleep(seconds)
    return {"index": ctx.index, "attempt": ctx.attempt, "pid": os.getpid()}
