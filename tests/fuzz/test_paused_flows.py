"""The fuzzer's paused valid workflows without a broker: what each one is sent (a pause,
a resume, a copy of the pause after it) run on the real core in process, and the
history check that judges them afterwards; the pause and resume records of the
Kafka side, on ``control`` as a cancel is; and the HTTP cases of a run's pause, whose
negative strategy also draws valid cases."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

import load.noop_tasks  # noqa: F401  (registers bench.noop)
from fuzzer.bases import Builders
from fuzzer.http_cases import violates
from fuzzer.mutants import APPLIED, DLQ, Mutator
from fuzzer.paused import (
    PAUSED_INPUT,
    PAUSED_OUTPUT,
    PAUSED_SPEC,
    Pausing,
    history_faults,
    output_fault,
    pause_records,
)
from headwater.core import events as ev
from headwater.testing import Environment
from headwater.topics import Topics
from services.gateway.app import create_app

TOPICS = Topics("fz")


async def paused_run(copy: ev.PauseRequested | None = None) -> tuple[Environment, str]:
    """A run of ``PAUSED_SPEC`` sent what a ``PauseFlow`` sends: the pause while it
    sleeps, its timer due while paused, the resume, then ``copy`` (default: the pause
    again, its request id the same)."""
    env = Environment()
    wid = await env.start(PAUSED_SPEC, PAUSED_INPUT, id="fz-paused-1")
    assert env.state(wid).nodes["s"].status.value == "running", "asleep after a"
    pause, resume = pause_records(wid, env.now_ms)
    env._put(pause)
    await env.run_until_idle(timers=True)  # the sleep comes due: deferred, not fired
    assert env.state(wid).status.value == "running"
    env._put(dataclasses.replace(resume, at_ms=env.now_ms))
    env._put(dataclasses.replace(copy or pause, at_ms=env.now_ms))  # right after it
    return env, wid


async def test_a_paused_run_resumed_and_sent_its_pause_again_ends_with_its_output() -> None:
    env, wid = await paused_run()
    assert await env.result(wid) == PAUSED_OUTPUT
    types = [e.type for e in env.history(wid)]
    assert types.count("WorkflowPaused") == 1 and "TimerDeferred" in types
    p = Pausing(wid, "kafka", paused=True)
    assert history_faults(p, env.history(wid)) == []
    assert output_fault(p, {"status": "succeeded", "output": PAUSED_OUTPUT}) == ""


async def test_a_pause_with_another_id_after_the_resume_is_caught() -> None:
    """The check can fail: a pause under a new request id pauses the run again, and
    the run would wait for a resume nobody sends."""
    wid = "fz-paused-1"
    again = ev.PauseRequested(wid, 0, "another", "fuzz", "again")
    env, wid = await paused_run(copy=again)
    with pytest.raises(TimeoutError):
        await env.result(wid)
    faults = history_faults(Pausing(wid, "http", paused=True), env.history(wid))
    assert faults == [f"{wid}: 2 WorkflowPaused, not 1 (the copy of the pause after the "
                      "resume must record nothing)"]


async def test_a_dispatch_while_paused_and_a_wrong_output_are_caught() -> None:
    env, wid = await paused_run()
    await env.result(wid)
    history = env.history(wid)
    at = [e.type for e in history].index("WorkflowPaused")
    dispatched = next(e for e in history if e.type == "TaskDispatched")
    forged = [*history[:at + 1], dataclasses.replace(dispatched, seq=999), *history[at + 1:]]
    p = Pausing(wid, "http", paused=True)
    assert history_faults(p, forged) == [f"{wid}: a[None] dispatched while paused (seq 999)"]
    assert "output" in output_fault(p, {"status": "succeeded", "output": None})
    assert output_fault(p, {"status": "failed"}) == f"{wid}: failed"


def test_a_run_that_ended_before_its_pause_may_have_neither() -> None:
    assert history_faults(Pausing("w", "http"), []) == []
    assert history_faults(Pausing("w", "http", paused=True), []) != []


def test_pause_and_resume_bases_are_applied_on_control_and_mutated() -> None:
    m = Mutator(Builders(TOPICS, "fz", ["fz-target"], 1_722_000_000_000), 8, 2 * 1024 * 1024)
    kinds, rng = m.builders.kinds(), random.Random(5)
    for kind, cls in (("pause", ev.PauseRequested), ("resume", ev.ResumeRequested)):
        base = kinds[kind](rng)
        assert base.topic == TOPICS.control and isinstance(base.record, cls)
        assert m.mutate(base, "bitflip", rng, "c") is not None
        assert m.mutate(base, "truncated", rng, f"{kind}-t").expect == DLQ  # type: ignore[union-attr]
        assert m.mutate(base, "wrong_partition", rng, f"{kind}-p").expect == APPLIED  # type: ignore[union-attr]
    edges = [e for e in m.edges(rng) if e.base in ("pause", "resume")]
    assert {e.why.split("=")[0] for e in edges} >= {"request_id", "by", "reason", "at_ms"}


def test_a_negative_strategy_case_with_nothing_negative_is_no_finding() -> None:
    """Pause and resume take an optional body: with the run's id fixed, schemathesis'
    negative strategy also draws a case without a body, which is valid."""
    doc = create_app().openapi()
    op = schemathesis.openapi.from_dict(doc)["/v1/workflows/{workflow_id}/pause"]["POST"]
    seen: list[Any] = []

    @settings(max_examples=40, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=GenerationMode.NEGATIVE,
                               path_parameters={"workflow_id": "fz-1"}))
    def collect(case: Any) -> None:
        seen.append(case)

    collect()
    assert {violates(c) for c in seen} == {True, False}, "both drawn"
    assert all(type(c.body).__name__ == "NotSet" for c in seen if not violates(c))
