"""Working through an operation: the actions' outcomes per target (a cancel skipped for
a run that ended, done for one this operation's own cancel ended, sent otherwise); a
batch at a time, each recorded; a run stopped mid-way (Kafka gone) goes on from its
last record and counts every target exactly once."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.core import events as ev
from headwater.operations import OperationRecorded, Outcome, Progress
from services.common.auth.tokens import OPEN
from services.gateway.edge.problems import Problem
from services.gateway.operations import actions, runner, store
from services.gateway.operations.actions import Target


class Outlet:
    """Records what is produced to ``control``."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def control(self, record: Any, what: str) -> None:
        self.sent.append(record)


class Pool:
    """``workflows`` rows by id, for ``fetchrow``."""

    def __init__(self, rows: dict[str, dict[str, Any]]) -> None:
        self.rows = rows

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        return self.rows.get(args[0])


def _target(rows: dict[str, dict[str, Any]], workflow_id: str,
            outlet: Outlet) -> Target:
    hw: Any = SimpleNamespace(pool=Pool(rows), outlet=outlet)
    return Target(hw, OPEN, "op-1", workflow_id, {"reason": "why"})


def test_a_cancel_sends_skips_or_sees_its_own() -> None:
    rows = {"a": {"status": "running", "error": ""},
            "b": {"status": "succeeded", "error": ""},
            "c": {"status": "cancelled", "error": "bulk operation op-1: why"},
            "d": {"status": "cancelled", "error": "by hand"}}
    outlet = Outlet()

    async def each() -> list[tuple[Outcome, str]]:
        return [await actions.cancel(_target(rows, w, outlet)) for w in "abcde"]
    assert asyncio.run(each()) == [
        (Outcome.DONE, ""), (Outcome.SKIPPED, "already succeeded"), (Outcome.DONE, ""),
        (Outcome.SKIPPED, "already cancelled"),
        (Outcome.FAILED, "no such workflow (its rows are gone)")]
    (sent,) = outlet.sent
    assert isinstance(sent, ev.CancelRequested)
    assert (sent.workflow_id, sent.reason) == ("a", "bulk operation op-1: why")


def test_a_pause_and_a_resume_send_one_request_id_per_operation_and_skip_ended_runs(
        ) -> None:
    rows = {"a": {"status": "running", "paused": None},
            "b": {"status": "succeeded", "paused": None}}
    outlet = Outlet()

    async def each() -> list[tuple[Outcome, str]]:
        return [await actions.ACTIONS["pause"](_target(rows, "a", outlet)),
                await actions.ACTIONS["pause"](_target(rows, "a", outlet)),  # sent again
                await actions.ACTIONS["pause"](_target(rows, "b", outlet)),
                await actions.ACTIONS["resume"](_target(rows, "a", outlet))]
    done = asyncio.run(each())
    assert [outcome for outcome, _ in done] == [Outcome.DONE, Outcome.DONE, Outcome.SKIPPED,
                                               Outcome.DONE]
    assert "already ended" in done[2][1]
    first, again, resumed = outlet.sent
    assert isinstance(first, ev.PauseRequested) and isinstance(resumed, ev.ResumeRequested)
    assert (first.workflow_id, first.by, first.reason) == ("a", "operation:op-1", "why")
    assert first.request_id == again.request_id != resumed.request_id  # the run keeps one


def test_a_refusal_is_the_targets_own_or_stops_the_operation() -> None:
    assert actions._refused(Problem(409, "Conflict", "it ended"), skip=409) == (
        Outcome.SKIPPED, "it ended")
    assert actions._refused(Problem(400, "Invalid signal", "no wait"), skip=409) == (
        Outcome.FAILED, "no wait")
    with pytest.raises(Problem):
        actions._refused(Problem(503, "Kafka unavailable"), skip=409)


def test_a_run_stopped_mid_way_goes_on_and_counts_each_target_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    acted: list[str] = []
    records: list[OperationRecorded] = []
    kafka_up = {"up": True}

    async def act(t: Target) -> actions.Result:
        if t.workflow_id == "wf-75" and not kafka_up["up"]:
            raise Problem(503, "Kafka unavailable")
        acted.append(t.workflow_id)
        return (Outcome.SKIPPED, "already failed") if t.workflow_id == "wf-3" else (
            Outcome.DONE, "")

    async def write(producer: Any, pool: Any, settings: Any, record: OperationRecorded,
                    owner: str, timeout_s: float) -> None:
        records.append(record)

    monkeypatch.setitem(actions.ACTIONS, "cancel", act)
    monkeypatch.setattr(store, "write", write)
    hw: Any = SimpleNamespace(producer=None, pool=None,
                              settings=SimpleNamespace(produce_timeout_s=1.0))
    targets = [f"wf-{i}" for i in range(120)]
    progress = Progress("op-1", "cancel", {}, {"label": ["t:a"]}, targets, None, 0)

    kafka_up["up"] = False
    with pytest.raises(Problem):
        asyncio.run(runner.run(hw, progress, "gw-1"))
    assert [r.operation["next"] for r in records] == [runner.BATCH]
    kafka_up["up"] = True
    again = Progress.from_record(records[-1])  # what a gateway taking over reads
    asyncio.run(runner.run(hw, again, "gw-2"))
    assert [r.operation["next"] for r in records] == [50, 100, 120]
    assert records[-1].state == "done"
    assert records[-1].operation["counts"] == {"done": 119, "skipped": 1, "failed": 0}
    assert set(acted) == set(targets)
    # Acted on again: only targets of the batch the first run had not recorded (the
    # actions are idempotent per target); none of the recorded batch.
    twice = {w for w in acted if acted.count(w) > 1}
    assert twice <= set(targets[50:100]) and "wf-75" not in twice
    assert all(acted.count(w) == 1 for w in targets[:50] + targets[100:])
