"""The fault suite's code workflows, their pure parts (``faultsuite.code``, the batch and
the suites' plans): the shape's submission, the seven ways to kill the worker running a
function, and the figures read off the code runs' histories (no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from faultsuite.batch import ALL_SHAPES, make_batch
from faultsuite.code import (
    CODE_POINTS,
    STEP_TASK,
    WORKFLOW,
    code_faults,
    code_figures,
    kills_during_code,
)
from faultsuite.shapes import HEARTBEAT_TIMEOUT_S
from faultsuite.suite import FULL, POINTS, QUICK, point_plan
from faultsuite.supervisor import Life
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.machine import step
from headwater.topics import Topics
from load.kafka_io import Seen
from services.common import faults
from services.coordinator.records import encode_outputs
from services.worker.workflows import served_workflows


def test_the_batch_has_a_code_run_sent_its_signal() -> None:
    batch = make_batch("fb", len(ALL_SHAPES))
    [run] = [s for s in batch if s.shape == "code"]
    node = run.spec["nodes"][0]
    assert (node["kind"], node["task"], node["id"]) == ("code", WORKFLOW, "main")
    assert run.spec["heartbeat_timeout"] == HEARTBEAT_TIMEOUT_S
    assert run.input == {"seed": f"fb-{ALL_SHAPES.index('code')}"}
    assert [sig.name for sig in run.signals] == ["approval"]
    assert run.children_run == "fault.code_child@?"
    assert len([s for s in make_batch("fb", 2 * len(ALL_SHAPES)) if s.shape == "code"]) == 2


@pytest.mark.parametrize("named", [None, "release-7"])
def test_the_code_shape_runs_in_the_lane_its_workers_serve(
        monkeypatch: pytest.MonkeyPatch, named: str | None) -> None:
    """Its spec records the code version the suite's workers announce (they inherit
    ``HEADWATER_CODE_VERSION``), so its first activation goes to their lane."""
    if named is None:
        monkeypatch.delenv("HEADWATER_CODE_VERSION", raising=False)
    else:
        monkeypatch.setenv("HEADWATER_CODE_VERSION", named)
    [run] = [s for s in make_batch("fb", len(ALL_SHAPES)) if s.shape == "code"]
    [announced] = [w for w in served_workflows("cpu", named) if w.name == WORKFLOW]
    version = run.spec["nodes"][0]["code_version"]
    assert version == announced.code_version == (named or announced.code_version)
    topics = Topics("unit-fs")
    first = step(None, ev.WorkflowSubmitted("r", run.spec, run.input, 1_700_000_000_000))
    routed = {o.topic for o in encode_outputs(topics, first.events, 1_000_000, first.state)
              if o.topic != topics.events}
    assert routed == {topics.lane("cpu", WORKFLOW, version)}


def test_both_suites_kill_the_worker_running_a_function_seven_ways() -> None:
    assert len(CODE_POINTS) == 7 and set(CODE_POINTS) <= set(POINTS)
    full = [p.name for p in FULL.plans()]
    quick = [p.name for p in QUICK.plans()]
    for name in CODE_POINTS:
        assert (quick.count(name), full.count(name)) == (1, FULL.runs)


@pytest.mark.parametrize("name", list(CODE_POINTS))
def test_each_code_plan_arms_points_the_workers_know(name: str) -> None:
    plan = point_plan(name, run=1, kills=2)
    armed = [plan.faults, *plan.schedule["worker"]]
    for spec in armed:
        assert faults.parse(spec)  # a known point, a label, a hit
    assert plan.expect and all(e.startswith("fault worker.") for e in plan.expect)


def test_the_plans_aim_at_activations_replays_and_steps() -> None:
    assert code_faults("code.activation_started") == (
        f"worker.after_start@{WORKFLOW}=3", [], (f"fault worker.after_start@{WORKFLOW}",))
    assert code_faults("code.step_running", run=2, kills=3)[:2] == (
        f"worker.after_start@{STEP_TASK}=9",
        [f"worker.after_start@{STEP_TASK}=4", f"worker.after_start@{STEP_TASK}=7"])
    # killed after reporting an activation, its replacement dies mid-replay
    assert code_faults("code.replaying", run=1) == (
        f"worker.after_outcome@{WORKFLOW}=6", ["worker.replaying=1"],
        (f"fault worker.after_outcome@{WORKFLOW}", "fault worker.replaying"))
    with pytest.raises(ValueError, match="unknown code point"):
        code_faults("code.nowhere")


def _record(offset: int, seq: int, body: Any, wid: str = "c") -> Record:
    return Record(0, offset, wid, ev.HistoryEvent(wid, seq, body), b"")


def test_figures_count_activations_steps_decisions_and_copies() -> None:
    at = 1_000
    d = [ev.TaskDispatched("c", "main", i, 1, "t", "cpu", None, at) for i in range(3)]
    records = [
        _record(0, 1, d[0]),
        _record(1, 2, ev.TaskSucceeded("c", "main", 0, 1, at, {"steps": []})),
        _record(2, 3, d[1]), _record(3, 4, d[2]),
        _record(4, 3, d[1]),  # the same seq again: published again
        _record(5, 5, d[1]),  # step 0 attempt 1 dispatched twice
        _record(6, 1, d[0], wid="other"),  # not a code run
        _record(7, 6, ev.TaskDispatched("c", "main", 4, 1, "t", "cpu",
                                        {"activation": 2, "continued": 0}, at)),
    ]
    assert code_figures(records, {"c"}) == {
        "runs": 1, "activation_attempts": 3, "step_attempts": 1, "decisions": 1,
        "continued_activations": 1, "steps_dispatched_twice": 1, "events_published_again": 1}


def test_kills_are_told_apart_by_whether_a_code_run_was_in_flight() -> None:
    def seen(wid: str, at: int) -> Seen:
        return Seen(at, 0, ev.HistoryEvent(wid, 1, ev.CancelRequested(wid, at, "")))

    def death(cause: str, at: int | None) -> Life:
        return Life("coordinator", 1, "", 0.0, ended=1.0, ended_ms=at, cause=cause)

    records = [seen("c1", 100), seen("c1", 300), seen("c2", 500), seen("c2", 600),
               seen("dag", 1_000)]
    deaths = [death("fault coordinator.after_intent (hit 20)", 200),
              death("fault coordinator.after_intent (hit 12)", 400),
              death("external SIGKILL", 550), death("unexpected exit", 250),
              death("stopped", None)]
    assert kills_during_code(["c1", "c2"], records, deaths) == {
        "fault coordinator.after_intent": {"during": 1, "outside": 1},
        "external SIGKILL": {"during": 1, "outside": 0}}
