"""The table's split layout: a header, the definition, one entry per task.

After every step of every scenario, rebuilding the state from the entries written so far
gives the state itself; and a step writes only the tasks it changed.
"""

from __future__ import annotations

import pytest
from test_machine_runs import NAMES, _scenario

from headwater.core.machine import step
from headwater.core.state import DEFINITION, WorkflowState
from services.coordinator.snapshot import (
    dump_definition,
    dump_header,
    dump_state,
    dump_task,
    load_split,
)


def write(table: dict[str, bytes], state: WorkflowState) -> set[str]:
    """What the coordinator's store does: the dirty parts, then the header."""
    parts = set(state.dirty)
    for part in state.dirty:
        table[part] = dump_definition(state) if part == DEFINITION else dump_task(state, part)
    state.dirty.clear()
    table[""] = dump_header(state)
    return parts


@pytest.mark.parametrize("name", NAMES)
def test_entries_rebuild_the_state_after_every_step(name: str) -> None:
    table: dict[str, bytes] = {}
    state: WorkflowState | None = None
    for item in _scenario(name):
        state = step(state, item).state
        if state is None:
            continue
        write(table, state)
        loaded = load_split(table[""], table[DEFINITION], table.get)
        assert dump_state(loaded) == dump_state(state)
        assert loaded == state


def test_a_step_writes_only_what_it_changed() -> None:
    table: dict[str, bytes] = {}
    doc = {"name": "wide", "nodes": [{"id": "m", "kind": "map", "over": "${input.xs}",
                                      "task": "t", "input": {"x": "${item}"}}]}
    from machine_harness import ok, submit

    state = step(None, submit(doc, {"xs": list(range(1000))})).state
    assert state is not None
    first = write(table, state)
    assert first == {DEFINITION} | {f"m[{i}]" for i in range(1000)}
    header_size = len(table[""])
    state = step(state, ok("m", {"i": 7}, index=7)).state
    assert state is not None
    assert write(table, state) == {"m[7]"}
    assert abs(len(table[""]) - header_size) <= 2  # only counters changed: no results in it
