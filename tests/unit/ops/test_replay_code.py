"""``headwater replay`` of a code workflow: its recorded history (the golden ``code``
scenario: tasks, a gather, a child, a sleep, a signal kept for its wait, a step failed
for good, a signal wait timed out) folds and is checked like any run's.

The table is written from the run step by step as the coordinator's store writes it
and decoded as ``replay`` decodes it (``decode_table``); the projection's rows are the
ones the history implies. A code node's tasks are numbered sparsely (activation k at
``2k``, step s at ``2s + 1``), and its sleeps and signal waits are tasks of the
coordinator's own that no event dispatches: the projection has no row of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import golden_codec as gc
import orjson

from ops.audit import Observed, audit, check_projection, diff_states
from ops.cli.replay import decode_table
from ops.expected_rows import expected_rows
from ops.history import Recorded, fold, timeline
from services.coordinator.keys import TABLE_KEY_SEP, table_entry_key
from services.coordinator.store import TableStore
from services.coordinator.writeset import touched_parts

GOLDEN = Path(__file__).resolve().parents[1] / "headwater" / "core" / "golden" / "code.jsonl"
WID = "wf-code"
LATE = 10**13  # long after every event of the scenario
GRACE = 30_000


def _lines() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in GOLDEN.read_bytes().splitlines()]


def _records() -> list[Recorded]:
    """The history as read from the log, one offset per event, the first three events
    delivered twice (a coordinator that published them again)."""
    history = [gc.load_event(d) for line in _lines()[:-1] for d in line["decisions"]]
    recs = [Recorded(e, 100 + i, e.body.at_ms) for i, e in enumerate(history)]
    return recs[:3] + recs


def _table_entries() -> dict[str, bytes]:
    """The table after the scenario, written step by step as the store writes it:
    part -> bytes (``""``: the header), as ``replay`` reads them."""
    store, data = TableStore(None), dict[bytes, bytes]()  # the entries alone: no table behind them
    state = None
    for line in _lines()[:-1]:
        result = gc.machine().step(state, gc.load_record(line["input"]))
        state = result.state
        if state is None or not result.events:
            continue
        for key, value in store.entries(state, touched_parts(result.events, state), {}):
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
    prefix = table_entry_key(WID)
    return {("" if k == prefix else k[len(prefix) + len(TABLE_KEY_SEP):].decode()): v
            for k, v in data.items() if k.startswith(prefix)}


def test_the_history_folds_and_the_table_and_projection_agree_with_it() -> None:
    recs = _records()
    table, error = decode_table(WID, _table_entries())
    assert error == "" and table is not None
    history = sorted({r.event.seq: r.event for r in recs}.values(), key=lambda e: e.seq)
    rows = expected_rows(fold(history).state, history)
    report = audit(WID, Observed(recs, table, "", rows, committed_offset=None), LATE, GRACE)
    assert report.known and report.differences == [], [d.describe() for d in
                                                        report.differences]
    assert report.fold.error == "" and report.fold.state is not None
    assert report.fold.state.status.value == "succeeded"
    assert len(report.events) == len(history) and report.table.seq == history[-1].seq
    assert orjson.loads(orjson.dumps(gc.state_doc(report.fold.state))) == _lines()[-1]["final"]
    assert len(timeline(history)) == len(history)


def test_the_projection_has_rows_of_every_task_and_of_the_signal_waits() -> None:
    recs = _records()
    state = fold([r.event for r in recs[3:]]).state
    assert state is not None
    rows = expected_rows(state, [r.event for r in recs[3:]])
    own = {"main[11]", "main[13]", "main[17]"}  # the sleep and the two waits
    assert set(rows.tasks) == set(state.tasks) and own <= set(rows.tasks)
    assert rows.tasks["main[11]"]["status"] == "succeeded"  # the sleep woke
    assert {k for k in rows.tasks if int(k[5:-1]) % 2 == 0} == {
        f"main[{2 * k}]" for k in range(9)}  # every activation
    assert rows.tasks["main[15]"] == {"status": "failed", "attempt": 2}  # failed for good
    assert rows.nodes == {"main": {"status": "succeeded", "total": None, "error": ""}}
    assert rows.kinds is not None  # the signal the wait took (sent without an index)
    assert list(rows.kinds.signals.values()) == [{
        "name": "approval", "index": None, "signal_id": "s-1", "status": "consumed",
        "node": "main"}]


def test_a_table_whose_journal_differs_is_named_at_the_step() -> None:
    table, _ = decode_table(WID, _table_entries())
    state = fold([r.event for r in _records()[3:]]).state
    assert table is not None and state is not None
    steps = (table.nodes["main"].code or {})["steps"]
    steps[1]["result"] = {"value": "tampered"}
    found = diff_states(state, table)
    assert [d.path for d in found] == ["nodes.main.code.steps[1].result.value"]


def test_a_projection_missing_a_step_row_is_a_difference() -> None:
    recs = _records()[3:]
    history = [r.event for r in recs]
    rows = expected_rows(fold(history).state, history)
    del rows.tasks["main[9]"]  # the child's step
    rows.tasks["main[11]"] = {"status": "running", "attempt": 1}  # the sleep, never woken
    check = check_projection(recs, rows, None)
    assert sorted(d.path for d in check.differences) == [
        "tasks[main[11]].status", "tasks[main[9]]"]
