"""A loop's transcript in the table: each call in its tool's entry, not in the header.

The header is rewritten on every event, so a transcript kept there made step ``k`` write
``k`` calls again (changelog bytes growing with the square of the steps). Each call now
goes to its tool's task entry, written once, and ``load_split`` rebuilds the transcript.
A header written before (holding the transcript) still loads, and the first write after
it moves every call to its entry.
"""

from __future__ import annotations

from typing import Any

import orjson
from machine_harness import T0, WF, ok, submit
from test_coordinator_redelivery import Table

from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from services.coordinator.keys import DEFINITION, table_entry_key
from services.coordinator.layout import (
    dump_definition,
    dump_header,
    dump_task,
    header_keeps_transcripts,
    load_split,
    task_keys,
)
from services.coordinator.snapshot import dump_state
from services.coordinator.writeset import touched_parts

STEPS = 200
LOOP = {"name": "agent", "nodes": [{
    "id": "l", "kind": "loop", "decide": "t.decide", "tools": ["search"],
    "max_steps": STEPS + 1, "input": {"q": "rivers"}}]}
OUTPUT = "x" * 2_000  # a 2 KB tool output


def _step_inputs(k: int) -> list[Any]:
    at = T0 + 1_000 * (k + 1)
    return [ok("l", {"tool": "search", "input": {"page": k}}, index=2 * k, at=at),
            ok("l", f"{k}:{OUTPUT}", index=2 * k + 1, at=at + 500)]


def _written(table: dict[str, bytes], result: Step) -> int:
    """Apply ``result`` to ``table`` as the coordinator's store does; the bytes written
    (keys and values: what the changelog gets)."""
    state = result.state
    assert state is not None
    size = 0
    for part in touched_parts(result.events, state):
        value = dump_definition(state) if part == DEFINITION else dump_task(state, part)
        table[part] = value
        size += len(part) + len(value)
    table[""] = dump_header(state)
    return size + len(table[""])


def _run(steps: int) -> tuple[WorkflowState, dict[str, bytes], list[int]]:
    """A loop run ``steps`` steps; its table, and the bytes each step wrote."""
    table: dict[str, bytes] = {}
    result = step(None, submit(LOOP, {}))
    _written(table, result)
    state = result.state
    per_step: list[int] = []
    for k in range(steps):
        size = 0
        for item in _step_inputs(k):
            result = step(state, item)
            state = result.state
            size += _written(table, result)
        per_step.append(size)
    assert state is not None
    return state, table, per_step


def test_step_200_writes_as_many_bytes_as_step_10() -> None:
    state, table, per_step = _run(STEPS)
    assert len(state.nodes["l"].transcript or []) == STEPS
    assert per_step[199] <= 1.2 * per_step[9], (per_step[9], per_step[199])
    assert len(table[""]) < 2_000  # the header holds no call
    assert load_split(table[""], table[DEFINITION], table.get) == state
    result = step(state, ok("l", {"finish": "done"}, index=2 * STEPS, at=T0 + 10**7))
    _written(table, result)
    assert result.state is not None and result.state.status.value == "succeeded"
    assert load_split(table[""], table[DEFINITION], table.get) == result.state


def test_the_transcript_is_rebuilt_from_the_tools_entries_after_every_step() -> None:
    table: dict[str, bytes] = {}
    result = step(None, submit(LOOP, {}))
    _written(table, result)
    state = result.state
    for k in range(4):
        for item in _step_inputs(k):
            result = step(state, item)
            state = result.state
            _written(table, result)
            assert state is not None
            loaded = load_split(table[""], table[DEFINITION], table.get)
            assert dump_state(loaded) == dump_state(state)
    assert state is not None and [e["step"] for e in state.nodes["l"].transcript or []] == [
        0, 1, 2, 3]


def _old_layout(state: WorkflowState) -> dict[bytes, bytes]:
    """The entries the layout before this change wrote: the transcript in the header, the
    tools' entries without their call."""
    header = orjson.loads(dump_header(state))
    header["nodes"]["l"]["transcript"] = state.nodes["l"].transcript
    entries = {table_entry_key(WF): orjson.dumps(header),
               table_entry_key(WF, DEFINITION): dump_definition(state)}
    for key in task_keys(state):
        entry = orjson.loads(dump_task(state, key))
        entry.pop("output", None)
        entries[table_entry_key(WF, key)] = orjson.dumps(entry)
    return entries


def test_a_header_holding_the_transcript_loads_and_its_first_write_moves_it() -> None:
    state, _, _ = _run(3)
    store = Table()
    store.table.data.update(_old_layout(state))
    assert header_keeps_transcripts(store.table.data[table_entry_key(WF)])
    loaded = store.load(WF)
    assert loaded is not None and dump_state(loaded) == dump_state(state)
    # the next write, whatever it changed, writes every call's entry and a header without
    written = store.entries(loaded, set(), {"reports": 7})
    keys = {k for k, _ in written}
    assert {table_entry_key(WF, f"l[{i}]") for i in (1, 3, 5)} <= keys
    store.table.data.update({k: v for k, v in written if v is not None})
    assert not header_keeps_transcripts(store.table.data[table_entry_key(WF)])
    store.clear_cache()
    again = store.load(WF)
    assert again is not None and dump_state(again) == dump_state(state)
    # and only once: a later write rewrites no call it did not change
    later = store.entries(again, set(), {"reports": 8})
    assert [k for k, _ in later] == [table_entry_key(WF)]


def test_a_value_naming_transcript_is_not_taken_for_an_old_header() -> None:
    header = orjson.dumps({"nodes": {"w": {"status": "running"}},
                           "outputs": {"w": {"transcript": 1}}})
    assert not header_keeps_transcripts(header)
    assert header_keeps_transcripts(orjson.dumps({"nodes": {"l": {"transcript": []}}}))
