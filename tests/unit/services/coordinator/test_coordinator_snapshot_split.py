"""The table's split layout: a header, the definition, one entry per task.

After every step of every scenario, rebuilding the state from the entries written so far
gives the state itself; and a step writes only the tasks it changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_machine_runs import NAMES, _scenario

from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from services.coordinator.keys import DEFINITION
from services.coordinator.layout import (
    dump_definition,
    dump_header,
    dump_task,
    load_split,
    task_keys,
)
from services.coordinator.snapshot import dump_state, load_state, task_from
from services.coordinator.writeset import touched_parts


def write(table: dict[str, bytes], result: Step) -> set[str]:
    """What the coordinator's store does: the parts the step's events touched, then the
    header."""
    state = result.state
    assert state is not None
    parts = touched_parts(result.events, state)
    for part in parts:
        if part == DEFINITION:
            table[part] = dump_definition(state)
        elif part in state.tasks:
            table[part] = dump_task(state, part)
        else:  # a schedule's run that ended: its entry is deleted
            table.pop(part, None)
    table[""] = dump_header(state)
    return parts


@pytest.mark.parametrize("name", NAMES)
def test_entries_rebuild_the_state_after_every_step(name: str) -> None:
    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    for item in _scenario(name):
        result = step(state, item)
        state = result.state
        if state is None:
            continue
        write(table, result)
        loaded = load_split(table[""], table[DEFINITION], table.get)
        assert dump_state(loaded) == dump_state(state)
        assert loaded == state


def test_a_step_writes_only_what_it_changed() -> None:
    table: dict[str, bytes] = {}
    doc = {"name": "wide", "nodes": [{"id": "m", "kind": "map", "over": "${input.xs}",
                                      "task": "t", "input": {"x": "${item}"}}]}
    from machine_harness import ok, submit

    result = step(None, submit(doc, {"xs": list(range(1000))}))
    state = result.state
    assert state is not None
    first = write(table, result)
    assert first == {DEFINITION} | {f"m[{i}]" for i in range(1000)}
    result = step(state, ok("m", {"i": 7}, index=7))
    assert result.state is not None
    assert write(table, result) == {"m[7]"}
    header_size = len(table[""])
    result = step(result.state, ok("m", {"i": 8}, index=8))
    assert result.state is not None
    assert write(table, result) == {"m[8]"}
    assert abs(len(table[""]) - header_size) <= 2  # only counters changed: no results in it


def test_entries_leave_defaults_out_and_load_back_whole() -> None:
    from machine_harness import ok, submit

    doc = {"name": "pair", "nodes": [{"id": "a", "task": "t"},
                                     {"id": "b", "task": "t", "needs": ["a"]}]}
    result = step(None, submit(doc, {}))
    assert result.state is not None
    table: dict[str, bytes] = {}
    write(table, result)
    entry = orjson.loads(table["a"])
    assert entry == {"task": {"node": "a", "index": None, "attempt": 1, "status": "dispatched",
                              "dispatched_at_ms": entry["task"]["dispatched_at_ms"],
                              "heartbeat_ms": 30_000}}  # the default heartbeat_timeout
    assert orjson.loads(table[""])["nodes"]["b"] == {}  # pending, nothing counted yet
    result = step(result.state, ok("a", {"x": 1}))
    assert result.state is not None
    write(table, result)
    assert orjson.loads(table["a"])["output"] == {"x": 1}
    assert load_split(table[""], table[DEFINITION], table.get) == result.state


@pytest.mark.parametrize("node", [
    {"id": "a", "task": "t", "continue_on_error": True, "input": "${input.missing}"},
    {"id": "a", "kind": "map", "task": "t", "continue_on_error": True, "over": "${input.n}"},
], ids=["task-bad-reference", "map-over-not-a-list"])
def test_a_node_that_failed_before_any_attempt_keeps_its_error_output(node: dict[str, Any]) -> None:
    """A ``continue_on_error`` node that failed before it had a task entry (its input or
    its list could not be resolved) still shows ``{"error": ...}`` to the nodes waiting
    for it, once the state is rebuilt from the table (the header alone has its failure)."""
    from machine_harness import submit

    doc = {"name": "early", "nodes": [
        node, {"id": "slow", "task": "t"},
        {"id": "c", "task": "t", "needs": ["a", "slow"], "input": "${nodes.a.output}"}]}
    state = step(None, submit(doc, {"n": 3})).state
    assert state is not None and "a" not in task_keys(state)
    assert state.outputs["a"] == {"error": state.nodes["a"].failure}
    table = {key: dump_task(state, key) for key in task_keys(state)}
    loaded = load_split(dump_header(state), dump_definition(state), table.get)
    assert loaded.outputs == state.outputs
    assert dump_state(loaded) == dump_state(state)


GOLDEN = Path(__file__).resolve().parents[3] / "unit" / "headwater" / "core" / "golden"


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.jsonl")))
def test_entries_rebuild_every_golden_state_after_every_step(name: str) -> None:
    """Every node kind's state survives the table: a wait's buffered signals, its
    output and its per-item results, a sleep, a child's parent link, a loop's decisions
    and transcript (golden histories of every kind, step by step)."""
    import golden_codec as gc

    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    lines = [orjson.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_bytes().splitlines()]
    for line in lines[:-1]:
        result = step(state, gc.load_record(line["input"]))
        state = result.state
        if state is None or not result.events:
            continue
        write(table, result)
        loaded = load_split(table[""], table[DEFINITION], table.get)
        assert gc.state_doc(loaded) == gc.state_doc(state)
        assert loaded == state
        assert load_state(dump_state(state)) == state


def test_a_wait_per_item_keeps_its_results_and_signals_in_the_header() -> None:
    """A wait with ``over`` has no tasks: its per-item results, the signals kept for its
    items and the signal ids live in the header, and survive a reload at every step."""
    from headwater.core import events as ev

    spec = {"name": "w", "nodes": [
        {"id": "a", "task": "t"},
        {"id": "ok", "kind": "wait", "signal": "ok", "over": "${input.items}",
         "needs": ["a"], "fields": {"n": "integer"}}]}
    wid, t = "wf-items", 1_000
    inputs: list[ev.Input] = [
        ev.WorkflowSubmitted(wid, spec, {"items": [1, 2, 3]}, t),
        ev.SignalSent(wid, "ok", t + 1, 2, "s-early", {"n": 2}),  # before the wait starts
        ev.TaskSucceeded(wid, "a", None, 1, t + 2, "done"),
        ev.SignalSent(wid, "ok", t + 3, 0, "s-0", {"n": 0}),
        ev.SignalSent(wid, "ok", t + 4, 0, "s-0", {"n": 0}),  # the same id again
    ]
    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    for item in inputs:
        result = step(state, item)
        state = result.state
        assert state is not None
        write(table, result)
        loaded = load_split(table[""], table[DEFINITION], table.get)
        assert loaded == state
    assert state is not None and state.nodes["ok"].results == [{"n": 0}, None, {"n": 2}]
    assert set(state.signal_ids) == {"s-early", "s-0"}


def test_a_restart_deletes_the_old_generations_task_entries() -> None:
    """``WorkflowRestarted.dropped`` is in the write-set: the entry of a task the new
    generation has not dispatched yet is deleted, the one it has is rewritten."""
    from headwater.core import events as ev

    wf, t0 = "wf-r", 1_000_000
    spec = {"name": "r", "restart_on_failure": True,
            "nodes": [{"id": "a", "task": "t.a"},
                      {"id": "b", "task": "t.b", "needs": ["a"], "heartbeat_timeout": 2}]}
    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    for item in [ev.WorkflowSubmitted(wf, spec, None, t0),
                 ev.TaskSucceeded(wf, "a", None, 1, t0 + 1, "A"),
                 ev.TaskStarted(wf, "b", None, 1, t0 + 2, "w"),
                 ev.TimerFired(wf, "lease:b:1", t0 + 2002)]:
        result = step(state, item)
        state = result.state
        parts = write(table, result)
    assert state is not None and state.generation == 2
    assert {"a", "b"} <= parts
    assert sorted(k for k in table if k not in ("", DEFINITION)) == ["a"]
    assert orjson.loads(table["a"])["task"]["attempt"] == 2
    loaded = load_split(table[""], table[DEFINITION], table.get)
    assert loaded == state and loaded.generation == 2 and loaded.attempt_floor == 1


def test_stored_tasks_share_one_copy_of_their_node_and_worker_ids() -> None:
    """Read back from the table, a wide map's tasks hold one node id and one worker id
    between them, as decoded reports do (``codec.INTERNED_FIELDS``)."""
    raw = [orjson.dumps({"node": "extract", "index": i, "attempt": 1, "status": "succeeded",
                         "dispatched_at_ms": 1, "worker": "worker-7"}) for i in range(2)]
    first, second = (task_from(orjson.loads(r)) for r in raw)
    assert first.node is second.node == "extract" and first.worker is second.worker
    assert task_from(orjson.loads(raw[0].replace(b',"worker":"worker-7"', b""))).worker == ""
