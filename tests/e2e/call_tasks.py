"""Tasks of ``test_ctx_call``, on the queue ``calls`` (only that test starts its worker):
a task that runs child workflows through ``ctx.call_parallel``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headwater import TaskContext, task


@task(name="e2e.call_fan", queue="calls")
def call_fan(ctx: TaskContext, definition: str, n: int, marks: str) -> list[Any]:
    """Run ``n`` children of ``definition`` (input ``{"i": i}``) and return their outputs,
    leaving ``started-<attempt>`` in the directory ``marks`` first."""
    (Path(marks) / f"started-{ctx.attempt}").write_text("")
    return ctx.call_parallel([(definition, {"i": i}) for i in range(n)])


@task(name="e2e.acall_one", queue="calls")
async def acall_one(ctx: TaskContext, definition: str) -> Any:
    """Run one child of ``definition`` from async task code."""
    return await ctx.acall(definition, {"i": 42})
