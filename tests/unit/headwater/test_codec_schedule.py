"""The schedule events on the wire: each round-trips inside a ``HistoryEvent``, and a
history written with the ``HistoryEvent`` schema retired when they were added (kept in
``schemas/avro/retired``) still decodes into the current one."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import orjson
import pytest
from fastavro.schema import parse_schema

from headwater import codec
from headwater.core import events as ev

BEFORE_SCHEDULES = codec.schema_dir() / "retired" / "HistoryEvent.9ba5b58d32e7d4a2.avsc"
BODIES = [
    ev.ScheduleArmed("schedule:n:1", "fire", 10, 2_000),
    ev.ScheduleFired("schedule:n:1", "fire", 2_010, 2_000, "started", "schedule:n:1:fire.0:1"),
    ev.ScheduleFired("schedule:n:1", "fire", 2_010, 2_000, "skipped_overlap"),
    ev.SchedulePaused("schedule:n:1", "fire", 3_000, "pause-1"),
    ev.ScheduleResumed("schedule:n:1", "fire", 4_000),
]
OLD_BODIES = [
    ev.LoopStepDecided("wf", "agent", 2, 7, tool="search", input={"q": "x"}, spend=1.5),
    ev.SleepStarted("wf", "nap", 7, 9),
    ev.WorkflowAccepted("wf", 1, {"name": "n", "nodes": []}, None, "team", "billing", 3),
]


def _written_with(path: Path, record: object) -> bytes:
    schema = parse_schema(orjson.loads(path.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, codec._to_avro(record))
    return buf.getvalue()


@pytest.mark.parametrize("body", BODIES, ids=lambda b: f"{type(b).__name__}")
def test_a_schedule_event_round_trips(body: ev.Body) -> None:
    record = ev.HistoryEvent(body.workflow_id, 3, body)
    assert codec.decode(codec.encode(record)) == record


@pytest.mark.parametrize("body", OLD_BODIES, ids=lambda b: f"{type(b).__name__}")
def test_history_written_before_the_schedule_events_decodes(body: ev.Body) -> None:
    record = ev.HistoryEvent("wf", 4, body)
    data = _written_with(BEFORE_SCHEDULES, record)
    assert codec.decode(data) == record
    assert codec.encode(record) != data  # new records name the current schema


def test_the_retired_schema_cannot_hold_a_schedule_event() -> None:
    """The control: the schema retired is really the one without them."""
    with pytest.raises(ValueError):
        _written_with(BEFORE_SCHEDULES, ev.HistoryEvent("wf", 2, BODIES[0]))
