"""A restart's scan (``TableStore.scan``, which re-arms the timers) decodes the live
workflows only: one that has ended is passed over on its header, neither decoded nor
cached, so the scan's time and the memory it leaves follow what is live."""

from __future__ import annotations

from typing import Any

import pytest
from test_coordinator_redelivery import AT, INPUTS, TOPICS, Bus, Table

from headwater import codec
from headwater.core import events as ev
from services.coordinator import inputs as inputs_module
from services.coordinator import layout
from services.coordinator import store as store_module
from services.coordinator.batch import BatchApplier
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex

JOB = {"name": "one", "nodes": [{"id": "a", "task": "t.a"}]}


@pytest.fixture(autouse=True)
def producers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs_module, "stamped", lambda record, received_ms: record)


def _input(topic: str, offset: int, value: Any) -> InputRecord:
    return InputRecord(topic, 0, offset, value.workflow_id.encode(), codec.encode(value), [])


async def test_the_scan_decodes_the_live_workflows_and_passes_over_the_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = Table()
    applier = BatchApplier(TOPICS, Bus(), table, TimerIndex(), 16 << 20)
    await applier.apply_batch(INPUTS[:2])  # wf-1: running, f started
    await applier.apply_batch([
        _input(TOPICS.submissions, 1, ev.WorkflowSubmitted("wf-2", JOB, {}, AT)),
        _input(TOPICS.reports, 2, ev.TaskSucceeded("wf-2", "a", None, 1, AT + 5, 1))])
    ended = table.load("wf-2")
    assert ended is not None and ended.status.terminal
    table.clear_cache()
    decoded: list[str] = []
    load_split = layout.load_split

    def counting(header: bytes, definition: bytes, get_task: Any) -> Any:
        decoded.append(str(layout.orjson.loads(header)["workflow_id"]))
        return load_split(header, definition, get_task)

    monkeypatch.setattr(store_module, "load_split", counting)
    assert [s.workflow_id for s in table.scan()] == ["wf-1"]
    assert decoded == ["wf-1"]  # wf-2 was passed over on its header


def test_header_ended_reads_the_status_alone() -> None:
    assert not layout.header_ended(b"not json")
    assert not layout.header_ended(b'{"status": "running"}')
    assert layout.header_ended(b'{"status": "succeeded", "nodes": {}}')
