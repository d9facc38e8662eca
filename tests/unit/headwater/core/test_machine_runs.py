"""Whole runs through ``step``: seq numbering, one terminal event, replay and determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
from machine_harness import (
    T0,
    cancel,
    fail,
    fired,
    map_node,
    ok,
    replay,
    run,
    snapshot,
    spec,
    started,
    submit,
    task,
)

from headwater.core import events as ev
from headwater.core.machine import step
from headwater.core.spec import load_spec_text
from headwater.core.state import WorkflowState

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "stdlib_search" / "workflow.yaml"

DIAMOND = spec(task("a"), task("b", "a"), task("c", "a"),
               task("d", "b", "c", input=["${nodes.b.output}", "${nodes.c.output}"]))
FAN_2 = spec(task("src"), map_node("m", "${nodes.src.output}", "src", max_concurrency=2),
             task("fan", "m", input="${nodes.m.output}"))
RETRY3 = {"max_attempts": 3, "backoff_base": 1, "backoff_max": 10, "jitter": 0.3}
RETRYING = spec(task("a", retry=RETRY3), task("b", "a"))
BUSY = spec(task("a", retry=RETRY3), map_node("m", "${input.xs}"), task("z", "a", "m"))

# Map items finish out of order: 1, 2, 0, 4, 3.
OUT_OF_ORDER: list[ev.Input] = [
    submit(FAN_2), ok("src", ["v", "w", "x", "y", "z"]),
    ok("m", "W", index=1), ok("m", "X", index=2), ok("m", "V", index=0),
    ok("m", "Z", index=4), ok("m", "Y", index=3), ok("fan", "done"),
]


def _example_run() -> list[ev.Input]:
    doc = load_spec_text(EXAMPLE.read_text())
    return [
        submit(doc, {"query": "q", "top_k": 2, "limit": 3}),
        ok("list_modules", ["json", "os", "re"]),
        ok("extract", {"m": "os"}, index=1), fail("extract", index=0, at=T0 + 200),
        ok("extract", {"m": "re"}, index=2),
    ]


def _example_run_rest(run_so_far: list[ev.HistoryEvent]) -> list[ev.Input]:
    (timer,) = [e.body for e in run_so_far if isinstance(e.body, ev.TimerScheduled)]
    return [
        fired(timer.timer_id, timer.fire_at_ms),
        ok("extract", {"m": "json"}, index=0, attempt=2, at=timer.fire_at_ms + 5),
        ok("search", [1]), ok("stats", {"n": 3}), ok("report", "the report"),
    ]


ROUTED = spec(task("a"), task("b", "a", on_error="h"), task("c", "a"), task("d", "b", "c"),
               task("h", input={"e": "${error}"}))
CONTINUE_MAP = spec(map_node("m", "${input.xs}", continue_on_error=True, max_concurrency=2),
                    task("after", "m", input="${nodes.m.output}"))
CONTINUE_TASK = spec(task("a", continue_on_error=True), task("b", "a", input="${nodes.a.output}"))
LEASED = spec(task("a", timeout=3, heartbeat_timeout=1,
                   retry={"max_attempts": 3, "backoff_base": 0.5}))


def _ckpt(state: object, attempt: int, at: int) -> ev.TaskCheckpointed:
    return ev.TaskCheckpointed("wf-1", "a", None, attempt, at, state)


SCENARIOS: dict[str, list[ev.Input]] = {
    "error route": [
        submit(ROUTED), ok("a", 1), started("c"), fail("b", retryable=False), ok("c", 2),
        ok("b", "late"), ok("h", "handled"),
    ],
    "continue-on-error map": [
        submit(CONTINUE_MAP, {"xs": [1, 2, 3]}), fail("m", index=0, retryable=False),
        ok("m", 2, index=1), ok("m", 3, index=2), ok("after", "x"),
    ],
    "continue-on-error task": [
        submit(CONTINUE_TASK), fail("a", retryable=False), ok("b", "B"),
    ],
    "lease, deadline, checkpoint": [
        submit(LEASED), started("a"), _ckpt({"n": 1}, 1, T0 + 60),
        fired("lease:a:1", T0 + 2100), fired("retry:a:2", T0 + 2600),
        started("a", attempt=2, at=T0 + 2610), _ckpt({"n": 2}, 2, T0 + 2650),
        fired("deadline:a:2", T0 + 5600), ok("a", "late", attempt=2, at=T0 + 5650),
        fired("retry:a:3", T0 + 6600), ok("a", "A", attempt=3, at=T0 + 6700),
    ],
    "cancel a map with max_concurrency": [
        submit(CONTINUE_MAP, {"xs": list(range(6))}), started("m", index=0),
        fail("m", index=1, retryable=False), cancel(), ok("m", 0, index=0),
    ],
    "diamond with duplicate deliveries": [
        submit(DIAMOND), ok("a", 1), ok("b", "B"), ok("b", "B"), ok("c", "C"), ok("a", 1),
        ok("d", "D"),
    ],
    "empty map": [submit(FAN_2), ok("src", []), ok("fan", [])],
    "map out of order": OUT_OF_ORDER,
    "retries exhausted": [
        submit(RETRYING), fail("a", at=T0 + 10), fired("retry:a:2", T0 + 5000),
        fail("a", attempt=2, at=T0 + 5010), fired("retry:a:3", T0 + 20000),
        fail("a", attempt=3, at=T0 + 20010),
    ],
    "non-retryable": [submit(RETRYING), started("a"), fail("a", retryable=False)],
    "cancel mid-run": [
        submit(BUSY, {"xs": [1, 2, 3]}), fail("a"), ok("m", 1, index=2), cancel(),
        cancel(), ok("m", 0, index=0),
    ],
    "invalid spec": [submit(spec(task("a", "b"), task("b", "a"))), ok("a")],
    "bad reference": [
        submit(spec(task("a"), task("b", "a", input="${nodes.a.output.x.y}"))), ok("a", {"x": 1}),
    ],
    "stale and unknown reports": [
        submit(RETRYING), fail("a", at=T0 + 10), ok("a", attempt=1), fired("retry:a:9", T0),
        fired("retry:a:2", T0 + 9000), ok("a", attempt=1), ok("zzz"), ok("a", "A", attempt=2),
        ok("b"),
    ],
}


def _scenario(name: str) -> list[ev.Input]:
    if name != "stdlib example with a retry":
        return SCENARIOS[name]
    head = _example_run()
    return head + _example_run_rest(run(head).history)


NAMES = [*SCENARIOS, "stdlib example with a retry"]
EXPECTED_END: dict[str, type[ev.Body]] = {
    "error route": ev.WorkflowSucceeded,
    "continue-on-error map": ev.WorkflowSucceeded,
    "continue-on-error task": ev.WorkflowSucceeded,
    "lease, deadline, checkpoint": ev.WorkflowSucceeded,
    "cancel a map with max_concurrency": ev.WorkflowCancelled,
    "diamond with duplicate deliveries": ev.WorkflowSucceeded,
    "empty map": ev.WorkflowSucceeded,
    "map out of order": ev.WorkflowSucceeded,
    "retries exhausted": ev.WorkflowFailed,
    "non-retryable": ev.WorkflowFailed,
    "cancel mid-run": ev.WorkflowCancelled,
    "invalid spec": ev.WorkflowFailed,
    "bad reference": ev.WorkflowFailed,
    "stale and unknown reports": ev.WorkflowSucceeded,
    "stdlib example with a retry": ev.WorkflowSucceeded,
}


@pytest.mark.parametrize("name", NAMES)
def test_seq_has_no_gaps_and_there_is_exactly_one_terminal_event_last(name: str) -> None:
    result = run(_scenario(name))
    assert [e.seq for e in result.history] == list(range(1, len(result.history) + 1))
    assert [e.terminal for e in result.history].count(True) == 1
    assert isinstance(result.history[-1].body, EXPECTED_END[name])
    assert result.state is not None and result.state.status.terminal
    assert result.state.seq == len(result.history)


@pytest.mark.parametrize("name", NAMES)
def test_replay_of_the_history_rebuilds_the_state_after_every_step(name: str) -> None:
    state: WorkflowState | None = None
    history: list[ev.HistoryEvent] = []
    for item in _scenario(name):
        out = step(state, item)
        state = out.state
        history.extend(out.events)
        rebuilt = replay(history)
        assert snapshot(rebuilt) == snapshot(state)
        assert rebuilt == state


@pytest.mark.parametrize("name", NAMES)
def test_same_inputs_give_identical_events(name: str) -> None:
    first, second = run(_scenario(name)), run(_scenario(name))
    assert first.history == second.history
    assert snapshot(first.state) == snapshot(second.state)


def test_map_never_has_more_than_max_concurrency_children_in_flight() -> None:
    state: WorkflowState | None = None
    most = 0
    for item in OUT_OF_ORDER:
        state = step(state, item).state
        assert state is not None
        in_flight = [k for k, t in state.tasks.items()
                     if k.startswith("m[") and not t.status.terminal]
        assert len(in_flight) == state.nodes["m"].running
        most = max(most, len(in_flight))
        assert len(in_flight) <= 2
    assert most == 2
    assert state is not None and state.outputs["m"] == ["V", "W", "X", "Y", "Z"]


def test_map_results_and_fan_in_keep_input_order_when_completions_arrive_out_of_order() -> None:
    result = run(OUT_OF_ORDER)
    (fan,) = [d for d in result.bodies(ev.TaskDispatched) if d.node == "fan"]
    assert fan.input == ["V", "W", "X", "Y", "Z"]
    dispatch_order = [d.index for d in result.bodies(ev.TaskDispatched) if d.node == "m"]
    assert dispatch_order == [0, 1, 2, 3, 4]
    (done,) = result.bodies(ev.WorkflowSucceeded)
    assert done.output == {"fan": "done"}


def test_stdlib_example_runs_to_the_report() -> None:
    result = run(_scenario("stdlib example with a retry"))

    def dispatched(node: str) -> list[ev.TaskDispatched]:
        return [d for d in result.bodies(ev.TaskDispatched) if d.node == node]

    assert dispatched("list_modules")[0].input == {"limit": 3}
    assert [(d.index, d.attempt) for d in dispatched("extract")] == [(0, 1), (1, 1), (2, 1),
                                                                      (0, 2)]
    assert dispatched("search")[0].input == {
        "docs": [{"m": "json"}, {"m": "os"}, {"m": "re"}], "query": "q", "top_k": 2}
    assert result.history[-1].body == ev.WorkflowSucceeded("wf-1", T0 + 100, "the report")
