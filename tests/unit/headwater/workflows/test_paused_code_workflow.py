"""A code workflow in the test environment: started paused, its first activation is
held and nothing is dispatched until the resume, then it runs to the output it has
unpaused; paused while it sleeps, its wake-up waits for the resume."""

from __future__ import annotations

from headwater.core import events as ev
from headwater.testing import Environment
from headwater.workflows import WorkflowContext, workflow
from tests.unit.headwater.workflows import flows


@workflow(name="wt.napper")
async def napper(wf: WorkflowContext, x: int) -> int:
    await wf.sleep(60)
    return int(await wf.run(flows.double, x=x))


async def test_a_code_workflow_started_paused_holds_its_activation_until_resumed() -> None:
    plain = await Environment().run(flows.child, x=4)
    env = Environment()
    run = await env.start(flows.child, x=4, paused=True)
    types = [e.type for e in env.history(run)]
    assert types == ["WorkflowAccepted", "WorkflowPaused", "DispatchDeferred"]
    assert env.state(run).paused
    await env.resume_run(run)
    assert await env.result(run) == plain == 9
    after = [e.type for e in env.history(run)]
    assert after[after.index("WorkflowResumed") + 1] == "TaskDispatched"


async def test_a_sleep_due_while_paused_wakes_at_the_resume() -> None:
    env = Environment()
    run = await env.start(napper, x=5)
    await env.pause_run(run, "maintenance")
    await env.run_until_idle(timers=True)  # the clock jumps to the wake-up: deferred
    assert [e.type for e in env.history(run)][-1] == "TimerDeferred"
    assert env.state(run).paused and not env.state(run).status.terminal
    await env.resume_run(run)
    assert await env.result(run) == 10
    deferred = [e.body for e in env.history(run) if isinstance(e.body, ev.TimerDeferred)]
    fired = [e.body for e in env.history(run) if isinstance(e.body, ev.TimerFired)
             and e.body.timer_id == deferred[0].timer_id]
    assert len(fired) == 1 and fired[0].at_ms >= deferred[0].at_ms >= deferred[0].fire_at_ms
