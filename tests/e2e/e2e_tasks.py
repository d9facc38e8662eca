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


@task(name="e2e.big_output", queue="cpu")
def big_output(size: int) -> str:
    """Return a string of ``size`` characters (over the output limit when large)."""
    return "x" * size


@task(name="e2e.surrogate_error", queue="cpu")
def surrogate_error() -> None:
    """Raise with a lone surrogate in the message, which UTF-8 cannot encode."""
    raise RuntimeError("bad \ud800 byte")


@task(name="e2e.surrogate_progress", queue="cpu")
def surrogate_progress(ctx: TaskContext) -> str:
    """Report progress with a lone surrogate in the message, then succeed."""
    ctx.progress(0.5, "half \udc80 way")
    return "done"


@task(name="e2e.exit", queue="cpu")
def exit_(kind: str) -> None:
    """Raise ``SystemExit`` (``kind="exit"``) or ``KeyboardInterrupt`` from task code."""
    if kind == "exit":
        raise SystemExit(1)
    raise KeyboardInterrupt


@task(name="e2e.aexit", queue="cpu")
async def aexit() -> None:
    """Raise ``SystemExit`` from an async task."""
    await asyncio.sleep(0)
    raise SystemExit(2)
