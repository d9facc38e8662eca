"""The benchmarks' only task, and the same chain of it as a code workflow: neither does
anything, so what is measured is Headwater itself.

``chain`` runs ``length`` noop tasks one after another, as the spec chain
``load.workloads.chain`` does, on the same queue: each ``wf.run`` is one step, and
between two steps the worker runs one activation of the function (B2c, B3c).
"""

from __future__ import annotations

from typing import Any

from headwater import WorkflowContext, task, workflow


@task(name="bench.noop", queue="cpu")
async def noop(**kwargs: Any) -> None:
    """Return at once; accepts (and ignores) any input keywords."""
    return None


@workflow(name="bench.chain", queue="cpu")
async def chain(wf: WorkflowContext, length: int) -> None:
    """Run ``noop`` ``length`` times, each after the one before has succeeded."""
    for _ in range(length):
        await wf.run(noop)
