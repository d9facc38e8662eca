"""Tasks used only by the end-to-end suite (the stack's worker imports this module)."""

from __future__ import annotations

import asyncio

from headwater import NonRetryableError, TaskContext, task


@task(name="e2e.flaky", queue="cpu")
def flaky(ctx: TaskContext, succeed_on: int, value: object = None) -> dict[str, object]:
    """Fail every attempt before ``succeed_on``, then return the attempt number."""
    if ctx.attempt < succeed_on:
        raise RuntimeError(f"attempt {ctx.attempt} fails on purpose")
    return {"attempt": ctx.attempt, "value": value}


@task(name="e2e.fatal", queue="cpu")
def fatal() -> None:
    """Fail without retry."""
    raise NonRetryableError("this input can never work")


@task(name="e2e.sleep", queue="cpu")
async def sleep(seconds: float) -> float:
    """Sleep, then return how long."""
    await asyncio.sleep(seconds)
    return seconds
