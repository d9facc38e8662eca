"""Workflows and tasks the unit tests of ``headwater.workflows`` run in-process."""

from __future__ import annotations

from typing import Any

from headwater import StepFailed, WorkflowContext, task, workflow

CALLS: dict[str, int] = {}


@task(name="wt.double", queue="cpu")
def double(x: int) -> int:
    CALLS["double"] = CALLS.get("double", 0) + 1
    return 2 * x


@task(name="wt.shout", queue="gpu")
async def shout(text: str) -> str:
    return text.upper()


@task(name="wt.flaky", queue="cpu")
def flaky(n: int) -> int:
    CALLS["flaky"] = CALLS.get("flaky", 0) + 1
    if CALLS["flaky"] % 2 == 1:
        raise RuntimeError("flaky says no")
    return n


@task(name="wt.broken", queue="cpu")
def broken() -> None:
    raise ValueError("always broken")


@workflow(name="wt.child")
async def child(wf: WorkflowContext, x: int) -> int:
    return int(await wf.run(double, x=x)) + 1


@workflow(name="wt.main", path="/main")
async def main(wf: WorkflowContext, n: int, text: str = "hi") -> dict[str, Any]:
    first = await wf.run(double, x=n)
    loud = await wf.run(shout, text=text)
    many = await wf.gather(*(wf.run(double, x=i) for i in range(20)), max_concurrency=5)
    kid = await wf.call(child, {"x": 5})
    spec_kid = await wf.call("wt.spec", {"v": 1})
    await wf.sleep(86_400)
    approval = await wf.signal("approval", timeout=3600)
    try:
        await wf.run(broken, retry={"max_attempts": 2, "backoff_base": 10})
        caught = ""
    except StepFailed as e:
        caught = e.error_type
    return {"first": first, "loud": loud, "many": many, "kid": kid, "spec_kid": spec_kid,
            "approval": approval, "caught": caught, "uuid": str(wf.uuid()),
            "at": wf.now().isoformat()}


SPEC_CHILD = {"name": "wt.spec", "nodes": [
    {"id": "d", "task": "wt.double", "input": {"x": "${input.v}"}}], "output": "${nodes.d.output}"}
