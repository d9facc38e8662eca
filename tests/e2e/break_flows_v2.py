"""A second deploy of ``break_flows``' ``bf.steps``: the same name, other steps (each
runs ``bf.echo2``, not ``bf.echo``), as a worker of another code version serves it."""

from __future__ import annotations

from typing import Any

from headwater import WorkflowContext, task, workflow


@task(name="bf.echo2", queue="cpu")
def echo2(x: Any = None) -> Any:
    """``x`` back."""
    return x


@task(name="bf.echo", queue="cpu")
def echo(x: Any = None) -> Any:
    """``x`` back (as ``break_flows``' does: the tasks of the older code still run)."""
    return x


@workflow(name="bf.steps", queue="cpu")
async def steps(wf: WorkflowContext, n: int) -> int:
    """``n`` tasks one after another, on ``bf.echo2``."""
    total = 0
    for i in range(n):
        total += int(await wf.run(echo2, x=i))
    return total
