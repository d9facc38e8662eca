"""The ``@workflow``s of the fault suite's ``code`` shape (``faultsuite/code.py``): its
workers import this module beside ``e2e_tasks``, so they serve the functions'
activations and their step task ``fault.step``.

Every output depends on the run's input alone (digests, as ``e2e.digest``), so a run
under faults must end as a fault-free one does. ``fault.code`` runs every kind of step:
tasks, a gather, a task that fails twice before it succeeds (retried), a child workflow,
a durable sleep, the signal ``approval`` (the batch sends it mid-run), and a task that
fails for good (the function catches it). Its tasks run as ``fault.step``, a task no
other shape runs, so that a fault point can aim at a code workflow's step
(``worker.after_start@fault.step``).
"""

from __future__ import annotations

from typing import Any

from e2e_tasks import digest

from headwater import StepFailed, WorkflowContext, task, workflow

HEARTBEAT_S = 2.0
"""A step's heartbeat timeout: a killed worker's attempt is retried after it."""
RETRY = {"max_attempts": 8, "backoff_base": 0.2, "backoff_max": 1.0, "multiplier": 2.0,
         "jitter": 0.0}
"""A step's retry policy: a fault costs an attempt or two (``shapes.RETRY``)."""
ACTIVATION_TIMEOUT_S = 20.0
"""Seconds an activation may take from its dispatch: one lost with its worker is
retried after it (the child's spec has no heartbeat timeout of the suite's)."""
SLEEP_S = 1.5
"""How long the function sleeps durably, seconds."""
GATHER = 6
"""Tasks the function gathers (at most ``GATHER_AT_ONCE`` at once)."""
GATHER_AT_ONCE = 3
FLAKY_SUCCEEDS_ON = 3
"""The attempt at which the flaky step succeeds."""


@task(name="fault.step", queue="cpu")
async def step(value: Any, salt: str = "", seconds: float = 0.0) -> str:
    """``e2e.digest`` of ``value``, under a name of the code shape's own."""
    return await digest(value, salt, seconds)


def _run(wf: WorkflowContext, value: Any, salt: str, seconds: float = 0.05) -> Any:
    return wf.run(step, value=value, salt=salt, seconds=seconds, retry=RETRY,
                  heartbeat_timeout=HEARTBEAT_S)


@workflow(name="fault.code_child", queue="cpu", timeout=ACTIVATION_TIMEOUT_S)
async def code_child(wf: WorkflowContext, value: Any) -> str:
    """Two tasks in a row on ``value``."""
    x = await _run(wf, value, "x")
    return str(await _run(wf, x, "y"))


@workflow(name="fault.code", queue="cpu", timeout=ACTIVATION_TIMEOUT_S)
async def code(wf: WorkflowContext, seed: str) -> dict[str, Any]:
    """Every kind of step once, in a deterministic order; the output names each result."""
    a = await _run(wf, seed, "a")
    many = await wf.gather(*(_run(wf, [a, i], "m") for i in range(GATHER)),
                           max_concurrency=GATHER_AT_ONCE)
    flaky = await wf.run("e2e.flaky_digest", value=a, succeed_on=FLAKY_SUCCEEDS_ON,
                         retry=RETRY, heartbeat_timeout=HEARTBEAT_S)
    kid = await wf.call(code_child, {"value": [a, many]})
    await wf.sleep(SLEEP_S)
    approval = await wf.signal("approval", timeout=600)
    try:
        await wf.run("e2e.fatal", retry=RETRY, heartbeat_timeout=HEARTBEAT_S)
        caught = ""
    except StepFailed as e:
        caught = e.error_type
    b = await _run(wf, {"many": many, "flaky": flaky, "kid": kid, "note": approval["note"]},
                   "b")
    return {"a": a, "many": many, "flaky": flaky, "kid": kid, "approval": approval,
            "caught": caught, "b": b}
