"""What a rerun of a code workflow reuses (``services/gateway/reruns/plan.reuse``): the
steps that succeeded, or with a reset to ``main:<s>`` those before step ``s``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from headwater import StepFailed, WorkflowContext, task, workflow
from headwater.testing import Environment
from services.gateway.reruns.plan import PlanError, reuse

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@task(name="rp.echo")
def echo(v: int) -> int:
    return v


@task(name="rp.fails")
def fails() -> None:
    raise ValueError("no")


@workflow(name="rp.flow")
async def flow(wf: WorkflowContext, n: int) -> list[int]:
    out = [int(await wf.run(echo, v=i)) for i in range(n)]
    try:
        await wf.run(fails, retry={"max_attempts": 1})
    except StepFailed:
        raise RuntimeError("the last step failed") from None
    return out


async def _failed_run() -> Environment:
    env = Environment(now=START)
    run = await env.start(flow, n=4, id="src")
    with pytest.raises(Exception, match="the last step failed"):
        await env.result(run)
    return env


async def test_a_rerun_reuses_every_step_that_succeeded() -> None:
    state = (await _failed_run()).state("src")
    doc = reuse(state, None)
    assert doc["reset"] is None and doc["nodes"] == {}
    assert {k: v["output"] for k, v in doc["steps"]["main"].items()} == {
        "0": 0, "1": 1, "2": 2, "3": 3}


async def test_a_reset_to_a_step_reuses_the_steps_before_it() -> None:
    state = (await _failed_run()).state("src")
    doc = reuse(state, "main:2")
    assert doc["reset"] == "main"
    assert sorted(doc["steps"]["main"]) == ["0", "1"]
    assert "steps" not in reuse(state, "main")  # the node alone: every step again


async def test_a_step_only_follows_a_code_node() -> None:
    state = (await _failed_run()).state("src")
    with pytest.raises(PlanError, match="the step after ':' must be a step number"):
        reuse(state, "main:x")
    with pytest.raises(PlanError, match="'other' is no code node"):
        reuse(state, "other:1")
