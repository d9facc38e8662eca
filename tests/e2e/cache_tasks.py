"""Tasks and a ``@workflow`` of the cache tests (``test_cache.py``): each real execution
of ``cache.embed`` appends a line to the file its input names, so a test counts the
runs of the task by what the worker did, not by what the coordinator recorded."""

from __future__ import annotations

import time
from typing import Any

from headwater import TaskContext, task
from headwater.workflows import WorkflowContext, workflow


@task(name="cache.embed", queue="cpu")
def embed(ctx: TaskContext, doc: str, marks: str, seconds: float = 0.3) -> dict[str, Any]:
    """Mark the execution, work ``seconds``, report 40 units; a vector of the doc."""
    with open(marks, "a") as f:
        f.write(f"{doc}\n")
    time.sleep(seconds)
    ctx.report_units(40)
    return {"doc": doc, "vec": [len(doc), sum(map(ord, doc)) % 97], "at": time.time()}


@workflow(name="cache.flow", queue="cpu")
async def flow(wf: WorkflowContext, doc: str, marks: str) -> Any:
    """One cached step, its key computed by the function."""
    out = await wf.run(embed, doc=doc, marks=marks, cache_key=f"flow:{doc}", cache_ttl="1h")
    return out["vec"]
