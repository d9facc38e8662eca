"""The projector keeps the history events of a fetch and skips anything else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from headwater import codec
from headwater.core import events as ev
from services.projector.writer import _history_events


def record(value: bytes, offset: int) -> SimpleNamespace:
    return SimpleNamespace(topic="p.events", offset=offset, value=value)


def test_records_of_other_types_and_undecodable_ones_are_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    event = ev.HistoryEvent("wf", 1, ev.WorkflowSucceeded("wf", 5, {"x": 1}))
    stray = ev.TimerFired("wf", "retry:a[0]", 6)
    found = _history_events([record(codec.encode(event), 0), record(codec.encode(stray), 1),
                             record(b"garbage", 2), record(codec.encode(event), 3)])
    assert found == [event, event]
    assert "a TimerFired record on p.events@1, not a history event" in caplog.text
    assert "undecodable record on p.events@2" in caplog.text
