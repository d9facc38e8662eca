"""Recorded histories fold as they did when they were recorded.

A workflow that is running while Headwater is upgraded goes on under the new machine
from a state the old one built: if the new machine decides differently for the same
inputs, or folds the same events into another state, that workflow goes wrong (the
non-determinism trap of replay-based engines). Each golden file (``golden/*.jsonl``,
written by ``golden_record.py`` from the machine of commit 4cb74d7) holds a scenario's
inputs, the decisions taken for each, and the final state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import golden_codec as gc
import orjson
import pytest

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = ("chain", "diamond", "map", "map_bounded", "retries", "error_route",
             "fail_fast", "continue_on_error", "timeout", "lost_lease", "checkpoint",
             "cancel", "wait_signalled", "wait_timeout_route", "signal_before_wait", "sleep",
             "when_branch", "child", "child_retries", "loop", "loop_exhausted", "schedule",
             "restart", "rerun", "code", "limited", "deadline", "called", "paused")


def _load(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = [orjson.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_bytes().splitlines()]
    *steps, last = lines
    return steps, last["final"]


def test_every_scenario_kind_has_a_recorded_history() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.jsonl")) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_machine_takes_the_recorded_decisions(name: str) -> None:
    steps, final = _load(name)
    machine = gc.machine()
    state = None
    for i, line in enumerate(steps):
        result = machine.step(state, gc.load_record(line["input"]))
        state = result.state
        got = [gc.dump_event(e) for e in result.events]
        assert orjson.loads(orjson.dumps(got)) == line["decisions"], (
            f"{name}: input {i} ({line['input']['type']}) is decided differently")
    assert orjson.loads(orjson.dumps(gc.state_doc(state))) == final


@pytest.mark.parametrize("name", SCENARIOS)
def test_folding_the_recorded_history_gives_the_recorded_state(name: str) -> None:
    steps, final = _load(name)
    evolve = gc.state().evolve
    state = None
    history = [gc.load_event(d) for line in steps for d in line["decisions"]]
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    for event in history:
        state = evolve(state, event)
    assert orjson.loads(orjson.dumps(gc.state_doc(state))) == final


def test_a_changed_decision_is_caught() -> None:
    """The comparison can fail: a history with one decision altered does not match."""
    steps, _ = _load("retries")
    machine = gc.machine()
    state = None
    mismatches = 0
    for line in steps:
        result = machine.step(state, gc.load_record(line["input"]))
        state = result.state
        recorded = [dict(d, fields=dict(d["fields"])) for d in line["decisions"]]
        for d in recorded:
            if d["type"] == "TimerScheduled":
                d["fields"]["fire_at_ms"] += 1  # another backoff
        if orjson.loads(orjson.dumps([gc.dump_event(e) for e in result.events])) != recorded:
            mismatches += 1
    assert mismatches == 3  # the three retries of the scenario
