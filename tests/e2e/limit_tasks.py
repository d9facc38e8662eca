"""Tasks of ``test_limits``, on a queue no other test uses (only that test starts its
worker): each marks when it ran, on the worker's wall clock."""

from __future__ import annotations

import time
from typing import Any

from headwater import TaskContext, task


@task(name="lim.hold", queue="lim-q")
def hold(customer: str, seconds: float) -> dict[str, Any]:
    """Sleep ``seconds``; return when it started and ended (s since the epoch)."""
    start = time.time()
    time.sleep(seconds)
    return {"customer": customer, "start": start, "end": time.time()}


@task(name="lim.call", queue="lim-q")
def call(i: int) -> dict[str, Any]:
    """Return when it ran (s since the epoch)."""
    return {"i": i, "start": time.time()}


@task(name="lim.used", queue="lim-q")
def used(ctx: TaskContext, i: int, units: int) -> dict[str, Any]:
    """Report having used ``units`` of its rate limit; return when it ran."""
    ctx.report_units(units)
    return {"i": i, "start": time.time()}
