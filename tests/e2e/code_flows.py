"""The ``@workflow``s of ``test_code_workflows``: a workflow whose tasks run on two
queues (``cf-cpu``, ``cf-gpu``: only that test starts their workers), with a gather of
20, a code child, a spec child (the definition ``cf.spec``, registered by the test), a
sleep and a signal; served at ``/cf/research``."""

from __future__ import annotations

from typing import Any

from headwater import WorkflowContext, task, workflow

CPU, GPU = "cf-cpu", "cf-gpu"


@task(name="cf.square", queue=CPU)
def square(x: int) -> int:
    """``x`` squared (on the cpu queue)."""
    return x * x


@task(name="cf.shout", queue=GPU)
def shout(text: str) -> str:
    """``text`` in capitals (on the gpu queue)."""
    return text.upper()


@workflow(name="cf.child", queue=CPU)
async def child(wf: WorkflowContext, x: int) -> int:
    """One more than ``x`` squared."""
    return int(await wf.run(square, x=x)) + 1


@workflow(name="cf.research", path="/cf/research", queue=CPU)
async def research(wf: WorkflowContext, question: str, n: int = 20,
                   nap: float = 0.5) -> dict[str, Any]:
    """Every step kind once: tasks on both queues, a gather of ``n``, a code child and
    a spec child, a sleep of ``nap`` seconds and the signal ``approval``."""
    loud = await wf.run(shout, text=question)
    squares = await wf.gather(*(wf.run(square, x=i) for i in range(n)))
    kid = await wf.call(child, {"x": 3})
    spec_kid = await wf.call("cf.spec", {"v": 7})
    await wf.sleep(nap)
    approval = await wf.signal("approval", timeout=600)
    return {"loud": loud, "sum": sum(squares), "squares": squares, "kid": kid,
            "spec_kid": spec_kid, "approval": approval}


SPEC_CHILD: dict[str, Any] = {
    "name": "cf.spec", "nodes": [{"id": "sq", "task": "cf.square", "queue": CPU,
                                  "input": {"x": "${input.v}"}}],
    "output": "${nodes.sq.output}"}
"""The definition ``cf.spec`` the test registers: ``v`` squared."""
